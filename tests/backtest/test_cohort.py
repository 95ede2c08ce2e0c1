"""A cohort walks a MemTrial variant in many worlds at once and gives each world exactly what that variant's
own online engine gives it alone: weights, gate states, trust weights, values, retrievals, quarantines and
draft calls, bit for bit."""

import functools
from dataclasses import replace

import numpy as np
import pytest

from backtest.methods.base import Scoring, Walk
from backtest.methods.cohort import Cohort, Lane, learning_key
from backtest.methods.memtrial_methods import MemTrialMethod
from backtest.methods.registry import MEMTRIAL_VARIANTS, memtrial_config
from backtest.plantedmem import ALL_REGIMES, PlantedMemWorld
from backtest.runner import CALENDARS_PER_TASK, WorldSpec, _groups, market_for, run_group, run_world
from memtrial.curation import QuarantineConfig
from memtrial.engine.lifecycle import EngineConfig
from memtrial.outcomes.mandates import INVESTORS
from memtrial.trust.gate import GateConfig, GateTest

#: the variants a cohort walks in a run (those the replay does not serve: their plans follow their own state)
WALKED = [
    "memtrial_value_aware",
    "memtrial_quarantine",
    "memtrial_curated",
    "memtrial_memory_free",
    "memtrial_robust",
    "memtrial_budget_2",
    "memtrial_budget_3",
    "memtrial_budget_4",
]
FAST = ("memtrial_curated", "memtrial_quarantine", "memtrial_budget_3")


@functools.lru_cache(maxsize=32)
def worlds(regime, investor, seeds):
    """The worlds of ``seeds``: each one's walk and its lane (computed once per process)."""
    scoring = Scoring(gamma=INVESTORS[investor].gamma)
    out = []
    for seed in seeds:
        world = PlantedMemWorld(market_for(False), regime, seed)
        contexts = [c for c in (world.context(date) for date in range(world.n_dates)) if c is not None]
        rels = [np.asarray(world.outcome(c.index)) for c in contexts]
        out.append(
            (
                world,
                Walk(contexts, rels, scoring, world.mandate_projection),
                Lane(contexts, rels.__getitem__, world.features),
            )
        )
    return scoring, out


def assert_cohort_equals_online(method_ids, regime, investor="balanced", seeds=(0, 1, 2)):
    """One cohort walks ``method_ids`` (one id, or several that learn alike) in the worlds of ``seeds``; each
    variant in each world equals its online engine. Returns the quarantines the engines made."""
    scoring, walked = worlds(regime, investor, seeds)
    ids = [method_ids] if isinstance(method_ids, str) else list(method_ids)
    configs = {method_id: memtrial_config(method_id, walked[0][0], scoring) for method_id in ids}
    cohort = Cohort(configs, scoring, [lane for _, _, lane in walked])
    return sum(_assert_members(cohort, method_id, configs[method_id], scoring, walked) for method_id in ids)


def _assert_members(cohort, method_id, config, scoring, walked):
    events = 0
    for (world, walk, _), member in zip(walked, cohort.members(method_id), strict=True):
        online = MemTrialMethod(scoring, method_id, config, world.features)
        expected, got = online.trajectory(walk), member.trajectory(walk)
        np.testing.assert_array_equal(np.asarray(got.weights), np.asarray(expected.weights))
        np.testing.assert_array_equal(got.opens, expected.opens)
        np.testing.assert_array_equal(got.statistics, expected.statistics)
        np.testing.assert_array_equal(got.trust_weights, expected.trust_weights)
        assert member.values() == online.values()
        assert member.retrievals == online.retrievals
        assert member.quarantines == online.quarantines
        assert member.draft_calls(8) == online.draft_calls(8)
        events += len(online.quarantines)
    return events


@pytest.mark.parametrize("regime", ["poisoned", "drift", "beta_0.25"])
@pytest.mark.parametrize("method_id", FAST)
def test_a_cohort_of_three_worlds_gives_each_what_its_online_engine_gives(method_id, regime):
    assert_cohort_equals_online(method_id, regime)


