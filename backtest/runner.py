"""Run worlds: walk the dates in time order, settle at maturity, record what every method did.

Every method of a world sees the same retrieved experiences and the same
draft draws (common random numbers), and a date's outcome reaches a method
only once that date has matured (its maturity session is at or before the
current decision's session). A world's result depends only on its spec, so
results are identical whatever the number of workers or the scheduler.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from backtest.market import Market
from backtest.methods.base import Outcome, Scoring
from backtest.methods.registry import build_methods
from backtest.plantedmem import DateContext, PlantedMemWorld
from memtrial.settle import INVESTORS

__all__ = ["WorldSpec", "run_many", "run_world"]

_MARKETS: dict[bool, Market] = {}


@dataclass(frozen=True, slots=True)
class WorldSpec:
    regime: str
    investor: str
    seed: int
    synthetic_market: bool = False
    methods: tuple[str, ...] | None = None
    value_model: str = "empirical"


def market_for(synthetic: bool) -> Market:
    if synthetic not in _MARKETS:
        _MARKETS[synthetic] = Market.synthetic() if synthetic else Market.from_data()
    return _MARKETS[synthetic]


def _recovery(values: dict[int, float] | None, types: np.ndarray) -> float | None:
    if not values or len(set(types.tolist())) < 2:
        return None
    ids = sorted(values)
    estimates = np.array([values[e] for e in ids])
    truth = types[ids]
    if np.ptp(estimates) == 0 or np.ptp(truth) == 0:
        return None
    return float(spearmanr(estimates, truth).statistic)


def run_world(
    spec: WorldSpec, market: Market | None = None, perturb: tuple[int, int, float] | None = None, keep_choices: bool = False
) -> dict[str, Any]:
    """Run one world; per method: utilities (pp) of the scored dates, gate-open rate, value recovery.

    perturb: (date, asset, factor) multiplies that asset's realised prices of
    that date's outcome (for look-ahead tests); keep_choices adds every
    method's weights per date to the result.
    """
    market = market or market_for(spec.synthetic_market)
    world = PlantedMemWorld(market, spec.regime, spec.seed)
    scoring = Scoring(gamma=INVESTORS[spec.investor].gamma, previous=np.full(world.n_assets, 1.0 / world.n_assets))
    methods = build_methods(world, scoring, spec.seed, list(spec.methods) if spec.methods else None, spec.value_model)
    utilities: dict[str, list[float]] = {m.id: [] for m in methods}
    opens: dict[str, list[bool]] = {m.id: [] for m in methods if m.uses_gate}
    equal = np.full(world.n_assets, 1.0 / world.n_assets)
    pending: list[tuple[DateContext, dict[str, np.ndarray]]] = []
    choices: dict[str, list[list[float]]] = {m.id: [] for m in methods}

    def settle(context: DateContext, chosen: dict[str, np.ndarray]) -> None:
        rel = world.outcome(context.index)
        if perturb is not None and perturb[0] == context.index:
            rel = rel.copy()
            rel[:, perturb[1]] *= perturb[2]
        batch = np.vstack([context.drafts, context.reference, equal, *chosen.values()])
        scores = scoring.utility(batch, rel)
        outcome = Outcome(context, rel, scores[:16], float(scores[16]), float(scores[17]))
        for method, value in zip(methods, scores[18:], strict=True):
            method.observe(outcome, chosen[method.id], float(value))
            if context.scored:
                utilities[method.id].append(100.0 * float(value))

    for date in range(world.n_dates):
        context = world.context(date)
        while pending and pending[0][0].maturity <= context.session:
            settle(*pending.pop(0))
        chosen = {}
        for method in methods:
            chosen[method.id] = method.decide(context)
            if keep_choices:
                choices[method.id].append(chosen[method.id].tolist())
            if method.uses_gate and context.scored:
                opens[method.id].append(bool(method.last_open))
        pending.append((context, chosen))
    for item in pending:
        settle(*item)
    learned = next((m.values() for m in methods if m.id == "memtrial"), None)
    return {
        "spec": asdict(spec),
        "choices": choices if keep_choices else None,
        "learned_values": None if learned is None else {"types": world.types.tolist(), "values": [learned.get(e, 0.0) for e in range(len(world.types))]},
        "methods": {
            m.id: {
                "utilities_pp": utilities[m.id],
                "mean_utility_pp": float(np.mean(utilities[m.id])),
                "open_rate": float(np.mean(opens[m.id])) if m.id in opens else None,
                "value_recovery": _recovery(m.values(), world.types),
            }
            for m in methods
        },
    }


@dataclass
class Progress:
    total: int
    done: int = 0
    started: float = field(default_factory=time.perf_counter)


def run_many(
    specs: Sequence[WorldSpec], workers: int = 1, scheduler: str | None = None, on_done: Callable[[int], None] | None = None
) -> list[dict[str, Any]]:
    """Results in the order of ``specs``: in this process (workers=1), a local process
    pool, or a Dask cluster at ``scheduler``."""
    results: list[dict[str, Any] | None] = [None] * len(specs)
    for index, result in _iterate(specs, workers, scheduler):
        results[index] = result
        if on_done is not None:
            on_done(index)
    return [r for r in results if r is not None]


def _iterate(specs: Sequence[WorldSpec], workers: int, scheduler: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    if scheduler is not None:
        from distributed import Client, as_completed

        with Client(scheduler) as client:
            futures = {client.submit(run_world, spec, pure=False): i for i, spec in enumerate(specs)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        return
    if workers <= 1:
        for index, spec in enumerate(specs):
            yield index, run_world(spec)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed as completed

    # spawn, not fork: a parent that has loaded JAX (or any threaded library) must not be forked
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_world, spec): i for i, spec in enumerate(specs)}
        for future in completed(futures):
            yield futures[future], future.result()
