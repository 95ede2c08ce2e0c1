"""Run worlds: walk the dates in time order, settle at maturity, record what every method did.

Every method of a world sees the same retrieved experiences and the same
draft draws (common random numbers), and a date's outcome reaches a method
only once that date has matured (its maturity session is at or before the
current decision's session). A world's result depends only on its spec, so
results are identical whatever the number of workers or the scheduler.

Methods never see each other, so a world is run method by method: a
:class:`~backtest.methods.base.Walk` scores every date's drafts, reference
and equal weight once, each method walks the calendar (or computes its
dates at once), and every method's books are scored together at the end.
A pool's task is the worlds of one calendar (a PlantedMem world under each
investor), so a worker reuses what they share.
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
from backtest.methods.base import HALF, Method, Scoring, Walk
from backtest.methods.cohort import Cohort, Lane, learning_key, serves
from backtest.methods.registry import (
    BUDGETED,
    MEMTRIAL_VARIANTS,
    METHOD_IDS,
    REAL_METHOD_IDS,
    build_methods,
    memtrial_config,
)
from backtest.methods.replay import replays
from backtest.plantedmem import PlantedMemWorld
from backtest.world import World
from memtrial.credit.design import odd_half
from memtrial.drafting.drafts import AnalogicalDrafter, Drafter
from memtrial.engine.config import EngineConfig, default_setting
from memtrial.errors import ConfigError, InputError, MemtrialError
from memtrial.outcomes.mandates import INVESTORS, nav_paths_by_date, utilities_by_date

__all__ = ["DrafterSpec", "WorldSpec", "calendar_key", "run_group", "run_many", "run_world"]

_MARKETS: dict[bool, Market] = {}
_WORLDS: dict[tuple[str, int, bool], PlantedMemWorld] = {}

# LLM draft calls per decision of the methods that do not count their own (method 4.11): every call a
# method causes counts, drafts made only to learn included; "R" stands for the world's reference
DRAFT_CALLS: dict[str, tuple[int, bool]] = {  # (draft calls, uses the reference)
    "equal_weight": (0, False),
    "min_variance": (0, False),
    "reference": (0, True),
    "no_memory": (1, False),
    "all_four": (1, False),
    "similarity_top2": (1, False),
    "self_consistency": (8, False),
    "draft_mean": (8, False),
    "hedge": (8, False),
    "outcome_credit": (1, False),
    "uplift_credit": (1, True),  # credits the chosen draft's utility minus the reference's
    "counterfactual_argmax": (8, False),  # learns from the eight designed drafts
    "finmem": (1, False),
    "expel": (1, False),
    "reflexion": (1, False),
    "oracle": (1, True),  # knows the types; the reference where no subset helps
    "q_retrieval": (1, False),  # the draft of the four it retrieved
    "oracle_retrieval": (1, True),  # the draft of the useful ones it retrieved, or the reference
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
    draft_budget: float | None = (
        None  # the run's draft budget for BUDGETED's variants (method 4.11; None: whole design)
    )


def market_for(synthetic: bool) -> Market:
    if synthetic not in _MARKETS:
        _MARKETS[synthetic] = Market.synthetic() if synthetic else Market.from_data()
    return _MARKETS[synthetic]


def _setting(method_id: str, name: str) -> Any:
    """A MemTrial variant's setting: its own, else EngineConfig's default (what its engine runs)."""
    return MEMTRIAL_VARIANTS[method_id].get(name, default_setting(name))


def reference_draws(method_id: str, reference_calls: int, draft_budget: float | None = None) -> int:
    """The draws of the world's reference among ``method_id``'s draft calls per decision: ``reference_calls``
    when the method uses the world's reference, else 0. A MemTrial variant anchored on its own memory-free
    draft, or at a draft budget in a world whose reference costs calls (it then anchors on its own), uses
    none: that draft is among its own calls. draft_budget: the run's budget for the variants of ``BUDGETED``."""
    if method_id.startswith("memtrial"):
        settings = MEMTRIAL_VARIANTS[method_id]
        budget = settings.get("draft_budget", draft_budget if method_id in BUDGETED else None)
        own = _setting(method_id, "reference") == "memory_free" or budget is not None
        return 0 if own else reference_calls
    base = method_id.removesuffix("_anchored")
    _, uses_reference = DRAFT_CALLS[base]
    return reference_calls if uses_reference or base != method_id else 0


