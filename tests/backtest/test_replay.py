"""The batch replay of a world (and, for the variants whose plans follow their own state, the cohort that
walks it: ``test_cohort.py``) gives every MemTrial variant exactly what its own online engine gives."""

import dataclasses
import functools
from dataclasses import replace

import numpy as np
import pytest

from backtest.methods.base import Scoring, Walk
from backtest.methods.cohort import CohortMember
from backtest.methods.registry import CURATION_VARIANTS, MEMTRIAL_VARIANTS, build_methods
from backtest.methods.replay import FamilyMember, replays
from backtest.plantedmem import ALL_REGIMES, CURATION_REGIMES, REGIMES, PlantedMemWorld
from backtest.runner import WorldSpec, market_for, run_world
from memtrial.curation import QuarantineConfig
from memtrial.engine.lifecycle import EngineConfig
from memtrial.outcomes.mandates import INVESTORS

# every variant: the replay serves each one, those at a draft budget (a family each) among them
VARIANTS = ("equal_weight", *MEMTRIAL_VARIANTS)
BUDGETS = [m for m, settings in MEMTRIAL_VARIANTS.items() if "draft_budget" in settings]


@functools.lru_cache(maxsize=16)
def both(spec, perturb=None):
    """One world run by its online engines and by the replay, once per process: tests that check the same
    world share it (the results are read, never changed)."""
    online = run_world(replace(spec, engine="online"), perturb=perturb, keep_choices=True)
    replayed = run_world(replace(spec, engine="replay"), perturb=perturb, keep_choices=True)
    return online, replayed


def regime_spec(regime):
    """The fast tier's world of ``regime``: every variant, the balanced investor."""
    return WorldSpec(regime, "balanced", 3 + len(regime), methods=VARIANTS)


def assert_identical(online, replayed):
    assert replayed["choices"] == online["choices"]  # every variant's weights on every date, bit for bit
    assert replayed["trust_states"] == online["trust_states"]  # gate open and its statistic on every date
    assert replayed["values"] == online["values"]  # final values of every experience
    assert replayed["methods"] == online["methods"]  # utilities, open rates, value recovery, wealth


def test_replay_equals_the_online_engines_on_one_world():
    """The checks of every regime below are strong: in this world of one of them gates open and every budget
    draws trials and exploiting plans (the world is computed once, for both tests)."""
    online, replayed = both(regime_spec("beta_0.25"))
    assert_identical(online, replayed)
    assert any(rate for rate in (m["open_rate"] for m in online["methods"].values()) if rate), (
        "no gate ever opened: the check is weak"
    )
    assert BUDGETS, "no variant at a draft budget: the check is weak"
    for method_id in BUDGETS:  # trials and exploiting plans both, and memory trusted on some exploiting plans
        calls = online["methods"][method_id]["draft_calls_per_decision"]
        assert 1.0 < calls < 9.0, (method_id, calls)
        weights = online["trust_states"][method_id]  # (open, statistic, trust weight) per date
        assert any(state[2] for state in weights), f"{method_id} never trusted memory: the check is weak"


def test_replay_at_the_run_s_draft_budget_equals_the_online_engine():
    """``--draft-budget`` puts the default memtrial at a budget: replayed, it is its online engine's twin."""
    spec = WorldSpec("beta_0.5", "aggressive", 11, methods=("equal_weight", "memtrial"), draft_budget=2.5)
    online, replayed = both(spec)
    assert_identical(online, replayed)
    assert online["methods"]["memtrial"]["draft_calls_per_decision"] < 2.5


def test_the_replay_serves_the_whole_design_on_the_world_s_retrieval_only():
    """A budget's trials, value-aware retrieval and a quarantine book make plans follow the variant's own state:
    a cohort walks those (or their online engines)."""
    plain = EngineConfig(gamma=2.0, retrieval="similarity", quarantine=QuarantineConfig())
    assert replays(plain)
    assert not replays(dataclasses.replace(plain, draft_budget=3.0, draft_horizon=100))
    assert not replays(dataclasses.replace(plain, retrieval="value_aware"))
    assert not replays(dataclasses.replace(plain, quarantine=QuarantineConfig(enabled=True)))