def test_the_cohort_checks_see_quarantines_and_budgets_at_work():
    """The fast tier's worlds are not vacuous: quarantines happen in one of them, and a budget's plans are
    trials and exploiting plans both."""
    assert sum(assert_cohort_equals_online("memtrial_quarantine", regime) for regime in ("drift", "poisoned")) > 0
    scoring, walked = worlds("beta_0.25", "balanced", (0, 1, 2))
    config = memtrial_config("memtrial_budget_3", walked[0][0], scoring)
    cohort = Cohort({"memtrial_budget_3": config}, scoring, [lane for _, _, lane in walked])
    cohort.run()
    calls = [c for world in cohort.worlds for c in world.calls[0]]
    assert min(calls) <= 2 and max(calls) == 9 and np.mean(calls) <= 3.0


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(ALL_REGIMES))
@pytest.mark.parametrize("method_id", WALKED)
def test_a_cohort_gives_each_world_what_its_online_engine_gives_in_every_regime(method_id, regime):
    assert_cohort_equals_online(method_id, regime, seeds=(3, 4))


@pytest.mark.slow
@pytest.mark.parametrize("investor", ["aggressive", "conservative"])
@pytest.mark.parametrize("method_id", ["memtrial_curated", "memtrial_budget_3"])
def test_a_cohort_gives_each_world_what_its_online_engine_gives_for_every_investor(method_id, investor):
    for regime in ("poisoned", "many_experiences"):
        assert_cohort_equals_online(method_id, regime, investor, seeds=(5, 6))


@pytest.mark.parametrize("regime", ["poisoned", "beta_0.5"])
def test_variants_that_differ_only_in_what_they_play_share_one_walk(regime):
    """The default and its memory-free-reference twin learn alike (the reference changes what is played, not
    what is learnt): one cohort walks both, each its online engine; a budget does not share a walk."""
    scoring, walked = worlds(regime, "balanced", (0, 1))
    configs = {m: memtrial_config(m, walked[0][0], scoring) for m in ("memtrial", "memtrial_memory_free")}
    assert learning_key(configs["memtrial"]) == learning_key(configs["memtrial_memory_free"])
    budget = memtrial_config("memtrial_budget_3", walked[0][0], scoring)
    assert learning_key(budget) != learning_key(configs["memtrial"])
    with pytest.raises(ValueError, match="learns otherwise"):
        Cohort({**configs, "memtrial_budget_3": budget}, scoring, [lane for _, _, lane in walked])
    assert_cohort_equals_online(("memtrial", "memtrial_memory_free"), regime, seeds=(0, 1))


def test_a_run_s_task_gives_every_world_what_it_gets_run_alone():
    """run_group walks its worlds' cohorts together; each world's results are those of run_world."""
    methods = ("equal_weight", "memtrial", "memtrial_memory_free", "memtrial_budget_3", "memtrial_similarity")
    specs = [
        WorldSpec("poisoned", investor, seed, methods=methods)
        for seed in (7, 8)
        for investor in ("balanced", "aggressive")
    ]
    together = run_group(specs)
    for spec, result in zip(specs, together, strict=True):
        alone = run_world(spec)
        assert result["methods"] == alone["methods"]


def test_a_run_s_tasks_hold_the_calendars_of_one_regime_a_batch_at_a_time():
    specs = [
        WorldSpec(regime, investor, seed)
        for regime in ("beta_0.1", "drift")
        for seed in range(CALENDARS_PER_TASK + 3)
        for investor in ("balanced", "conservative")
    ]
    tasks = _groups(specs)
    assert sorted(i for task in tasks for i in task) == list(range(len(specs)))
    for task in tasks:  # one regime, whole calendars (every investor of a seed), at most a batch of them
        assert len({specs[i].regime for i in task}) == 1
        assert len(task) == 2 * len({specs[i].seed for i in task})
    assert sorted(len({specs[i].seed for i in task}) for task in tasks) == [
        3,
        3,
        CALENDARS_PER_TASK,
        CALENDARS_PER_TASK,
    ]