def draft_calls(method: Method, reference_calls: int) -> float:
    """Mean LLM draft calls per decision ``method`` causes in a world whose reference costs ``reference_calls``."""
    counted = getattr(method, "draft_calls", None)
    if counted is not None:
        measured = counted(reference_calls)
        if measured is not None:
            return float(measured)
    if method.id.startswith("memtrial"):  # a replayed variant: its whole design at every decision, and the reference
        design = _setting(method.id, "design")
        runs = 16 if design == "full" else 8
        if _setting(method.id, "reference") == "memory_free":  # its own memory-free draft, a ninth beside the odd half
            return float(runs + int(design == "fold"))
        return float(runs + reference_calls)
    base = method.id.removesuffix("_anchored")
    calls, uses_reference = DRAFT_CALLS[base]
    anchored = base != method.id  # an anchored baseline mixes its proposal with the reference
    return float(calls + (reference_calls if uses_reference or anchored else 0))


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


def _planted_world(spec: WorldSpec) -> PlantedMemWorld:
    """A PlantedMem world on the loaded market, built once per (regime, seed) in a process: the
    worlds of one calendar under several investors are the same world (it holds no gamma)."""
    key = (spec.regime, spec.seed, spec.synthetic_market)
    world = _WORLDS.pop(key, None) or PlantedMemWorld(market_for(spec.synthetic_market), spec.regime, spec.seed)
    _WORLDS[key] = world
    while len(_WORLDS) > 8:
        _WORLDS.pop(next(iter(_WORLDS)))
    return world


def _make_world(spec: WorldSpec, market: Any, method_ids: list[str]) -> tuple[World, Drafter | None]:
    if spec.env == "plantedmem":
        return (PlantedMemWorld(market, spec.regime, spec.seed) if market is not None else _planted_world(spec)), None
    from backtest.realdata import RealWorld, load_setting

    setting = (market or load_setting(spec.env)).truncated(spec.warmup_dates, spec.test_dates)
    drafter = make_drafter(spec, setting.scale_pp)
    try:
        world = RealWorld(
            setting,
            spec.investor,
            drafter,
            full_design=drafted_masks(method_ids, spec.draft_budget),
            self_consistency="self_consistency" in method_ids,
        )
    except BaseException:
        _close(drafter)
        raise
    return world, drafter


def drafted_masks(method_ids: Sequence[str], draft_budget: float | None = None) -> list[int]:
    """The subsets a real-data world drafts on every date for ``method_ids``: the half fraction, the odd
    half for a variant on it, every subset for the full design or a draft budget (exploiting plans may
    act on any subset). A subset's draft is keyed by its mask, so adding subsets changes none of the others."""
    masks = set(HALF)
    for method_id in method_ids:
        settings = MEMTRIAL_VARIANTS.get(method_id)
        if settings is None:
            continue
        budget = settings.get("draft_budget", draft_budget if method_id in BUDGETED else None)
        design = _setting(method_id, "design")
        if design == "full" or budget is not None:
            return list(range(16))
        if design == "fold":
            masks |= set(odd_half(4))
    return sorted(masks)


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


def _turnover(
    previous: tuple[tuple[str, ...], np.ndarray] | None, current: tuple[tuple[str, ...], np.ndarray]
) -> float | None:
    """Half the L1 change between two books (names, weights), summed over the sorted union of names."""
    if previous is None:
        return None
    (old_names, old), (names, new) = previous, current
    if old_names == names and list(names) == sorted(names):  # the usual case: one universe, already in order
        return 0.5 * float(sum(abs(x) for x in (new - old).tolist()))
    before, after = dict(zip(old_names, old.tolist(), strict=True)), dict(zip(names, new.tolist(), strict=True))
    union = sorted(set(before) | set(after))  # a fixed order: the sum must not depend on string hashing
    return 0.5 * float(sum(abs(after.get(a, 0.0) - before.get(a, 0.0)) for a in union))