#: the regimes the fast tier checks beside beta_0.25 (whose world of every variant is checked above): the null,
#: the neutral lessons, many experiences and content features, each with the variants below; the slow tier checks
#: every variant in each of those worlds and in the two other strengths of influence, so ``pytest --all`` checks
#: every variant in every regime's world as before
FAST_REGIMES = ("no_influence", "noise_only", "many_experiences", "informative_content")
#: what the fast tier checks in those regimes: a variant of each path a regime's numbers take differently, each
#: replay trajectory (the paper's design and the full one, raw and centred credit, the odd half), learner (auto,
#: content, identity), gate (prequential, anytime, none), action rule and fallback (the learnt mixtures, the
#: ensemble, the reference), and each cohort (the default's curated walk, its memory-free twin, a budget); the
#: robust variant's path is checked in the curation regimes below
FAST_VARIANTS = (
    "equal_weight",
    "memtrial",
    "memtrial_memory_free",
    "memtrial_budget_3",
    "memtrial_paper",
    "memtrial_content",
    "memtrial_identity",
    "memtrial_full",
    "memtrial_dial_centred",
    "memtrial_similarity",
    "memtrial_uniform",
    "memtrial_closed_ens",
    "memtrial_no_gate",
)


def config(settings):
    return EngineConfig(gamma=2.0, **settings)


def test_the_fast_variants_take_every_path_the_regimes_vary():
    """The fast tier's subset keeps a variant of every replayed design, credit, learner, gate, action rule,
    fallback, retrieval and reference, and of every cohort kind; the robust one is checked in the curation
    regimes. Only settings that change numbers, not paths (a gate's alpha), are left to the slow tier."""
    configs = [config(MEMTRIAL_VARIANTS[m]) for m in FAST_VARIANTS if m in MEMTRIAL_VARIANTS]
    every = [config(settings) for settings in MEMTRIAL_VARIANTS.values()]
    for setting in ("design", "credit", "learner", "action", "fallback", "retrieval", "reference"):
        assert {getattr(c, setting).value for c in configs} == {getattr(c, setting).value for c in every}, setting
    assert {c.gate.test.value for c in configs} == {c.gate.test.value for c in every}
    assert {c.robust for c in every} == {False, True} and "memtrial_robust" in CURATION
    assert any(c.draft_budget is not None for c in configs) and any(c.quarantine.enabled for c in configs)
    assert not replays(configs[0]) and any(replays(c) for c in configs)


@pytest.mark.parametrize("regime", FAST_REGIMES)
def test_replay_equals_the_online_engines_on_every_regime(regime):
    """The fast tier's check of the regimes' paths, one world each (the slow tier checks every variant in these
    worlds, and every investor in others)."""
    assert_identical(*both(replace(regime_spec(regime), methods=FAST_VARIANTS)))


