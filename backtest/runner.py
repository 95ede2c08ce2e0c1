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
from pathlib import Path
from typing import Any

import numpy as np

from backtest.context import DateContext
from backtest.market import Market
from backtest.methods.base import HALF, Outcome, Scoring
from backtest.methods.registry import METHOD_IDS, REAL_METHOD_IDS, build_methods
from backtest.plantedmem import PlantedMemWorld
from memtrial.drafting import AnalogicalDrafter, Drafter
from memtrial.errors import ConfigError
from memtrial.settle import INVESTORS, nav_paths_by_date, utilities_by_date

__all__ = ["DrafterSpec", "WorldSpec", "run_many", "run_world"]

_MARKETS: dict[bool, Market] = {}

# draft calls a method needs per decision (an LLM call each with the litellm drafter)
DRAFT_CALLS: dict[str, int] = {
    "equal_weight": 0,
    "min_variance": 0,
    "reference": 8,
    "no_memory": 1,
    "all_four": 1,
    "similarity_top2": 1,
    "self_consistency": 8,
    "draft_mean": 8,
    "hedge": 8,
    "memtrial_full": 16,
    "oracle": 8,
}


@dataclass(frozen=True, slots=True)
class DrafterSpec:
    """How a real-data world drafts: ``analogical`` (offline) or ``litellm`` (model, api_base, cache)."""

    kind: str = "analogical"
    model: str | None = None
    api_base: str | None = None
    cache: str | None = None
    offline: bool = False
    json_schema: bool = False
    clip_negative: bool = False
    timeout: float = 60.0
    temperature: float = 0.7


@dataclass(frozen=True, slots=True)
class WorldSpec:
    """One world. ``env`` is plantedmem (``regime`` names the regime) or a real-data setting
    (``regime`` repeats the setting's name)."""

    regime: str
    investor: str
    seed: int
    synthetic_market: bool = False
    methods: tuple[str, ...] | None = None
    value_model: str = "empirical"
    env: str = "plantedmem"
    drafter: DrafterSpec = field(default_factory=DrafterSpec)
    warmup_dates: int | None = None
    test_dates: int | None = None
    engine: str = "replay"


def market_for(synthetic: bool) -> Market:
    if synthetic not in _MARKETS:
        _MARKETS[synthetic] = Market.synthetic() if synthetic else Market.from_data()
    return _MARKETS[synthetic]