def _turnovers(universes: list[tuple[str, ...]], books: Sequence[np.ndarray], scored: list[bool]) -> list[float]:
    """Turnover into each scored date from the book held before it (the first date has none)."""
    if len(books) < 2:
        return []
    if len(set(universes)) == 1 and list(universes[0]) == sorted(
        universes[0]
    ):  # the usual case: one universe, in order
        changes = 0.5 * np.abs(np.diff(np.array(books), axis=0)).sum(axis=1)
        return [float(c) for c, counted in zip(changes, scored[1:], strict=True) if counted]
    out = []
    for date in range(1, len(books)):
        if scored[date]:
            change = _turnover((universes[date - 1], books[date - 1]), (universes[date], books[date]))
            assert change is not None
            out.append(change)
    return out


def run_world(
    spec: WorldSpec, market: Any = None, perturb: tuple[int, int, float] | None = None, keep_choices: bool = False
) -> dict[str, Any]:
    """Run one world; per method: utilities (pp) and returns of the scored dates, gate-open
    rate, turnover, Sharpe-like ratio, drawdown and (PlantedMem) value recovery.

    market: the PlantedMem :class:`Market`, or the real-data ``Setting``, to use
    instead of the loaded one.
    perturb: (date, asset, factor) multiplies that asset's realised prices of
    that date's outcome (for look-ahead tests); keep_choices adds every
    method's weights and gate state per date and its final values to the result.
    """
    prepared = _prepare(spec, market, perturb)
    try:
        return _run(prepared, keep_choices)
    finally:
        _close(prepared.drafter)


@dataclass
class _Prepared:
    """A world ready to run: its methods' ids, its scoring, the dates it presents and their realised prices."""

    spec: WorldSpec
    world: World
    drafter: Drafter | None
    method_ids: list[str]
    scoring: Scoring
    presented: list[DateContext]
    rels: list[np.ndarray]


def _prepare(spec: WorldSpec, market: Any, perturb: tuple[int, int, float] | None) -> _Prepared:
    default_ids = METHOD_IDS if spec.env == "plantedmem" else REAL_METHOD_IDS
    method_ids = list(spec.methods) if spec.methods else list(default_ids)
    world, drafter = _make_world(spec, market, method_ids)
    try:
        presented = [c for c in (world.context(date) for date in range(world.n_dates)) if c is not None]
    except BaseException:
        _close(drafter)
        raise

    def realised(context: DateContext) -> np.ndarray:
        rel = world.outcome(context.index)
        if perturb is not None and perturb[0] == context.index:
            rel = rel.copy()
            rel[:, perturb[1]] *= perturb[2]
        return np.asarray(rel)

    rels = [realised(context) for context in presented]
    return _Prepared(spec, world, drafter, method_ids, Scoring(gamma=INVESTORS[spec.investor].gamma), presented, rels)


def _cohorts(prepared: Sequence[_Prepared]) -> list[dict[str, Method]]:
    """Per world, the MemTrial variants a cohort walks (:mod:`backtest.methods.cohort`): one cohort walks every
    world of ``prepared`` that asks for variants learning alike (:func:`~backtest.methods.cohort.learning_key`)
    on one calendar, their worlds' steps computed together (each world's result is what it gets alone)."""
    groups: dict[tuple[object, ...], tuple[dict[str, EngineConfig], list[int]]] = {}
    for index, ready in enumerate(prepared):
        spec = ready.spec
        if spec.engine != "replay" or spec.value_model == "bayes":
            continue
        dates = tuple((c.session, c.maturity) for c in ready.presented)
        for method_id in ready.method_ids:
            if method_id not in MEMTRIAL_VARIANTS:
                continue
            config = memtrial_config(method_id, ready.world, ready.scoring, spec.draft_budget)
            if replays(config) or not serves(config):
                continue
            configs, members = groups.setdefault((learning_key(config), dates), ({}, []))
            configs[method_id] = config
            if not members or members[-1] != index:
                members.append(index)
    served: list[dict[str, Method]] = [{} for _ in prepared]
    for configs, members in groups.values():
        lanes = [Lane(prepared[i].presented, prepared[i].rels.__getitem__, prepared[i].world.features) for i in members]
        cohort = Cohort(configs, prepared[members[0]].scoring, lanes)
        for method_id in configs:
            for index, member in zip(members, cohort.members(method_id), strict=True):
                if method_id in prepared[index].method_ids:
                    served[index][method_id] = member
    return served