@pytest.mark.slow
@pytest.mark.parametrize("regime", [r for r in REGIMES if r != "beta_0.25"])
def test_replay_equals_the_online_engines_on_every_regime_with_every_variant(regime):
    """The fast tier's worlds with every variant (beta_0.25's is the fast tier's first check), and the other
    strengths of influence."""
    assert_identical(*both(regime_spec(regime)))


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(REGIMES))
@pytest.mark.parametrize("investor", [name for name in INVESTORS if name != "balanced"])
def test_replay_equals_the_online_engines_on_every_regime_and_investor(regime, investor):
    """Every variant in every regime under the two other investors: with the balanced investor's worlds above
    (``regime_spec``, every variant), every pair of regime and investor is checked once."""
    assert_identical(*both(WorldSpec(regime, investor, 15 + len(regime), methods=VARIANTS)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_replay_equals_the_online_engines_on_more_seeds(seed):
    assert_identical(*both(WorldSpec("many_experiences", "aggressive", seed, methods=VARIANTS)))


# the curation variants (method 4.12-4.14) and what they share a walk or a replay with
CURATION = ("equal_weight", "memtrial", *CURATION_VARIANTS, "memtrial_robust")


@pytest.mark.parametrize("regime", list(CURATION_REGIMES))
def test_replay_equals_the_online_engines_in_the_curation_regimes(regime):
    """The poisoned and drift worlds, where quarantines and changes happen (every other regime: above)."""
    assert_identical(*both(WorldSpec(regime, "balanced", 3 + len(regime), methods=CURATION)))


BUDGET_CURATION = ("equal_weight", "memtrial_value_aware", "memtrial_quarantine", "memtrial_curated", "memtrial_robust")
#: the fast tier's worlds of the curation variants at a draft budget: the two curation regimes, and the one
#: regime where quarantine's book has an event at the budget, so that its engine serves it (seed 5; in the
#: other six its twin's replay serves it, as in the two curation regimes; checked below)
BUDGET_FAST_REGIMES = ("beta_0.5", *CURATION_REGIMES)


def _assert_curation_at_a_budget_equals_its_online_engines(regime):
    online, replayed = both(WorldSpec(regime, "balanced", 5, methods=BUDGET_CURATION, draft_budget=3.0))
    assert_identical(online, replayed)
    for method_id in ("memtrial_curated", "memtrial_robust"):  # not their whole design
        assert online["methods"][method_id]["draft_calls_per_decision"] <= 3.0, method_id


@pytest.mark.parametrize("regime", BUDGET_FAST_REGIMES)
def test_curation_variants_at_a_draft_budget_equal_their_online_engines(regime):
    """``--draft-budget`` applies to the curation variants too: each at the budget (every regime: slow tier)."""
    _assert_curation_at_a_budget_equals_its_online_engines(regime)


@pytest.mark.slow
@pytest.mark.parametrize("regime", [r for r in ALL_REGIMES if r not in BUDGET_FAST_REGIMES])
def test_curation_variants_at_a_draft_budget_equal_their_online_engines_in_the_other_regimes(regime):
    _assert_curation_at_a_budget_equals_its_online_engines(regime)


def _served(regime, seed, methods=CURATION, engine="replay", perturb=None, draft_budget=None):
    """The methods of one world built as ``engine`` serves them, walked through the world; ``perturb``:
    (position, asset, factor) multiplies that asset's realised prices on that date, as ``run_world`` does."""
    world = PlantedMemWorld(market_for(False), regime, seed)
    scoring = Scoring(gamma=INVESTORS["balanced"].gamma)
    contexts = [c for c in (world.context(date) for date in range(world.n_dates)) if c is not None]
    rels = [np.asarray(world.outcome(c.index)).copy() for c in contexts]
    if perturb is not None:
        rels[perturb[0]][:, perturb[1]] *= perturb[2]
    built = build_methods(
        world,
        scoring,
        seed,
        list(methods),
        engine=engine,
        contexts=contexts,
        outcome=rels.__getitem__,
        draft_budget=draft_budget,
    )
    walk = Walk(contexts, rels, scoring, world.mandate_projection)
    for method in built:
        walk.trajectory(method)
    return {method.id: method for method in built}


def test_variants_whose_plans_follow_their_own_state_are_walked_by_a_cohort():
    """Value-aware retrieval, quarantine and draft budgets are cohorts' (of this world alone here; of a task's
    worlds in a run); the outlier screen over the world's retrieval is replayed."""
    served = _served("drift", 1, (*CURATION, "memtrial_budget_3", "memtrial_similarity"))
    for method_id in ("memtrial_value_aware", "memtrial_quarantine", "memtrial_curated", "memtrial_budget_3"):
        assert isinstance(served[method_id], CohortMember), method_id
    assert isinstance(served["memtrial_similarity"], FamilyMember)
    assert isinstance(served["memtrial_robust"], CohortMember if replays_not("memtrial_robust") else FamilyMember)


def replays_not(method_id):
    """Whether a variant's configuration is one the replay does not serve (it curates, or has a budget)."""
    return not replays(EngineConfig(gamma=5.0, **MEMTRIAL_VARIANTS[method_id]))


def test_the_robust_variant_replayed_equals_its_engine_where_its_guard_sets_a_date_aside():
    """One asset's prices ten times their own on decision 40: the outlier guard sets that date aside (in the
    worlds above it only clips), and the replayed learner screens as the engine's does."""
    perturb = (40, 0, 10.0)
    spec = WorldSpec("beta_0.5", "balanced", 11, methods=("equal_weight", "memtrial", "memtrial_robust"))
    assert_identical(*both(spec, perturb))
    engine = _served("beta_0.5", 11, ("memtrial_robust",), "online", perturb)["memtrial_robust"].engine
    assert engine.learner.dates_set_aside == 1