def draft_calls(method_id: str) -> int:
    if method_id.startswith("memtrial"):
        return DRAFT_CALLS.get(method_id, 8)
    return DRAFT_CALLS.get(method_id.removesuffix("_anchored"), 1)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of their ranks."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    return (upper - (counts - 1) / 2.0)[inverse]


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation with average ranks for ties (both inputs must vary)."""
    return float(np.corrcoef(_average_ranks(x), _average_ranks(y))[0, 1])


def _recovery(values: dict[int, float] | None, types: np.ndarray | None) -> float | None:
    if not values or types is None or len(set(types.tolist())) < 2:
        return None
    ids = sorted(values)
    estimates = np.array([values[e] for e in ids])
    truth = types[ids]
    if np.ptp(estimates) == 0 or np.ptp(truth) == 0:
        return None
    return _spearman(estimates, truth)


def make_drafter(spec: WorldSpec, scale_pp: float) -> Drafter:
    drafter = spec.drafter
    if drafter.kind == "analogical":
        return AnalogicalDrafter(spec.seed, scale_pp=scale_pp)
    if drafter.kind == "litellm":
        from backtest.llm import LiteLLMDrafter

        if not drafter.model:
            raise ConfigError("the litellm drafter needs a model", field="model")
        return LiteLLMDrafter(
            drafter.model,
            api_base=drafter.api_base,
            cache=Path(drafter.cache) if drafter.cache else None,
            offline=drafter.offline,
            json_schema=drafter.json_schema,
            clip_negative=drafter.clip_negative,
            timeout=drafter.timeout,
            temperature=drafter.temperature,
        )
    raise ConfigError(f"drafter must be analogical or litellm, got {drafter.kind!r}", field="drafter")


def _make_world(spec: WorldSpec, market: Any, method_ids: list[str]) -> tuple[Any, Drafter | None]:
    if spec.env == "plantedmem":
        return PlantedMemWorld(market or market_for(spec.synthetic_market), spec.regime, spec.seed), None
    from backtest.realdata import RealWorld, load_setting

    setting = (market or load_setting(spec.env)).truncated(spec.warmup_dates, spec.test_dates)
    drafter = make_drafter(spec, setting.scale_pp)
    try:
        world = RealWorld(
            setting, spec.investor, drafter, full_design="memtrial_full" in method_ids, self_consistency="self_consistency" in method_ids
        )
    except BaseException:
        _close(drafter)
        raise
    return world, drafter


def _close(drafter: Drafter | None) -> None:
    close = getattr(drafter, "close", None)
    if close is not None:
        close()


def _wealth_stats(returns: list[float], periods_per_year: float) -> dict[str, float | None]:
    if not returns:
        return {"sharpe": None, "max_drawdown": None, "final_wealth": None}
    values = np.asarray(returns)
    wealth = np.cumprod(1.0 + values)
    peak = np.maximum.accumulate(np.concatenate([[1.0], wealth]))[1:]
    spread = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return {
        # a book whose returns barely move (all cash, say) has no meaningful ratio
        "sharpe": float(values.mean() / spread * np.sqrt(periods_per_year)) if spread > 1e-6 else None,
        "max_drawdown": float(np.max(1.0 - wealth / peak)),
        "final_wealth": float(wealth[-1]),
    }


def _turnover(previous: tuple[tuple[str, ...], np.ndarray] | None, current: tuple[tuple[str, ...], np.ndarray]) -> float | None:
    """Half the L1 change between two books (names, weights), summed over the sorted union of names."""
    if previous is None:
        return None
    (old_names, old), (names, new) = previous, current
    if old_names == names and list(names) == sorted(names):  # the usual case: one universe, already in order
        return 0.5 * float(sum(abs(x) for x in (new - old).tolist()))
    before, after = dict(zip(old_names, old.tolist(), strict=True)), dict(zip(names, new.tolist(), strict=True))
    union = sorted(set(before) | set(after))  # a fixed order: the sum must not depend on string hashing
    return 0.5 * float(sum(abs(after.get(a, 0.0) - before.get(a, 0.0)) for a in union))


def _turnovers(universes: list[tuple[str, ...]], books: list[np.ndarray], scored: list[bool]) -> list[float]:
    """Turnover into each scored date from the book held before it (the first date has none)."""
    if len(books) < 2:
        return []
    if len(set(universes)) == 1 and list(universes[0]) == sorted(universes[0]):  # the usual case: one universe, in order
        changes = 0.5 * np.abs(np.diff(np.array(books), axis=0)).sum(axis=1)
        return [float(c) for c, counted in zip(changes, scored[1:], strict=True) if counted]
    out = []
    for date in range(1, len(books)):
        if scored[date]:
            change = _turnover((universes[date - 1], books[date - 1]), (universes[date], books[date]))
            assert change is not None
            out.append(change)
    return out


def run_world(spec: WorldSpec, market: Any = None, perturb: tuple[int, int, float] | None = None, keep_choices: bool = False) -> dict[str, Any]:
    """Run one world; per method: utilities (pp) and returns of the scored dates, gate-open
    rate, turnover, Sharpe-like ratio, drawdown and (PlantedMem) value recovery.

    market: the PlantedMem :class:`Market`, or the real-data ``Setting``, to use
    instead of the loaded one.
    perturb: (date, asset, factor) multiplies that asset's realised prices of
    that date's outcome (for look-ahead tests); keep_choices adds every
    method's weights and gate state per date and its final values to the result.
    """
    default_ids = METHOD_IDS if spec.env == "plantedmem" else REAL_METHOD_IDS
    method_ids = list(spec.methods) if spec.methods else list(default_ids)
    world, drafter = _make_world(spec, market, method_ids)
    try:
        return _run(spec, world, drafter, method_ids, perturb, keep_choices)
    finally:
        _close(drafter)


def _run(
    spec: WorldSpec, world: Any, drafter: Drafter | None, method_ids: list[str], perturb: tuple[int, int, float] | None, keep_choices: bool
) -> dict[str, Any]:
    scoring = Scoring(gamma=INVESTORS[spec.investor].gamma)
    presented = [c for c in (world.context(date) for date in range(world.n_dates)) if c is not None]

    def realised(context: DateContext) -> np.ndarray:
        rel = world.outcome(context.index)
        if perturb is not None and perturb[0] == context.index:
            rel = rel.copy()
            rel[:, perturb[1]] *= perturb[2]
        return rel

    methods = build_methods(world, scoring, spec.seed, method_ids, spec.value_model, spec.engine, presented, lambda p: realised(presented[p]))
    utilities: dict[str, list[float]] = {m.id: [] for m in methods}
    returns: dict[str, list[float]] = {m.id: [] for m in methods}
    books: dict[str, list[np.ndarray]] = {m.id: [] for m in methods}
    universes: list[tuple[str, ...]] = []
    scored_dates: list[bool] = []
    opens: dict[str, list[bool]] = {m.id: [] for m in methods if m.uses_gate}
    pending: list[tuple[DateContext, dict[str, np.ndarray]]] = []
    choices: dict[str, list[list[float]]] = {m.id: [] for m in methods}
    trust_states: dict[str, list[tuple[bool, float | None, float | None]]] = {m.id: [] for m in methods if m.uses_gate}
    dial: dict[str, list[float]] = {m.id: [] for m in methods if m.uses_gate}
    labels: list[str] = []
    project = getattr(world, "project_onto_mandate", None)

    def settle(context: DateContext, chosen: dict[str, np.ndarray]) -> None:
        rel = realised(context)
        # rows nobody drafted (NaN) are scored as the reference; no method reads them
        drafts = np.where(np.isnan(context.drafts), context.reference, context.drafts)
        picked = np.array(list(chosen.values()))
        batch = np.vstack([drafts, context.reference, context.equal, drafts[HALF].mean(axis=0), picked])
        batch = batch / batch.sum(axis=1, keepdims=True)
        scores = utilities_by_date(batch[None], rel[None], context.previous[None], scoring.gamma, scoring.fee_bp)[0]
        gains = nav_paths_by_date(picked[None], rel[None], context.previous[None], scoring.fee_bp)[0, :, -1] - 1.0
        outcome = Outcome(context, rel, scores[:16], float(scores[16]), float(scores[17]), float(scores[18]))
        for method, value, gain in zip(methods, scores[19:], gains, strict=True):
            method.observe(outcome, chosen[method.id], float(value))
            if context.scored:
                utilities[method.id].append(100.0 * float(value))
                returns[method.id].append(float(gain))

    for context in presented:
        date = context.index
        while pending and pending[0][0].maturity <= context.session:
            settle(*pending.pop(0))
        chosen = {}
        universes.append(context.assets or tuple(str(i) for i in range(len(context.equal))))
        scored_dates.append(context.scored)
        for method in methods:
            weights = method.decide(context)
            if project is not None:
                weights = project(date, weights)
            chosen[method.id] = weights
            books[method.id].append(np.asarray(weights, dtype=np.float64))
            if keep_choices:
                choices[method.id].append(weights.tolist())
                if method.uses_gate:
                    trust_states[method.id].append((bool(method.last_open), getattr(method, "last_statistic", None), method.last_trust_weight))
            if method.uses_gate and context.scored:
                opens[method.id].append(bool(method.last_open))
                if method.last_trust_weight is not None:
                    dial[method.id].append(method.last_trust_weight)
        if context.scored:
            labels.append(context.label)
        pending.append((context, chosen))
    for item in pending:
        settle(*item)
    turnover = {m.id: _turnovers(universes, books[m.id], scored_dates) for m in methods}
    types = getattr(world, "types", None)
    learned = next((m.values() for m in methods if m.id == "memtrial"), None)
    periods = getattr(getattr(world, "setting", None), "periods_per_year", 12.0)
    usage = getattr(drafter, "usage", None)
    return {
        "spec": asdict(spec),
        "dates": labels,
        "presented_dates": getattr(world, "presented", world.n_dates),
        "exclusions": [e.to_dict() for e in getattr(getattr(world, "setting", None), "exclusions", ())],
        "drafter_usage": None if usage is None else usage.to_dict(),
        "choices": choices if keep_choices else None,
        "trust_states": trust_states if keep_choices else None,
        "values": {m.id: m.values() for m in methods} if keep_choices else None,
        "learned_values": None if learned is None or types is None else {"types": types.tolist(), "values": [learned.get(e, 0.0) for e in range(len(types))]},
        "methods": {
            m.id: {
                "utilities_pp": utilities[m.id],
                "returns": returns[m.id],
                "mean_utility_pp": float(np.mean(utilities[m.id])),
                "open_rate": float(np.mean(opens[m.id])) if m.id in opens and opens[m.id] else None,
                "trust_weights": dial[m.id] if dial.get(m.id) else None,
                "value_recovery": _recovery(m.values(), types),
                "turnover": float(np.mean(turnover[m.id])) if turnover[m.id] else None,
                "draft_calls_per_decision": draft_calls(m.id),
                **_wealth_stats(returns[m.id], periods),
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
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed as completed

    # one BLAS/OpenMP thread per worker: several workers with several threads each fight over the cores
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

    # spawn, not fork: a parent that has loaded JAX (or any threaded library) must not be forked
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_world, spec): i for i, spec in enumerate(specs)}
        for future in completed(futures):
            yield futures[future], future.result()