def test_a_cohort_refuses_worlds_of_other_calendars_and_the_binary_gate():
    scoring, walked = worlds("beta_0.25", "balanced", (0,))
    config = memtrial_config("memtrial_curated", walked[0][0], scoring)
    lane = walked[0][2]
    short = Lane(lane.contexts[:-1], lane.outcome, lane.features)
    with pytest.raises(ValueError, match="share one calendar"):
        Cohort({"memtrial_curated": config}, scoring, [lane, short])
    paper = EngineConfig(gamma=scoring.gamma, **MEMTRIAL_VARIANTS["memtrial_paper"])
    with pytest.raises(ValueError, match="anytime test or none"):
        Cohort({"memtrial_paper": paper}, scoring, [lane])


#: settings the run's variants do not use, each one cohort against its online engines (several variants that learn
#: alike share the cohort): the rules the cohort calls must hold for every configuration it accepts
SETTINGS = {
    "a budget without a horizon": [{"draft_budget": 3.0}],
    "a budget without a horizon, the memory-free reference": [{"draft_budget": 3.0, "reference": "memory_free"}],
    "a budget with the learnt mixture": [{"draft_budget": 2.0, "draft_horizon": 60, "fallback": "ftrl"}],
    "centred credit, the identity learner": [{"credit": "centred", "learner": "identity"}],
    "the content learner": [{"learner": "content"}],
    "the outlier screen on centred credit": [{"robust": True, "credit": "centred"}],
    "no gate": [{"gate": GateConfig(test=GateTest.NONE)}],
    "three fallbacks sharing a walk": [
        {"fallback": "ftrl"},
        {"fallback": "uniform", "reference": "memory_free"},
        {},
    ],
}
FAST_SETTINGS = ("three fallbacks sharing a walk", "a budget without a horizon")


def assert_settings_equal_online(settings, walked, scoring):
    configs = {
        f"v{i}": EngineConfig(gamma=scoring.gamma, n_components=None, diagnostics=False, **s)
        for i, s in enumerate(settings)
    }
    cohort = Cohort(configs, scoring, [lane for _, _, lane in walked])
    return sum(_assert_members(cohort, method_id, config, scoring, walked) for method_id, config in configs.items())


@pytest.mark.parametrize("case", FAST_SETTINGS)
def test_a_cohort_equals_the_online_engines_under_settings_a_run_does_not_use(case):
    scoring, walked = worlds("drift", "balanced", (0, 1))
    assert_settings_equal_online(SETTINGS[case], walked, scoring)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in SETTINGS if c not in FAST_SETTINGS])
def test_a_cohort_equals_the_online_engines_under_the_other_settings(case):
    scoring, walked = worlds("poisoned", "balanced", (0, 1))
    assert_settings_equal_online(SETTINGS[case], walked, scoring)


def test_on_a_world_s_own_retrieval_a_cohort_leaves_quarantined_experiences_out_as_the_engine_does():
    """A world that drafts only its own retrieval (no candidates: real data's kind), twenty dates that retrieve
    nothing, and a quarantine quick enough to act: the plans on fewer experiences than k, the trials without
    any (which teach the learnt mixture only) and the quarantines are the engine's, for two fallbacks at once."""
    scoring, walked = worlds("drift", "balanced", (0, 1))
    own = []
    for world, walk, lane in walked:
        contexts = [
            replace(
                c,
                candidate_scores=None,
                draft_for=None,
                **({"retrieved": (), "wide_drafts": None} if 5 <= position < 25 else {}),
            )
            for position, c in enumerate(walk.contexts)
        ]
        rels = walk.rels
        own.append(
            (
                world,
                Walk(contexts, rels, scoring, world.mandate_projection),
                Lane(contexts, lane.outcome, world.features),
            )
        )
    quick = QuarantineConfig(enabled=True, level=0.3)
    settings = [{"quarantine": quick, "fallback": "ftrl"}, {"quarantine": quick}]
    assert assert_settings_equal_online(settings, own, scoring) > 0  # a quarantine happened: the check is not vacuous
