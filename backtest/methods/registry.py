"""Every method of the comparison, by stable id (display names live in the report).

A world gives the factories ``features`` (content features known up front),
``types`` (true experience types, PlantedMem only) and ``n_components`` (PCA
components the learner takes from embeddings; None when features are given).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import Method, Scoring
from backtest.methods.cohort import Cohort, Lane, learning_key, serves
from backtest.methods.credit import CounterfactualArgmax, ExpeL, FinMem, OutcomeCredit, Reflexion, UpliftCredit
from backtest.methods.memtrial_methods import Anchored, MemTrialMethod, Oracle
from backtest.methods.replay import families, replays
from backtest.methods.retrieval import OracleRetrieval, QRetrieval
from backtest.methods.simple import (
    DraftMean,
    DraftPick,
    EqualWeight,
    Hedge,
    MinimumVariance,
    Reference,
    SelfConsistency,
)
from backtest.world import World
from memtrial.action.budget import budget_gate
from memtrial.credit.design import DesignKind
from memtrial.curation import QuarantineConfig
from memtrial.engine.config import PAPER_RULE, ReferenceSource, default_setting
from memtrial.engine.lifecycle import EngineConfig
from memtrial.errors import ConfigError
from memtrial.trust.gate import GateConfig, GateTest

__all__ = [
    "FORECAST_METHODS",
    "ANCHORED_BASES",
    "BUDGETED",
    "CURATION_IDS",
    "CURATION_VARIANTS",
    "ENGINES",
    "FACTORIES",
    "FRONTIER_IDS",
    "KNOWN_IDS",
    "MEMTRIAL_VARIANTS",
    "METHOD_IDS",
    "PAPER",
    "REAL_METHOD_IDS",
    "build_methods",
    "memtrial_config",
]

Factory = Callable[[Any, Scoring, int], Method]

#: The default ``memtrial`` is EngineConfig's defaults (every setting a new engine and a new REST agent
#: take): the trust dial (method 4.8) on values learned from the raw same-day contrasts, over the odd half
#: fraction (every single experience drafted alone; chosen on the dev seeds), its closed share on the
#: reference (fallback ``ref``: the mean of the odd half's drafts, all memory-tilted, cost 1.2% of utility
#: against 1/N in PortBench; the dev seeds do not tell the two apart). ``memtrial_paper`` is the paper's rule
#: (binary prequential gate, date-centred values, the even half, the learnt mixture), spelled out so that it
#: and the ablations after it, each varying one setting of it, do not move with those defaults.
PAPER: dict[str, object] = dict(PAPER_RULE)
DIAL = {"action": "dial", "credit": "raw", "gate": GateConfig(test=GateTest.ANYTIME)}
MEMTRIAL_VARIANTS: dict[str, dict[str, object]] = {
    "memtrial": {},
    "memtrial_paper": PAPER,
    "memtrial_anytime": {**PAPER, "gate": GateConfig(test=GateTest.ANYTIME)},
    "memtrial_content": {**PAPER, "learner": "content"},
    "memtrial_identity": {**PAPER, "learner": "identity"},
    "memtrial_no_gate": {**PAPER, "gate": GateConfig(test=GateTest.NONE)},
    "memtrial_closed_ens": {**PAPER, "fallback": "ens"},
    "memtrial_closed_ref": {**PAPER, "fallback": "ref"},
    "memtrial_uniform": {**PAPER, "fallback": "uniform"},
    "memtrial_alpha_0.2": {**PAPER, "gate": GateConfig(test=GateTest.PREQUENTIAL, alpha=0.2)},
    "memtrial_alpha_0.01": {**PAPER, "gate": GateConfig(test=GateTest.PREQUENTIAL, alpha=0.01)},
    "memtrial_full": {**PAPER, "design": "full"},
    "memtrial_dial_centred": {**PAPER, **DIAL, "credit": "centred"},
    "memtrial_dial_identity": {**PAPER, **DIAL, "learner": "identity"},
    "memtrial_dial_half": {**PAPER, **DIAL},  # the dial on the half fraction (the default before the odd half)
    # the default anchored on each decision's memory-free draft (a ninth draft) instead of the world's reference
    "memtrial_memory_free": {"reference": ReferenceSource.MEMORY_FREE},
    # the default at a draft budget (method 4.11): calls per decision on average; where the world retrieves
    # more (PlantedMem) its trials screen seven experiences in the saturated eight runs (memtrial_config)
    "memtrial_budget_2": {"draft_budget": 2.0},
    "memtrial_budget_3": {"draft_budget": 3.0},
    "memtrial_budget_4": {"draft_budget": 4.0},
}

#: Curation (method 4.12-4.14): the default ``memtrial`` (value-aware retrieval and quarantine, with change
#: detection) taken apart: retrieving by similarity alone without quarantine (the default before curation),
#: value-aware retrieval alone, quarantine alone, and both (the default, named). Each takes the default's other
#: settings, so it follows them, and the run's ``--draft-budget`` as the default does.
QUARANTINE = QuarantineConfig(enabled=True)
CURATION_VARIANTS: dict[str, dict[str, object]] = {
    "memtrial_similarity": {
        **MEMTRIAL_VARIANTS["memtrial"],
        "retrieval": "similarity",
        "quarantine": QuarantineConfig(),
    },
    "memtrial_value_aware": {
        **MEMTRIAL_VARIANTS["memtrial"],
        "retrieval": "value_aware",
        "quarantine": QuarantineConfig(),
    },
    "memtrial_quarantine": {**MEMTRIAL_VARIANTS["memtrial"], "retrieval": "similarity", "quarantine": QUARANTINE},
    "memtrial_curated": {**MEMTRIAL_VARIANTS["memtrial"], "retrieval": "value_aware", "quarantine": QUARANTINE},
}
MEMTRIAL_VARIANTS.update(CURATION_VARIANTS)
#: the default with the learner's outlier screen on (``robust``, what the service turns on), to measure it
MEMTRIAL_VARIANTS["memtrial_robust"] = {**MEMTRIAL_VARIANTS["memtrial"], "robust": True}
#: the variants a run's ``--draft-budget`` applies to: the default, its curation variants and its robust twin (the
#: paper's rule and its ablations keep their whole design: the budget is the default's)
BUDGETED: tuple[str, ...] = ("memtrial", *CURATION_VARIANTS, "memtrial_robust")


def memtrial_config(method_id: str, world: World, scoring: Scoring, draft_budget: float | None = None) -> EngineConfig:
    """The engine configuration of a MemTrial variant in a world (no diagnostics: a backtest never reads them).

    draft_budget: the run's budget (``--draft-budget``), for the variants of :data:`BUDGETED`. A variant at a budget takes
    its reference from its own memory-free draft where the world's reference costs calls (PlantedMem's
    eight memory-free draws), so every call it causes counts against its budget.
    """
    settings: dict[str, Any] = dict(MEMTRIAL_VARIANTS[method_id])
    if method_id in BUDGETED and draft_budget is not None:
        settings["draft_budget"] = draft_budget
    if settings.get("draft_budget") is not None:
        # a budget covers the world's decisions (its trials come first) and bets on the wider grid
        settings["draft_horizon"] = world.presented
        settings["gate"] = budget_gate(settings.get("gate", default_setting("gate")), settings["draft_budget"])
        if world.wide:  # a world that retrieves more: trials screen them all in the same eight runs
            settings["design"], settings["k"] = DesignKind.SATURATED, world.wide
        if world.reference_calls > 0:
            settings["reference"] = ReferenceSource.MEMORY_FREE
    return EngineConfig(
        gamma=scoring.gamma,
        fee_bp=scoring.fee_bp,
        n_components=world.n_components,
        diagnostics=False,
        **settings,
    )


def _memtrial(method_id: str) -> Factory:
    def build(world: Any, scoring: Scoring, seed: int, draft_budget: float | None = None) -> Method:
        config = memtrial_config(method_id, world, scoring, draft_budget)
        return MemTrialMethod(scoring, method_id, config, world.features)

    return build


def use_bayes_learner(method: MemTrialMethod, features: object) -> None:
    """Swap the engine's empirical-Bayes learner for the NumPyro model (SVI, so a refit per date stays cheap)."""
    from memtrial.values import refit_mode
    from memtrial.values.bayes import BayesLearner

    learner = BayesLearner(
        refit_mode(method.engine.config.learner),
        features=dict(enumerate(features)),  # type: ignore[arg-type]
        n_components=None,
        method="svi",
        num_samples=500,
    )
    method.engine.learner = learner  # type: ignore[assignment]