def _run(prepared: _Prepared, keep_choices: bool, served: dict[str, Method] | None = None) -> dict[str, Any]:
    spec, world, drafter, method_ids = prepared.spec, prepared.world, prepared.drafter, prepared.method_ids
    scoring, presented, rels = prepared.scoring, prepared.presented, prepared.rels
    methods = build_methods(
        world,
        scoring,
        spec.seed,
        method_ids,
        spec.value_model,
        spec.engine,
        presented,
        rels.__getitem__,
        spec.draft_budget,
        served,
    )
    if not any(c.scored for c in presented):  # nothing to average: no figures of NaN
        reasons = "; ".join(e["reason"] for e in _exclusions(world.setting, presented))
        raise InputError(f"no test date was scored, so there is nothing to report ({reasons})", field="test_dates")
    walk = Walk(presented, rels, scoring, world.mandate_projection)
    trajectories = {m.id: walk.trajectory(m) for m in methods}
    scored = [c.scored for c in presented]
    utilities, returns = _scores(walk, [trajectories[m.id].weights for m in methods])
    universes = [c.assets or tuple(str(i) for i in range(len(c.equal))) for c in presented]
    turnover = {m.id: _turnovers(universes, trajectories[m.id].weights, scored) for m in methods}
    opens: dict[str, np.ndarray] = {}
    dial: dict[str, list[float]] = {}
    counted = np.array(scored, dtype=bool)
    for m in methods:
        trajectory = trajectories[m.id]
        if trajectory.opens is not None and trajectory.trust_weights is not None:
            opens[m.id] = trajectory.opens[counted]
            weights = trajectory.trust_weights[counted]
            dial[m.id] = weights[~np.isnan(weights)].tolist()
    types = world.types
    learned = next((m.values() for m in methods if m.id == "memtrial"), None)
    periods = 12.0 if world.setting is None else world.setting.periods_per_year
    usage = getattr(drafter, "usage", None)
    return {
        "spec": asdict(spec),
        "dates": [c.label for c in presented if c.scored],
        "presented_dates": world.presented,
        "exclusions": _exclusions(world.setting, presented),
        "drafter_usage": None if usage is None else usage.to_dict(),
        "choices": {m.id: [w.tolist() for w in trajectories[m.id].weights] for m in methods} if keep_choices else None,
        "trust_states": {m.id: trajectories[m.id].states() for m in methods if m.uses_gate} if keep_choices else None,
        "values": {m.id: m.values() for m in methods} if keep_choices else None,
        "learned_values": None
        if learned is None or types is None
        else {"types": types.tolist(), "values": [learned.get(e, 0.0) for e in range(len(types))]},
        "methods": {
            m.id: {
                "utilities_pp": utilities[row],
                "returns": returns[row],
                "mean_utility_pp": float(np.mean(utilities[row])),
                "open_rate": float(np.mean(opens[m.id])) if m.id in opens and opens[m.id].size else None,
                "trust_weights": dial[m.id] if dial.get(m.id) else None,
                "value_recovery": _recovery(m.values(), types),
                "turnover": float(np.mean(turnover[m.id])) if turnover[m.id] else None,
                "draft_calls_per_decision": draft_calls(m, world.reference_calls),
                "reference_calls_per_decision": reference_draws(m.id, world.reference_calls, spec.draft_budget),
                **_wealth_stats(returns[row], periods),
                **curation_metrics(world, m, presented, utilities[row], _retrieval_width(m.id, world, scoring, spec)),
            }
            for row, m in enumerate(methods)
        },
    }


def _retrieval_width(method_id: str, world: World, scoring: Scoring, spec: WorldSpec) -> int | None:
    """How many experiences a MemTrial variant retrieves in this world (a budget's saturated design takes
    the wider retrieval), None for other methods."""
    if method_id not in MEMTRIAL_VARIANTS:
        return None
    return memtrial_config(method_id, world, scoring, spec.draft_budget).k


def curation_metrics(
    world: World,
    method: Method,
    presented: Sequence[DateContext],
    utilities: Sequence[float],
    width: int | None = None,
) -> dict[str, Any]:
    """A curation regime's figures of one method in one world (method 5; none elsewhere).

    mean_utility_after_event_pp: the mean utility of the scored decisions from the event (the
    injection or the drift) on. poison_retrieved_share: the share of the retrieval slots of the
    decisions from the injection on that poisoned experiences take (methods that retrieve; a MemTrial
    variant that acts on the world's retrieval takes the world's: its top ``width``, the wider retrieval
    where a budget's design screens more than the top four). For a MemTrial variant with quarantine on
    (``method.quarantining``; its ``quarantines``): false_quarantine, whether any experience was
    quarantined whose true type at the decision whose settlement quarantined it was >= 0 (in every
    regime: the nulls have no event);
    quarantine_delay, the decisions from the injection until every poisoned experience is quarantined
    (a settlement quarantines before the next decision: position + 1 - event), or the decisions left
    if one never is.
    """
    out: dict[str, Any] = {}
    event = getattr(world, "event", None)
    poisoned = {int(e) for e in getattr(world, "poisoned", ())}
    type_by_date = getattr(world, "type_by_date", None)
    if event is not None:
        after = [u for c, u in zip((c for c in presented if c.scored), utilities, strict=True) if c.index >= event]
        out["mean_utility_after_event_pp"] = float(np.mean(after))
    retrievals = getattr(method, "retrievals", None)
    if not retrievals and method.id.startswith("memtrial"):
        retrievals = [_world_retrieval(c, width) for c in presented]  # a replayed variant takes the world's
    if poisoned and event is not None and retrievals:
        slots = [e for c, picked in zip(presented, retrievals, strict=True) if c.index >= event for e in picked]
        out["poison_retrieved_share"] = float(np.mean([e in poisoned for e in slots])) if slots else 0.0
    if not getattr(method, "quarantining", False) or type_by_date is None:
        return out
    quarantines: list[tuple[int, int]] = method.quarantines  # type: ignore[attr-defined]
    out["false_quarantine"] = any(type_by_date[position][e] >= 0 for e, position in quarantines)
    out["quarantined"] = [[e, position] for e, position in quarantines]
    if poisoned and event is not None:
        when = {e: position for e, position in quarantines if e in poisoned}
        n_dates = len(presented)
        out["quarantine_delay"] = (
            float(max(when.values()) + 1 - event) if set(when) == poisoned else float(n_dates - event)
        )
    return out


def _exclusions(setting: Any, presented: Sequence[DateContext]) -> list[dict[str, str]]:
    """A real-data run's exclusions: the setting's, and the test dates no method was presented (a date is
    presented once four experiences have matured, so a run shortened to few warm-up dates loses its first)."""
    if setting is None:
        return []
    notes = [e.to_dict() for e in setting.exclusions]
    missing = setting.n_test - sum(1 for c in presented if c.scored)
    if missing > 0:
        notes.append(
            {
                "what": "test dates",
                "reason": f"the first {missing} of {setting.n_test} test dates were not presented: fewer than four "
                "experiences had matured by then (the memory bank fills from matured decisions; give more warm-up "
                "dates)",
                "dates": "",
            }
        )
    return notes


def _world_retrieval(context: DateContext, width: int | None) -> tuple[int, ...]:
    """The world's retrieval a variant retrieving ``width`` acts on (the replay's rule)."""
    if width is not None and width > len(context.retrieved) and context.wide_retrieved:
        return context.wide_retrieved[:width]
    return context.retrieved


def _scores(walk: Walk, books: list[Sequence[np.ndarray]]) -> tuple[list[list[float]], list[list[float]]]:
    """Each method's utility (pp) and return on every scored date, all methods and dates of one
    number of assets scored in one batch (each row exactly as alone)."""
    utilities: list[list[float]] = [[] for _ in books]
    returns: list[list[float]] = [[] for _ in books]
    positions = [p for p, c in enumerate(walk.contexts) if c.scored]
    groups: dict[int, list[int]] = {}
    for position in positions:
        groups.setdefault(walk.contexts[position].reference.shape[0], []).append(position)
    by_position: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for members in groups.values():
        if all(isinstance(book, np.ndarray) for book in books):
            picked = np.stack([book[members] for book in books], axis=1)  # type: ignore[call-overload]  # (D, methods, n)
        else:
            picked = np.array([[book[p] for book in books] for p in members])
        rel = np.array([walk.rels[p] for p in members])
        previous = np.array([walk.contexts[p].previous for p in members])
        values = utilities_by_date(
            picked / picked.sum(axis=2, keepdims=True), rel, previous, walk.scoring.gamma, walk.scoring.fee_bp
        )
        gains = nav_paths_by_date(picked, rel, previous, walk.scoring.fee_bp)[:, :, -1] - 1.0
        for row, position in enumerate(members):
            by_position[position] = (values[row], gains[row])
    for position in positions:  # in date order
        values, gains = by_position[position]
        for method, (value, gain) in enumerate(zip(values.tolist(), gains.tolist(), strict=True)):
            utilities[method].append(100.0 * value)
            returns[method].append(gain)
    return utilities, returns