_BASE: dict[str, Factory] = {
    "equal_weight": lambda w, s, seed: EqualWeight(s),
    "min_variance": lambda w, s, seed: MinimumVariance(s),
    "no_memory": lambda w, s, seed: DraftPick(s, "no_memory", 0b0000),
    "all_four": lambda w, s, seed: DraftPick(s, "all_four", 0b1111),
    "similarity_top2": lambda w, s, seed: DraftPick(s, "similarity_top2", 0b0011),
    "self_consistency": lambda w, s, seed: SelfConsistency(s),
    "draft_mean": lambda w, s, seed: DraftMean(s),
    "reference": lambda w, s, seed: Reference(s),
    "outcome_credit": lambda w, s, seed: OutcomeCredit(s, seed),
    "counterfactual_argmax": lambda w, s, seed: CounterfactualArgmax(s, seed),
    "uplift_credit": lambda w, s, seed: UpliftCredit(s, seed),
    "finmem": lambda w, s, seed: FinMem(s, seed),
    "expel": lambda w, s, seed: ExpeL(s, seed),
    "reflexion": lambda w, s, seed: Reflexion(s),
    "hedge": lambda w, s, seed: Hedge(s),
}
ANCHORED_BASES = ["similarity_top2", "all_four", "outcome_credit", "finmem", "expel", "reflexion"]

FACTORIES: dict[str, Factory] = {**_BASE}
FACTORIES.update({method_id: _memtrial(method_id) for method_id in MEMTRIAL_VARIANTS})
for _base in ANCHORED_BASES:
    FACTORIES[_base + "_anchored"] = lambda w, s, seed, _base=_base: Anchored(_BASE[_base](w, s, seed))  # type: ignore[misc]
FACTORIES["oracle"] = lambda w, s, seed: Oracle(s, w.type_by_date)
FACTORIES["q_retrieval"] = lambda w, s, seed: QRetrieval(s)
FACTORIES["oracle_retrieval"] = lambda w, s, seed: OracleRetrieval(s, w.type_by_date)

#: the variants at a draft budget and on the memory-free reference (walked by cohorts: method 5):
#: asked for by name (``--methods``), they draw the cost-quality frontier (method 4.11); a default run leaves them out
FRONTIER_IDS: list[str] = [m for m in MEMTRIAL_VARIANTS if m.startswith(("memtrial_budget_", "memtrial_memory_free"))]
#: the curation comparison (method 4.12-4.14): methods that retrieve from a PlantedMem world's candidates,
#: asked for by name (``--methods``); a default run leaves them out
CURATION_IDS: list[str] = [*CURATION_VARIANTS, "q_retrieval", "oracle_retrieval", "memtrial_robust"]
METHOD_IDS: list[str] = [m for m in FACTORIES if m not in FRONTIER_IDS and m not in CURATION_IDS]
#: PlantedForecast's methods (backtest.forecast runs them; the command line's help and checks list them)
FORECAST_METHODS: list[str] = [
    "memtrial",
    "memtrial_paper",
    "no_memory",
    "all_four",
    "draft_mean",
    "outcome_credit",
    "counterfactual_argmax",
    "oracle",
    "memtrial_budget_2",
    "memtrial_budget_3",
    "memtrial_budget_4",
]
# the real-data settings have no oracle, and their reference is equal weight (already a method)
REAL_METHOD_IDS: list[str] = [m for m in METHOD_IDS if m not in ("oracle", "reference")]
KNOWN_IDS: list[str] = list(FACTORIES)  # every method a run may name


ENGINES = ("replay", "online")


def build_methods(
    world: Any,
    scoring: Scoring,
    seed: int,
    method_ids: list[str] | None = None,
    value_model: str = "empirical",
    engine: str = "replay",
    contexts: Sequence[DateContext] | None = None,
    outcome: Callable[[int], NDArray[np.float64]] | None = None,
    draft_budget: float | None = None,
    served: Mapping[str, Method] | None = None,
) -> list[Method]:
    """The methods of a world.

    engine="replay" serves every MemTrial variant from trajectories computed in batches (it needs the
    world's presented ``contexts`` and ``outcome(position)``): a variant that plans the whole design on the
    world's own retrieval from one shared trajectory (:mod:`backtest.methods.replay`), one whose plans follow
    its own state (value-aware retrieval, quarantine, a draft budget) from a :class:`~backtest.methods.cohort.Cohort`
    of this world, or of the worlds walked with it (``served``: a method per id, from the cohort of a runner's
    batch of worlds); "online" runs one :class:`MemTrial` engine per variant. Both give identical results.
    value_model="bayes" gives every MemTrial variant the full-Bayes learner (online engines only).
    draft_budget: the run's draft budget, for the variants of :data:`BUDGETED`.
    """
    ids = method_ids or METHOD_IDS
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {list(ENGINES)}, got {engine!r}", field="engine")
    family: dict[str, Method] = {}
    if engine == "replay" and value_model != "bayes":
        if contexts is None or outcome is None:
            raise ConfigError("the replay engine needs the world's contexts and outcomes", field="engine")
        configs = {
            method_id: memtrial_config(method_id, world, scoring, draft_budget)
            for method_id in ids
            if method_id in MEMTRIAL_VARIANTS
        }
        replayed = {method_id: config for method_id, config in configs.items() if replays(config)}
        family.update(
            {
                member.id: member
                for member in families(scoring, replayed, world.features, world.n_components, contexts, outcome)
            }
        )
        walked: dict[object, dict[str, EngineConfig]] = {}
        for method_id, config in configs.items():
            if method_id in family or not serves(config):
                continue
            if served is not None and method_id in served:
                family[method_id] = served[method_id]
            else:
                walked.setdefault(learning_key(config), {})[method_id] = config
        for group in walked.values():  # variants that learn alike share one walk of this world
            cohort = Cohort(group, scoring, [Lane(contexts, outcome, world.features)])
            family.update({method_id: cohort.members(method_id)[0] for method_id in group})
    methods = [
        family[method_id]
        if method_id in family
        else _memtrial(method_id)(world, scoring, seed, draft_budget)  # type: ignore[call-arg]
        if method_id in MEMTRIAL_VARIANTS
        else FACTORIES[method_id](world, scoring, seed)
        for method_id in ids
    ]
    if contexts is not None:  # methods whose dates depend on their own inputs only compute them in one batch
        for method in methods:
            prepare = getattr(method, "prepare", None)
            if prepare is not None:
                prepare(contexts)
    if value_model == "bayes":
        for method in methods:
            if isinstance(method, MemTrialMethod):
                use_bayes_learner(method, world.features)
    return methods