@dataclass
class Progress:
    total: int
    done: int = 0
    started: float = field(default_factory=time.perf_counter)


def run_many(
    specs: Sequence[WorldSpec],
    workers: int = 1,
    scheduler: str | None = None,
    on_done: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Results in the order of ``specs``: in this process (workers=1), a local process
    pool, or a Dask cluster at ``scheduler``."""
    results: list[dict[str, Any] | None] = [None] * len(specs)
    for index, result in _iterate(specs, workers, scheduler):
        results[index] = result
        if on_done is not None:
            on_done(index)
    return [r for r in results if r is not None]


def calendar_key(spec: WorldSpec) -> tuple[object, ...]:
    """Worlds with one key share a calendar (PlantedMem: one world under several investors); a
    worker that runs them one after another reuses what they share (the world, its learners'
    eigendecompositions)."""
    if spec.env == "plantedmem":
        return (spec.env, spec.regime, spec.seed, spec.synthetic_market)
    return (spec.env, spec.regime, spec.seed, spec.investor)


def run_group(specs: Sequence[WorldSpec]) -> list[dict[str, Any]]:
    """Run worlds in this process (one task of a pool): prepared together, each MemTrial variant that a cohort
    walks walked in all of them at once (:func:`_cohorts`), then each world run in turn."""
    prepared: list[_Prepared] = []
    try:
        for spec in specs:
            prepared.append(_prepare(spec, None, None))
        served = _cohorts(prepared)
        return [_run(ready, False, methods) for ready, methods in zip(prepared, served, strict=True)]
    finally:
        for ready in prepared:
            _close(ready.drafter)


#: the PlantedMem calendars (a world under every investor asked for) one task of a run holds: their worlds'
#: cohorts walk together, and a pool's workers still share the run's tasks evenly
CALENDARS_PER_TASK = 8


def _groups(specs: Sequence[WorldSpec]) -> list[list[int]]:
    """The run's tasks: the worlds of one calendar together, PlantedMem's calendars of one regime in tasks of
    :data:`CALENDARS_PER_TASK`."""
    calendars: dict[tuple[object, ...], list[int]] = {}
    for index, spec in enumerate(specs):
        calendars.setdefault(calendar_key(spec), []).append(index)
    tasks: list[list[int]] = []
    pending: dict[tuple[object, ...], list[list[int]]] = {}
    for key, members in calendars.items():
        if key[0] != "plantedmem":
            tasks.append(members)
            continue
        bucket = pending.setdefault((key[1], key[3]), [])  # (regime, synthetic market)
        bucket.append(members)
        if len(bucket) == CALENDARS_PER_TASK:
            tasks.append([index for calendar in bucket for index in calendar])
            bucket.clear()
    tasks.extend([index for calendar in bucket for index in calendar] for bucket in pending.values() if bucket)
    return tasks


class SchedulerError(MemtrialError):
    """The Dask scheduler a run was given cannot be reached."""


def _iterate(specs: Sequence[WorldSpec], workers: int, scheduler: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    groups = _groups(specs)
    if scheduler is not None:
        from distributed import Client, as_completed

        try:
            client = Client(scheduler)  # type: ignore[no-untyped-call]
        except OSError as error:  # only the connection: a world's own OSError is the world's
            raise SchedulerError(f"--scheduler {scheduler}: cannot reach it ({error})", field="scheduler") from None
        with client:
            futures = {client.submit(run_group, [specs[i] for i in group], pure=False): group for group in groups}
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                yield from zip(futures[future], future.result(), strict=True)
        return
    if workers <= 1:
        for group in groups:
            yield from zip(group, run_group([specs[i] for i in group]), strict=True)
        return
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures import as_completed as completed

    # one BLAS/OpenMP thread per worker: several workers with several threads each fight over the cores
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

    # spawn, not fork: a parent that has loaded JAX (or any threaded library) must not be forked
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = {pool.submit(run_group, [specs[i] for i in group]): group for group in groups}
        for future in completed(pending):
            yield from zip(pending[future], future.result(), strict=True)
