"""memtrial.engine.lifecycle: the plan -> decide -> settle lifecycle."""

import json
from dataclasses import fields

import numpy as np
import pytest
from world import N_ASSETS, TYPES, World, new_engine, run

from memtrial.action.fallback import FallbackVariant
from memtrial.action.rule import ActionRule
from memtrial.credit.design import DesignKind
from memtrial.engine.config import PAPER_RULE, SCORED_DESIGN, default_setting
from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.errors import (
    ConfigError,
    DuplicateError,
    InputError,
    LifecycleError,
    PrematureSettlementError,
    SettlementConflictError,
    StateError,
    TimeOrderError,
    UnknownDecisionError,
)
from memtrial.outcomes.mandates import INVESTORS
from memtrial.records import Action
from memtrial.trust.gate import GateConfig, GateTest, TrustStatus
from memtrial.values import CreditBasis

EQUAL = np.full(N_ASSETS, 0.25)


def planned(engine=None, decision_id="d1", time=0, maturity=1):
    engine = engine or new_engine()
    return engine, engine.plan(decision_id, time, maturity, retrieved=["e00", "e03", "e06", "e09"], n_assets=N_ASSETS)


def test_plan_designs_eight_subsets_and_freezes_predictions():
    engine, plan = planned()
    assert plan.masks == (0, 3, 5, 6, 9, 10, 12, 15)
    assert (
        plan.subsets[0] == () and plan.subsets[1] == ("e00", "e03") and plan.subsets[-1] == ("e00", "e03", "e06", "e09")
    )
    assert plan.predictions == {"e00": 0.0, "e03": 0.0, "e06": 0.0, "e09": 0.0}
    assert plan.trust.status is TrustStatus.INSUFFICIENT_EVIDENCE
    assert plan.q == 0.9
    assert engine.history.log[-1].kind == "prediction"


def test_full_design_plans_sixteen_drafts():
    _, plan = planned(new_engine(design="full"))
    assert plan.masks == tuple(range(16))


def test_fewer_experiences_than_k_use_the_full_factorial_of_those_available():
    engine = new_engine()
    plan = engine.plan("d", 0, 1, retrieved=["e00", "e01"], n_assets=N_ASSETS)
    assert plan.masks == (0, 1, 2, 3)
    empty = engine.plan("e", 1, 2, retrieved=[], n_assets=N_ASSETS)
    assert empty.masks == (0,) and empty.subsets == ((),)


def test_closed_gate_decides_the_anchored_mixture():
    engine, plan = planned()
    drafts = np.tile([0.7, 0.1, 0.1, 0.1], (8, 1))
    decision = engine.decide("d1", drafts)
    assert decision.action is Action.MIXTURE and decision.q == 0.9
    np.testing.assert_allclose(decision.weights, 0.9 * EQUAL + 0.1 * drafts[0])
    assert decision.explanation == (
        "gate prequential: insufficient evidence (0 scores); gate not open: anchored mixture with q = 0.9 on the reference"
    )


def test_open_gate_acts_on_the_subset_with_the_highest_predicted_value():
    engine = new_engine(gate=GateConfig(test="none"))
    decisions = run(engine, World(seed=3), range(30))
    acted = [d for d in decisions if d.action is Action.SUBSET]
    assert acted, "the ungated engine never acted on a subset"
    for decision in acted:
        plan = engine.get_plan(decision.decision_id)
        sums = [sum(plan.predictions[e] for e in subset) for subset in plan.subsets]
        assert decision.predicted_gain == max(sums) > 0
        assert sum(plan.predictions[e] for e in decision.subset) == max(sums)
        np.testing.assert_array_equal(decision.weights, decision.drafts[plan.masks.index(decision.mask)])
        assert decision.explanation.startswith("no gate (always open); best subset")


def test_useful_experiences_earn_positive_values_and_misleading_ones_negative():
    engine = new_engine()
    run(engine, World(seed=1, n_dates=120), range(120))
    values = engine.values()
    useful = np.mean([values[e] for e, kind in TYPES.items() if kind > 0])
    misleading = np.mean([values[e] for e, kind in TYPES.items() if kind < 0])
    assert useful > 0 > misleading


def test_settle_returns_contributions_of_every_retrieved_experience():
    engine, plan = planned()
    world = World(seed=0)
    engine.decide("d1", world.drafts(0, plan.subsets))
    settlement = engine.settle("d1", world.rel[0])
    assert list(settlement.contributions) == ["e00", "e03", "e06", "e09"]
    assert sum(settlement.centred.values()) == pytest.approx(0.0, abs=1e-15)
    assert list(settlement.interactions) == ["AB = CD", "AC = BD", "AD = BC"]
    assert settlement.mixture_utilities.shape == (201,)
    assert settlement.mixture_utilities[-1] == pytest.approx(settlement.reference_utility, abs=1e-15)
    assert settlement.mixture_utilities[0] == pytest.approx(settlement.mean_utility, abs=1e-15)


def test_posterior_without_a_nonzero_contribution_has_no_sd_and_gets_one_from_the_first():
    """Identical drafts give contributions of exactly 0: no noise scale, so no sd (never sd 0)."""
    engine, plan = planned()
    world = World(seed=0)
    engine.decide("d1", np.tile(EQUAL, (len(plan.subsets), 1)))
    settlement = engine.settle("d1", world.rel[0])
    assert set(settlement.contributions.values()) == {0.0}
    assert engine.posterior("e00") == (0.0, None, 1)
    _, second = planned(engine, "d2", time=1, maturity=2)
    engine.decide("d2", world.drafts(1, second.subsets))
    engine.settle("d2", world.rel[1])
    for experience_id in plan.experience_ids:
        _, sd, n = engine.posterior(experience_id)
        assert n == 2 and sd is not None and sd > 0


def test_posteriors_of_several_experiences_equal_what_the_learner_reports_for_each():
    """The batch read (rank's candidates) gives each experience, learnt or not, the learner's own report."""
    engine, plan = planned()
    world = World(seed=0)
    engine.decide("d1", world.drafts(0, plan.subsets))
    engine.settle("d1", world.rel[0])
    ids = [*plan.experience_ids, "e01"]  # e01 was never retrieved: its prior from the content features
    reported = [engine.learner.reported_posterior(e) for e in ids]
    assert engine.posteriors(ids) == [(p.mean, p.sd, engine.learner.count(e)) for e, p in zip(ids, reported)]
    assert engine.posterior("e01") == engine.posteriors(["e01"])[0]


def test_settle_twice_with_the_same_prices_is_a_no_op():
    engine, plan = planned()
    world = World(seed=0)
    engine.decide("d1", world.drafts(0, plan.subsets))
    first = engine.settle("d1", world.rel[0])
    state = engine.to_json()
    assert engine.settle("d1", world.rel[0].copy()) is first
    assert engine.to_json() == state


def test_settle_twice_with_different_prices_is_rejected():
    engine, plan = planned()
    world = World(seed=0)
    engine.decide("d1", world.drafts(0, plan.subsets))
    engine.settle("d1", world.rel[0])
    with pytest.raises(SettlementConflictError, match="decision 'd1' was already settled with different prices"):
        engine.settle("d1", world.rel[0] * 1.01)


def test_settle_before_maturity_is_rejected():
    engine, plan = planned(maturity=5)
    engine.decide("d1", World(seed=0).drafts(0, plan.subsets))
    with pytest.raises(PrematureSettlementError, match="decision 'd1' matures at 5; it cannot be settled at 4"):
        engine.settle("d1", World(seed=0).rel[0], at=4)


def test_settle_before_decide_is_rejected():
    engine, _ = planned()
    with pytest.raises(LifecycleError, match="decision 'd1' has no drafts yet: call decide before settle"):
        engine.settle("d1", World(seed=0).rel[0])


def test_unknown_decision_is_rejected():
    with pytest.raises(UnknownDecisionError, match="no plan has decision id 'nope'"):
        new_engine().decide("nope", np.tile(EQUAL, (8, 1)))


def test_planning_before_the_clock_is_rejected():
    engine, _ = planned(time=10, maturity=11)
    with pytest.raises(TimeOrderError, match="time 9 is before the engine's clock 10"):
        engine.plan("d2", 9, 12, retrieved=["e00"], n_assets=N_ASSETS)


def test_settling_moves_the_clock_to_the_maturity():
    engine, plan = planned(time=0, maturity=3)
    engine.decide("d1", World(seed=0).drafts(0, plan.subsets))
    engine.settle("d1", World(seed=0).rel[0])
    assert engine.clock == 3
    with pytest.raises(TimeOrderError, match="time 2 is before the engine's clock 3"):
        engine.plan("d2", 2, 4, retrieved=["e00"], n_assets=N_ASSETS)


def test_planning_a_decision_id_twice_is_rejected():
    engine, _ = planned()
    with pytest.raises(DuplicateError, match="decision 'd1' is already planned"):
        planned(engine)


def test_maturity_before_time_is_rejected():
    with pytest.raises(InputError, match="maturity 1 must not be before time 2"):
        new_engine().plan("d", 2, 1, retrieved=[], n_assets=N_ASSETS)


@pytest.mark.parametrize(
    ("drafts", "message"),
    [
        (np.tile(EQUAL, (7, 1)), r"drafts must have one row per designed subset \(8\), got 7 rows"),
        (np.tile([0.5, 0.5, 0.5, -0.5], (8, 1)), r"drafts must be >= 0 \(long only\)"),
        (np.tile([np.nan, 0.5, 0.25, 0.25], (8, 1)), r"drafts must be finite \(no NaN or inf\)"),
        (np.tile([0.5, 0.5, 0.5, 0.5], (8, 1)), "drafts rows must sum to 1"),
        (np.tile([0.5, 0.5], (8, 1)), r"drafts must have 4 weights per row"),
    ],
)
def test_bad_drafts_are_rejected_and_nothing_is_stored(drafts, message):
    engine, _ = planned()
    with pytest.raises(InputError, match=message) as error:
        engine.decide("d1", drafts)
    assert error.value.field == "drafts"
    assert engine.entries["d1"].decision is None


def _scored(drafts=None):
    engine = MemTrial(EngineConfig(investor="balanced", design="half"))
    for e in "abcd":
        engine.add_experience(e)
    plan = engine.plan("d0", 0, 1, retrieved=list("abcd"), kind="scored")
    if drafts is None:
        engine.decide_scored("d0", n_drafts=len(plan.masks))
    else:
        engine.decide_scored("d0", vectors=drafts(len(plan.masks)))
    return engine


@pytest.mark.parametrize(
    ("settlement", "field", "message"),
    [
        ({"utilities": [1e200, -1e200] * 4}, "utilities", "utilities must be at most 1e+100 in absolute value"),
        ({"utilities": [1e308, -1e308] * 4}, "utilities", "utilities must be at most 1e+100 in absolute value"),
        ({"utilities": ["x", "y"] * 4}, "utilities", "utilities must be 8 finite numbers, one per draft, got ['x'"),
        (
            {"utilities": [0.0, float("inf")] * 4},
            "utilities",
            "utilities must be 8 finite numbers, one per draft, got a number that is not finite",
        ),
        ({"utilities": [0.0] * 7}, "utilities", "utilities must be 8 finite numbers, one per draft, got 7 numbers"),
        (
            {"utilities": [[0.0]] * 8},
            "utilities",
            "utilities must be 8 finite numbers, one per draft, got rows of numbers (8 rows)",
        ),
    ],
)
def test_scored_utilities_the_engine_cannot_learn_from_are_refused_and_nothing_changes(settlement, field, message):
    # squares of differences near 1e200 overflow: the values would read NaN and the state could not be saved
    engine = _scored()
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        engine.settle_scored("d0", **settlement)
    assert error.value.field == field and str(error.value).startswith(message), str(error.value)
    assert engine.to_json() == before
    engine.settle_scored("d0", utilities=[1e100, -1e100] * 4)  # the bound itself is learnt from
    assert all(np.isfinite(v) for v in engine.values().values())
    assert json.loads(engine.to_json())


def test_a_rule_scoring_numbers_far_apart_is_refused_naming_the_outcome_and_nothing_changes():
    engine = _scored(lambda n: [[1.0], [0.0]] * (n // 2))
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        engine.settle_scored("d0", outcome=1e200, rule="abs_error")
    assert error.value.field == "outcome" and "utilities must be at most 1e+100" in str(error.value)
    assert engine.to_json() == before


def test_a_correction_to_utilities_the_engine_cannot_learn_from_is_refused():
    engine = _scored()
    engine.settle_scored("d0", utilities=[0.1 * i for i in range(8)])
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        engine.correct("d0", reason="a typo", utilities=[1e200, -1e200] * 4)
    assert error.value.field == "utilities"
    assert engine.to_json() == before


def test_deciding_again_with_other_drafts_is_rejected():
    engine, _ = planned()
    engine.decide("d1", np.tile(EQUAL, (8, 1)))
    assert engine.decide("d1", np.tile(EQUAL, (8, 1))).q == 0.9
    with pytest.raises(DuplicateError, match="decision 'd1' was already decided with other drafts"):
        engine.decide("d1", np.tile([0.4, 0.2, 0.2, 0.2], (8, 1)))


def test_drafts_are_projected_onto_the_mandate_when_asset_groups_are_given():
    engine = MemTrial(investor="conservative")
    for e in "abcd":
        engine.add_experience(e)
    risky, defensive = [True, True, False, False], [False, False, True, True]
    plan = engine.plan("d", 0, 1, retrieved=list("abcd"), reference=EQUAL, risky=risky, defensive=defensive)
    decision = engine.decide(plan.decision_id, np.tile([0.5, 0.3, 0.1, 0.1], (8, 1)))
    np.testing.assert_allclose(decision.drafts[0], [0.3, 0.1, 0.3, 0.3], atol=1e-12)
    assert engine.config.risk_aversion == INVESTORS["conservative"].gamma


def test_asset_groups_without_an_investor_are_rejected():
    engine = new_engine()
    with pytest.raises(ConfigError, match="asset groups need an engine investor"):
        engine.plan("d", 0, 1, retrieved=[], n_assets=2, risky=[True, False], defensive=[False, True])


def test_context_retrieval_takes_the_most_similar_and_breaks_ties_by_insertion_order():
    engine = MemTrial(gamma=2.0, k=2)
    engine.add_experience("far", [0.0, 1.0])
    engine.add_experience("tie-1", [1.0, 0.0])
    engine.add_experience("tie-2", [2.0, 0.0])
    plan = engine.plan("d", 0, 1, context_embedding=[1.0, 0.1], n_assets=2)
    assert plan.experience_ids == ("tie-1", "tie-2")


def test_retired_experiences_are_not_retrievable():
    engine = new_engine()
    engine.retire_experience("e00")
    with pytest.raises(InputError, match="experience 'e00' is retired"):
        engine.plan("d", 0, 1, retrieved=["e00"], n_assets=N_ASSETS)


def test_engine_config_needs_gamma_or_an_investor():
    with pytest.raises(ConfigError, match=r"give gamma or an investor \(whose gamma is used\)"):
        EngineConfig()


def test_the_defaults_are_the_dial_on_the_odd_half_and_the_paper_rule_is_spelled_out():
    config = EngineConfig(gamma=1.0)
    assert (config.action, config.credit, config.gate.test, config.design, config.fallback, config.robust) == (
        ActionRule.DIAL,
        CreditBasis.RAW,
        GateTest.ANYTIME,
        DesignKind.FOLD,
        FallbackVariant.REF,
        False,
    )
    assert all(default_setting(f.name) == getattr(config, f.name) for f in fields(EngineConfig) if f.name != "gamma")
    paper = EngineConfig(gamma=1.0, **PAPER_RULE)
    assert (paper.action, paper.credit, paper.gate, paper.design, paper.fallback, paper.robust) == (
        ActionRule.GATE,
        CreditBasis.CENTRED,
        GateConfig(test="prequential"),
        DesignKind.HALF,
        FallbackVariant.FTRL,
        False,
    )
    with pytest.raises(ConfigError) as error:
        default_setting("gate_test")
    assert error.value.field == "gate_test"


#: an engine configuration as the engine wrote it before the defaults changed (EngineConfig(gamma=5.0) then)
OLD_DEFAULT_CONFIG = {
    "k": 4,
    "design": "half",
    "learner": "auto",
    "gate": {
        "test": "prequential",
        "alpha": 0.05,
        "min_scores": 10,
        "statistic": "pearson",
        "bets": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
    },
    "fallback": "ftrl",
    "investor": None,
    "gamma": 5.0,
    "fee_bp": 15.0,
    "n_components": 8,
    "diagnostics": True,
}


@pytest.mark.parametrize(
    ("stored", "settings"),
    [
        (OLD_DEFAULT_CONFIG, {}),
        ({**OLD_DEFAULT_CONFIG, "robust": True}, {"robust": True}),  # a REST agent's, which turned robust on
        (
            {
                **OLD_DEFAULT_CONFIG,
                "action": "dial",
                "gate": {**OLD_DEFAULT_CONFIG["gate"], "test": "anytime", "min_scores": 1},
            },
            {"action": "dial", "gate": GateConfig(test="anytime")},
        ),
        ({k: v for k, v in OLD_DEFAULT_CONFIG.items() if k != "diagnostics"}, {}),  # a version-1 state's
    ],
    ids=["old_default", "old_robust", "old_dial_centred", "version_one"],
)
def test_a_configuration_stored_under_the_old_defaults_reads_back_as_written(stored, settings):
    """A key left out means the paper's rule it was written under, not today's default; written again,
    the configuration is the same bytes (the diagnostics flag, added later, now written)."""
    config = EngineConfig.from_dict(json.loads(json.dumps(stored)))
    assert config == EngineConfig(gamma=5.0, **{**PAPER_RULE, **settings})
    assert config.to_dict() == {"diagnostics": True, **stored}


def test_a_configuration_of_the_new_defaults_writes_what_differs_from_the_paper_rule_and_round_trips():
    config = EngineConfig(gamma=5.0, robust=True)
    stored = config.to_dict()
    assert (stored["design"], stored["fallback"], stored["gate"]["test"]) == ("fold", "ref", "anytime")
    assert (stored["action"], stored["credit"], stored["robust"]) == ("dial", "raw", True)
    assert EngineConfig.from_dict(json.loads(json.dumps(stored))) == config


def test_a_scored_decision_needs_a_design_that_drafts_its_memory_free_reference():
    engine = MemTrial(gamma=0.0)
    for experience_id in "abcd":
        engine.add_experience(experience_id)
    before = engine.to_json()
    with pytest.raises(ConfigError) as error:
        engine.plan("d", 0, 1, retrieved=list("abcd"), kind="scored")
    assert error.value.field == "design"
    assert str(error.value) == (
        "design: a scored decision's reference is its memory-free draft, which the fold design does not draft; "
        "use design 'half' or 'full'"
    )
    assert engine.to_json() == before  # nothing planned, logged or paid
    for fewer in (list("ab"), []):  # fewer than k retrieved (or none) drafts a full factorial: refused all the same
        with pytest.raises(ConfigError) as error:
            engine.plan("d", 0, 1, retrieved=fewer, kind="scored")
        assert error.value.field == "design"
    assert engine.to_json() == before
    scored = MemTrial(gamma=0.0, design=SCORED_DESIGN)
    for experience_id in "abcd":
        scored.add_experience(experience_id)
    assert scored.plan("d", 0, 1, retrieved=list("abcd"), kind="scored").masks[0] == 0


def test_perturbing_an_outcome_changes_no_decision_made_before_it_matured():
    world = World(seed=4, n_dates=40)
    baseline = run(new_engine(learner="identity", gate=GateConfig(test="none")), world, range(40))
    perturbed_date = 15  # matures at 16.5: first usable by the decision at 17
    shock = {perturbed_date: world.rel[perturbed_date] * np.array([1.3, 0.7, 1.1, 0.9])}
    perturbed = run(new_engine(learner="identity", gate=GateConfig(test="none")), world, range(40), rel_override=shock)
    for t in range(17):
        np.testing.assert_array_equal(baseline[t].weights, perturbed[t].weights)
    assert any(not np.array_equal(baseline[t].weights, perturbed[t].weights) for t in range(17, 40))


@pytest.mark.parametrize("defaults", [False, True], ids=["paper_rule_anytime", "defaults"])
def test_state_json_round_trip_reproduces_the_same_future_decisions(defaults):
    world = World(seed=5, n_dates=70)
    if defaults:  # the dial on raw contrasts over the odd half, closed on the reference
        engine = MemTrial(gamma=5.0)
        for experience_id in TYPES:
            engine.add_experience(experience_id)
    else:
        engine = new_engine(gate=GateConfig(test="anytime"))
    run(engine, world, range(40))
    text = engine.to_json()
    restored = MemTrial.from_json(text)
    assert restored.to_json() == text and restored.config == engine.config
    original_future = run(engine, world, range(40, 70))
    restored_future = run(restored, world, range(40, 70))
    for first, second in zip(original_future, restored_future, strict=True):
        assert first.to_dict() == second.to_dict()
    assert engine.to_json() == restored.to_json()
    assert restored.verify().ok


def test_state_with_a_changed_gate_config_is_rejected():
    engine = new_engine()
    text = engine.to_json().replace('"alpha":0.05', '"alpha":0.2')
    with pytest.raises(StateError, match="the gate configuration does not match its registered hash"):
        MemTrial.from_json(text)


def test_state_that_is_not_json_is_rejected():
    with pytest.raises(StateError, match="state is not valid JSON"):
        MemTrial.from_json("{")


def test_datetime_times_round_trip():
    import datetime as dt

    engine = new_engine()
    start = dt.datetime(2024, 1, 31, 16, 0, tzinfo=dt.UTC)
    engine.plan("d", start, start + dt.timedelta(days=28), retrieved=["e00", "e01"], n_assets=N_ASSETS)
    restored = MemTrial.from_json(engine.to_json())
    assert restored.get_plan("d").maturity == start + dt.timedelta(days=28)
    assert restored.clock == start


def test_reference_of_another_size_than_n_assets_is_rejected():
    with pytest.raises(InputError, match="n_assets is 3 but reference has 4 weights"):
        new_engine().plan("d", 0, 1, retrieved=[], n_assets=3, reference=EQUAL)


def test_bad_prices_at_settlement_leave_the_state_untouched():
    engine, plan = planned()
    engine.decide("d1", World(seed=0).drafts(0, plan.subsets))
    before = engine.to_json()
    with pytest.raises(InputError, match="rel_prices must be finite and > 0"):
        engine.settle("d1", np.full((20, N_ASSETS), np.nan))
    assert engine.to_json() == before


def test_state_without_embeddings_restores_with_embeddings_given_back():
    engine = MemTrial(gamma=2.0, k=2, learner="content")
    vectors = {"a": [1.0, 0.0, 0.5], "b": [0.0, 1.0, 0.1], "c": [0.3, 0.3, 0.9]}
    for experience_id, vector in vectors.items():
        engine.add_experience(experience_id, vector)
    text = engine.to_json(embeddings=False)
    assert "0.9" not in text
    restored = MemTrial.from_json(text, embeddings=vectors)
    assert restored.to_json() == engine.to_json()
    # without them it restored silently with none: every retrieval by context embedding then found nothing
    with pytest.raises(StateError) as error:
        MemTrial.from_json(text)
    assert error.value.field == "embeddings" and "pass them back as embeddings={id: vector}" in str(error.value)
    bare = MemTrial(gamma=2.0)
    bare.add_experience("a")  # never had one: {} says so
    assert MemTrial.from_json(bare.to_json(embeddings=False), embeddings={}).to_json() == bare.to_json()


def test_pruned_decisions_are_forgotten_but_their_learning_stays():
    world = World(seed=6, n_dates=12)
    engine = new_engine()
    run(engine, world, range(12))
    values = engine.values()
    assert engine.prune_settled() == 10
    assert len(engine.entries) == 2
    assert engine.values() == values
    with pytest.raises(UnknownDecisionError):
        engine.get_plan("d000")
    restored = MemTrial.from_json(engine.to_json())
    assert restored.values() == values
    # a pruned id is not planned again (the log would hold two predictions and scores dated alike), here or
    # in the restored engine; the log stays whole
    for kept in (engine, restored):
        before = kept.to_json()
        with pytest.raises(DuplicateError) as error:
            kept.plan("d000", 100, 101, retrieved=["e00"], n_assets=N_ASSETS)
        assert error.value.field == "decision_id" and "pruned since" in str(error.value)
        assert kept.to_json() == before and kept.verify().ok


def test_engine_state_value_continues_as_the_json_state_does_and_holds_no_engine():
    import dataclasses

    from memtrial.engine.state import EngineState, encode_state

    engine = new_engine()
    run(engine, World(3), range(12))
    state = engine.state()
    assert isinstance(state, EngineState) and dataclasses.is_dataclass(state)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.clock = None  # type: ignore[misc]
    assert encode_state(state) == engine.to_dict()
    again = MemTrial.from_state(state)
    assert again.to_json() == engine.to_json()
    assert engine.state(history=False).history is None
    assert MemTrial.from_json(engine.to_json(history=False)).to_json(history=False) == engine.to_json(history=False)


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        (lambda e: e.add_experience("x", []), "embedding", "embedding must be a non-empty 1-d vector of numbers"),
        (lambda e: e.add_experience("x", "abc"), "embedding", "embedding must be a 1-d vector of numbers, got 'abc'"),
        (lambda e: e.add_experience("x", [[1.0, 0.0]]), "embedding", "embedding must be a non-empty 1-d vector"),
        (lambda e: e.add_experience("x", [1e200, 0.0]), "embedding", "embedding must have a finite length"),
        (
            lambda e: e.add_experience("x", [1.0, 0.0, 0.0]),
            "embedding",
            "embedding of 'x' has 3 dimensions, expected 2",
        ),
        (lambda e: e.update_experience("a", [1e200, 0.0]), "embedding", "embedding must have a finite length"),
        (lambda e: e.add_experience(""), "experience_id", "experience_id must be a non-empty str"),
        (lambda e: e.add_experience("\ud800"), "experience_id", "experience_id must be text UTF-8 can write"),
        (
            lambda e: e.plan("\udc00", 0, 1, retrieved=["a"], kind="scored"),
            "decision_id",
            "decision_id must be text UTF-8 can write",
        ),
        (
            lambda e: e.plan("d", 0, 1, context_embedding=[1e200, 0.0], kind="scored"),
            "context_embedding",
            "context_embedding must have a finite length",
        ),
    ],
)
def test_embeddings_and_ids_the_state_cannot_hold_are_refused_naming_the_field(call, field, message):
    # an empty embedding fixed every later one's dimension at 0; an overflowing norm made similarities NaN or
    # wrong; a lone surrogate was taken, then the state could not be written
    engine = MemTrial(gamma=5.0)
    engine.add_experience("a", [1.0, 0.0])
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        call(engine)
    assert error.value.field == field and str(error.value).startswith(message), str(error.value)
    assert engine.to_json() == before


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        (lambda e: e.plan("d", 0, float("nan"), retrieved=["a"], kind="scored"), "maturity", "maturity must be finite"),
        (lambda e: e.plan("d", float("inf"), 1, retrieved=["a"], kind="scored"), "time", "a time must be finite"),
        (lambda e: e.plan("d", 0, "soon", retrieved=["a"], kind="scored"), "maturity", "maturity must be an int"),
    ],
)
def test_a_time_that_is_not_one_is_refused_naming_its_parameter(call, field, message):
    engine = MemTrial(gamma=5.0)
    engine.add_experience("a")
    with pytest.raises(InputError) as error:
        call(engine)
    assert error.value.field == field and str(error.value).startswith(message), str(error.value)


def test_a_settlement_time_that_is_not_one_is_refused_naming_at():
    engine = MemTrial(gamma=5.0, design="half")  # a scored plan drafts its memory-free reference
    engine.add_experience("a")
    plan = engine.plan("d", 0, 1, retrieved=["a"], kind="scored")
    engine.decide_scored("d", n_drafts=len(plan.masks))
    with pytest.raises(InputError) as error:
        engine.settle_scored("d", utilities=[0.0] * len(plan.masks), at=float("nan"))
    assert (error.value.field, str(error.value)) == ("at", "at must be finite, got nan")


def test_a_state_written_before_an_input_rule_existed_still_loads():
    # an empty id and an empty embedding were accepted once; the state that holds them must load as written
    engine = MemTrial(gamma=5.0)
    engine.add_experience("a", [1.0, 0.0])
    for experiences in ([["", [1.0, 0.0], True]], [["b", [], True]]):
        old = {**json.loads(engine.to_json()), "experiences": experiences}
        restored = MemTrial.from_dict(old)
        assert list(restored.experiences) == [experiences[0][0]]
        assert MemTrial.from_dict(json.loads(restored.to_json())).to_json() == restored.to_json()


def test_draft_numbers_the_engine_cannot_blend_are_refused_naming_drafts_and_nothing_changes():
    engine = MemTrial(EngineConfig(investor="balanced", design="half"))
    for e in "abcd":
        engine.add_experience(e)
    plan = engine.plan("d0", 0, 1, retrieved=list("abcd"), kind="scored")
    before = engine.to_json()
    with pytest.raises(InputError) as error:  # each finite, their blend not: it overflowed, then failed to save
        engine.decide_scored("d0", vectors=[[1e308]] + [[-1e308]] * (len(plan.masks) - 1))
    assert error.value.field == "drafts" and str(error.value).startswith(
        "drafts: every number must be at most 1e+100 in absolute value"
    )
    assert engine.to_json() == before


@pytest.mark.parametrize(
    ("vectors", "got"),
    [
        ([[0.5, 0.5]] * 7, "got 7 rows"),
        ([0.5] * 8, "got a flat list of 8 numbers, not rows"),
        (0.5, "got a single number"),
        ([[0.5, float("inf")]] * 8, "got a number that is not finite"),
    ],
)
def test_scored_vectors_of_the_wrong_rows_are_refused_saying_what_came_in_words(vectors, got):
    """The message said what came as a NumPy shape (``got shape (7, 2)``), which a REST caller never sent."""
    engine = MemTrial(EngineConfig(investor="balanced", design="half"))
    for e in "abcd":
        engine.add_experience(e)
    engine.plan("d0", 0, 1, retrieved=list("abcd"), kind="scored")
    with pytest.raises(InputError) as error:
        engine.decide_scored("d0", vectors=vectors)
    assert error.value.field == "drafts" and str(error.value) == (
        f"vectors must be finite with one row per designed subset (8), {got}"
    )


def test_under_a_budget_the_log_counts_the_calls_of_a_plan_without_experiences():
    # a retrieval that found nothing drafts without memory: its call is paid from the budget and logged
    engine = MemTrial(gamma=5.0, draft_budget=3, design=SCORED_DESIGN)
    for e in "abcd":
        engine.add_experience(e)
    made = 0
    for t, retrieved in enumerate([[], ["a", "b"], [], ["a", "b", "c", "d"]]):
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        made += plan.draft_calls
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        engine.settle_scored(f"d{t}", utilities=[0.01 * i for i in range(len(plan.masks))])
    logged = [e.payload.get("details", e.payload).get("draft_calls", 0) for e in engine.history.log_entries()]
    assert sum(logged) == made and engine.verify().ok


@pytest.mark.parametrize("design", ["half", "fold"])
def test_one_experience_per_decision_under_a_half_fraction_is_refused_naming_k(design):
    """A half fraction of one factor is one run, which never contrasts the experience with its absence: every
    decision retrieving it was accepted, then could never be settled. The designs of two runs take k = 1."""
    with pytest.raises(ConfigError) as refused:
        EngineConfig(investor="balanced", k=1, design=design)
    assert refused.value.field == "k" and f"k = 1 leaves the design '{design}' one run" in str(refused.value)
    for two_runs in ("full", "saturated"):
        engine = MemTrial(EngineConfig(investor="balanced", k=1, design=two_runs))
        engine.add_experience("the only lesson")
        plan = engine.plan("d", time=0, maturity=1, retrieved=["the only lesson"], n_assets=2)
        engine.decide("d", np.array([[0.5, 0.5], [0.9, 0.1]][: len(plan.subsets)]))
        assert engine.settle("d", np.array([[1.01, 1.0]])).contributions.keys() == {"the only lesson"}


def test_a_scored_forecast_at_no_trust_plays_its_reference_draft_as_it_is_and_knows_its_utility():
    """At trust weight 0 with the reference as the closed share, the blend is exactly the reference draft:
    the decision says it plays that draft (``played``), as answers that cannot be blended already did, and a
    settlement by the drafts' utilities knows the chosen utility (it was None, 'a blend')."""
    from memtrial.engine.config import SCORED_DESIGN

    engine = MemTrial(EngineConfig(gamma=0.0, design=SCORED_DESIGN))
    for lesson in ("a", "b", "c", "d"):
        engine.add_experience(lesson)
    plan = engine.plan("q", time=0, maturity=1, retrieved=["a", "b", "c", "d"], kind="scored")
    rng = np.random.default_rng(2)
    decision = engine.decide_scored("q", vectors=rng.dirichlet(np.ones(3), size=len(plan.subsets)), reference=3)
    assert decision.dial is not None and decision.dial.trust_weight == 0.0
    assert decision.played == 3 and np.array_equal(decision.weights, decision.drafts[3])
    utilities = rng.normal(size=len(plan.subsets))
    settled = engine.settle_scored("q", utilities=utilities)
    assert settled.chosen_utility == settled.reference_utility == utilities[3]


@pytest.mark.parametrize(
    "given,field,message",
    [
        ({"reference": [[0.5, 0.5]]}, "reference", "reference must be one weight per asset (a non-empty flat list"),
        ({"reference": 1.0}, "reference", "reference must be one weight per asset"),
        ({"reference": ["a", "b"]}, "reference", "reference must be one weight per asset"),
        ({"previous": [[0.5, 0.5]], "n_assets": 2}, "previous", "previous must be one weight per asset"),
        (
            {"n_assets": "2"},
            "n_assets",
            "n_assets must be an integer in [1, 1,000,000] (the number of assets), got '2'",
        ),
        ({"n_assets": -1}, "n_assets", "n_assets must be an integer in [1, 1,000,000]"),
        ({"n_assets": True}, "n_assets", "n_assets must be an integer in [1, 1,000,000]"),
        ({"n_assets": 10**9}, "n_assets", "n_assets must be an integer in [1, 1,000,000]"),
        ({"n_assets": 2, "risky": [2, 0], "defensive": [0, 1]}, "risky", "risky must be one flag per asset (2:"),
        ({"n_assets": 2, "risky": [1, 0], "defensive": [0, 1, 0]}, "defensive", "defensive must be one flag per asset"),
    ],
)
def test_a_plans_universe_read_the_wrong_way_is_refused_naming_it_and_nothing_changes(given, field, message):
    """A nested reference was stored as a one-asset plan the engine could then never write (to_json raised a
    TypeError ever after); a number as n_assets, or numbers as asset flags, were read silently."""
    engine = MemTrial(EngineConfig(investor="balanced"))
    for lesson in ("a", "b"):
        engine.add_experience(lesson)
    before = engine.to_json()
    with pytest.raises(InputError) as refused:
        engine.plan("d", time=0, maturity=1, retrieved=["a", "b"], **given)
    assert refused.value.field == field and message in str(refused.value)
    assert engine.to_json() == before


def test_a_stored_engine_of_k_1_under_a_half_fraction_loads_and_refuses_only_its_unsettleable_plans():
    """Made before the rule, such an engine (and its agent's data) still reads back; a plan that retrieves its
    one experience is refused naming k, as it could never be settled, and a plan without memory goes on."""
    import json

    stored = json.loads(MemTrial(EngineConfig(investor="balanced", k=1, design="full")).to_json())
    stored["config"]["design"] = "fold"  # as the release before wrote an agent made with k = 1
    engine = MemTrial.from_json(json.dumps(stored))
    assert (engine.config.k, engine.config.design.value) == (1, "fold")
    engine.add_experience("the only lesson")
    before = engine.to_json()
    with pytest.raises(ConfigError) as refused:
        engine.plan("d", time=0, maturity=1, retrieved=["the only lesson"], n_assets=2)
    assert refused.value.field == "k" and "could never be settled" in str(refused.value)
    assert engine.to_json() == before
    assert engine.plan("d", time=0, maturity=1, retrieved=[], n_assets=2).subsets == ((),)


def test_drafts_and_settings_that_are_not_numbers_are_refused_naming_them():
    """Plain Python errors before (a ValueError, an AttributeError), or a TypeError only at the first decision."""
    with pytest.raises(ConfigError) as refused:
        EngineConfig(investor="balanced", gate="anytime")
    assert refused.value.field == "gate"
    with pytest.raises(ConfigError) as refused:
        EngineConfig(investor="balanced", n_components=1.5)
    assert refused.value.field == "n_components"
    engine = MemTrial(EngineConfig(investor="balanced", design="half"))
    for lesson in "abcd":
        engine.add_experience(lesson)
    plan = engine.plan("d", time=0, maturity=1, retrieved=list("abcd"), n_assets=2)
    scored = engine.plan("s", time=0, maturity=1, retrieved=list("abcd"), kind="scored")
    before = engine.to_json()
    for drafts in ([["a", "b"]] * len(plan.subsets), [[0.5, 0.5], [1.0]] * (len(plan.subsets) // 2)):
        with pytest.raises(InputError) as refused:
            engine.decide("d", drafts)
        assert refused.value.field == "drafts" and "one row of 2 weights per designed subset" in str(refused.value)
    with pytest.raises(InputError) as refused:
        engine.decide_scored("s", vectors=[["a"]] * len(scored.subsets))
    assert refused.value.field == "drafts"
    assert engine.to_json() == before


@pytest.mark.parametrize(
    "rel_prices,message",
    [
        ([[1e200, 1.0, 1.0]], "rel_prices must be at most 1e+50"),  # named utilities, after overflow warnings
        ("abc", "rel_prices must be closes relative to the entry close"),  # a ValueError
    ],
)
def test_closes_the_engine_cannot_score_are_refused_naming_rel_prices(rel_prices, message):
    engine = MemTrial(EngineConfig(investor="balanced"))
    for lesson in "abcd":
        engine.add_experience(lesson)
    plan = engine.plan("d", time=0, maturity=1, retrieved=list("abcd"), n_assets=3)
    engine.decide("d", np.random.default_rng(0).dirichlet(np.ones(3), size=len(plan.subsets)))
    before = engine.to_json()
    with pytest.raises(InputError) as refused:
        engine.settle("d", rel_prices)
    assert refused.value.field == "rel_prices" and message in str(refused.value)
    assert engine.to_json() == before


@pytest.mark.parametrize("gamma", [1e200, 1e308, True, -1.0])
def test_a_risk_aversion_the_utilities_cannot_hold_is_refused_naming_gamma(gamma):
    """gamma = 1e200 was taken: the first settlement passed, then every plan was refused ("predictions must
    be finite"), for good."""
    with pytest.raises(ConfigError) as refused:
        EngineConfig(gamma=gamma)
    assert refused.value.field == "gamma" and "gamma must be a risk aversion in [0, 1e+06]" in str(refused.value)
    assert EngineConfig(gamma=1e6).gamma == 1e6


def test_a_stored_engine_made_before_the_new_configuration_rules_reads_back_and_changes_its_settings():
    """The rules on new configurations (k = 1 under a half fraction, gamma at most 1e6, a whole n_components)
    refused states made before them: the engine (and its agent) could not be read, or its settings not changed."""
    import json

    for changed in ({"k": 1, "design": "half"}, {"gamma": 1e7}, {"n_components": 8.0}):
        stored = json.loads(MemTrial(EngineConfig(investor="balanced", k=1, design="full")).to_json())
        stored["config"].update(changed)  # as an earlier release wrote it
        engine = MemTrial.from_json(json.dumps(stored))
        engine.change_settings({"draft_budget": 10.0})
        engine.change_settings({"retrieval": "similarity"})
        assert engine.config.draft_budget == 10.0
        assert MemTrial.from_json(engine.to_json()).config == engine.config
    with pytest.raises(ConfigError):
        EngineConfig(investor="balanced", n_components=8.0)  # a new one is held to the rule
    assert EngineConfig(investor="balanced", n_components=np.int64(8)).n_components == 8


def test_times_of_two_kinds_are_refused_naming_the_argument_that_brought_the_other_kind():
    """A settlement time of another kind than the maturity was refused naming ``time``, a plan's argument."""
    import datetime as dt

    engine = MemTrial(EngineConfig(investor="balanced"))
    for e in "abcd":
        engine.add_experience(e)
    plan = engine.plan("d0", 0, 1, retrieved=list("abcd"), n_assets=3)
    engine.decide("d0", np.full((len(plan.masks), 3), 1 / 3))
    when = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    with pytest.raises(InputError) as error:
        engine.settle("d0", np.ones((2, 3)), at=when)
    assert error.value.field == "at" and "(mix of time types)" in str(error.value)
    with pytest.raises(InputError) as error:
        engine.plan("d1", when, when, retrieved=list("abcd"), n_assets=3)
    assert error.value.field == "time"


def _stage(stage):
    """An engine with four experiences and a portfolio decision ``p`` up to ``stage`` (planned, decided,
    settled), and a scored decision ``s`` planned (and decided from ``settled`` on)."""
    engine = MemTrial(gamma=5.0, design="half")
    for experience_id in "abcd":
        engine.add_experience(experience_id, [1.0, 0.0])
    plan = engine.plan("p", 0, 1, retrieved=list("abcd"), n_assets=2)
    if stage in ("decided", "settled"):
        engine.decide("p", np.full((len(plan.masks), 2), 0.5))
    if stage == "settled":
        engine.settle("p", np.ones((3, 2)))
    scored = engine.plan("s", 2, 3, retrieved=list("abcd"), kind="scored")
    if stage == "settled":
        engine.decide_scored("s", n_drafts=len(scored.masks))
    return engine, len(plan.masks)


@pytest.mark.parametrize(
    ("stage", "call", "field"),
    [
        ("planned", lambda e, n: e.plan("q", 2, 3, retrieved=["a"], reference=["0.5", "0.5"]), "reference"),
        ("planned", lambda e, n: e.decide("p", [["0.5", "0.5"]] * n), "drafts"),
        ("planned", lambda e, n: e.decide("p", np.full((n, 2), True)), "drafts"),
        ("decided", lambda e, n: e.settle("p", [[True, True]] * 3), "rel_prices"),
        ("decided", lambda e, n: e.settle("p", [["1", "1"]] * 3), "rel_prices"),
        ("planned", lambda e, n: e.decide_scored("s", vectors=[["0.5"]] * n), "drafts"),
        ("settled", lambda e, n: e.settle_scored("s", utilities=["1"] * n), "utilities"),
        ("settled", lambda e, n: e.settle_scored("s", utilities=[True] * n), "utilities"),
        ("settled", lambda e, n: e.correct("p", reason="x", rel_prices=[["1", "1"]] * 3), "rel_prices"),
        ("planned", lambda e, n: e.add_experience("z", ["1", "0"]), "embedding"),
        ("planned", lambda e, n: e.add_experience("z", [True, False]), "embedding"),
        (
            "planned",
            lambda e, n: e.add_experience("z", np.array([True, 0.0], dtype=object)),
            "embedding",
        ),
        ("planned", lambda e, n: e.plan("q", 2, 3, context_embedding="hello"), "context_embedding"),
        ("planned", lambda e, n: e.plan("q", 2, 3, context_embedding=[float("nan"), 0.0]), "context_embedding"),
        ("planned", lambda e, n: e.plan("q", 2, 3, retrieved=5), "retrieved"),
        ("planned", lambda e, n: e.plan("q", 2, 3, candidates=5), "candidates"),
        ("planned", lambda e, n: e.plan("q", 2, 3, retrieved=np.array(5)), "retrieved"),
    ],
)
def test_texts_true_false_and_non_lists_are_no_numbers_and_change_nothing(stage, call, field):
    """NumPy reads "0.5" as 0.5 and True as 1.0: the engine refuses both wherever it takes numbers (as it does
    similarities), and a number where a list of ids belongs, naming the field and leaving its state as it was."""
    engine, n = _stage(stage)
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        call(engine, n)
    assert error.value.field == field, str(error.value)
    assert engine.to_json() == before


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"a": [1.0, 0.0]}, "embeddings: the state left out the embeddings of ['b']"),
        ({}, "embeddings: the state left out the embeddings of ['a', 'b']"),
        ({"a": [1.0, 0.0], "b": [0.0, 1.0, 0.0]}, "embeddings must all have one length, got lengths [2, 3]"),
    ],
)
def test_a_restore_takes_back_every_embedding_the_state_left_out(given, message):
    """A state written without its embeddings lists whose it left out: a restore missing one (retrieval would
    never find it again) or of two lengths is refused naming embeddings; those restore the engine, bit for bit."""
    engine = MemTrial(gamma=5.0)
    engine.add_experience("a", [1.0, 0.0])
    engine.add_experience("b", [0.0, 1.0])
    engine.add_experience("c")
    text = engine.to_json(embeddings=False)
    with pytest.raises(StateError) as error:
        MemTrial.from_json(text, embeddings=given)
    assert error.value.field == "embeddings" and str(error.value).startswith(message), str(error.value)
    restored = MemTrial.from_json(text, embeddings={"a": [1.0, 0.0], "b": [0.0, 1.0]})
    assert restored.to_json() == engine.to_json()
    assert restored.plan("d", 0, 1, context_embedding=[0.0, 1.0], n_assets=2).experience_ids == ("b", "a")


def test_a_settlement_sent_again_checks_its_time_too():
    """Settling again with the same outcome answers the settlement made (a retry); its ``at`` is still checked,
    so a time that is none, or one before the maturity, is refused there as on the first settlement."""
    engine, _ = _stage("settled")
    same = engine.settle("p", np.ones((3, 2)))
    assert same == engine.settle("p", np.ones((3, 2)), at=5)
    for at, kind in (("junk", InputError), (0, PrematureSettlementError)):
        with pytest.raises(kind) as error:
            engine.settle("p", np.ones((3, 2)), at=at)
        assert error.value.field == "at", str(error.value)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: EngineConfig(gamma="1"), "gamma"),
        (lambda: EngineConfig(gamma=1j), "gamma"),
        (lambda: EngineConfig(gamma=1.0, fee_bp="x"), "fee_bp"),
        (lambda: EngineConfig(gamma=1.0, fee_bp=None), "fee_bp"),
        (lambda: EngineConfig(gamma=1.0, fee_bp=True), "fee_bp"),
        (lambda: EngineConfig(investor=5), "investor"),
        (lambda: EngineConfig(gamma=1.0, diagnostics="no"), "diagnostics"),
        (lambda: MemTrial(gamma=1.0, bogus=3), "bogus"),
        (lambda: MemTrial({"gamma": 1.0}), "config"),
    ],
)
def test_settings_of_the_wrong_kind_are_refused_as_settings(make, field):
    """A text, a flag or None where a number belongs, an investor that is none, a setting no engine has: a
    ConfigError naming it, not NumPy's or Python's own error."""
    with pytest.raises(ConfigError) as error:
        make()
    assert error.value.field == field, str(error.value)
    assert EngineConfig(gamma=np.float64(2.0), fee_bp=np.int64(10)).gamma == 2.0  # NumPy's numbers are numbers


def test_numpy_numbers_are_numbers_for_the_budget_and_the_gate_too():
    config = EngineConfig(investor="balanced", draft_budget=np.float32(3), draft_horizon=np.int64(5))
    assert (config.draft_budget, config.draft_horizon) == (3.0, 5) and type(config.draft_horizon) is int
    gate = GateConfig(test="anytime", min_scores=np.int64(2), alpha=np.float64(0.05))
    assert (gate.min_scores, gate.alpha) == (2, 0.05) and type(gate.min_scores) is int
    for flag in (True, np.bool_(True)):  # a NumPy flag stays a flag
        with pytest.raises(ConfigError, match="min_scores must be an integer >= 1"):
            GateConfig(test="anytime", min_scores=flag)
        with pytest.raises(ConfigError, match="draft_horizon must be a number of decisions"):
            EngineConfig(investor="balanced", draft_budget=3.0, draft_horizon=flag)


def test_settings_changed_by_a_list_are_refused_as_not_a_mapping():
    engine = MemTrial(gamma=5.0)
    before = engine.to_json()
    with pytest.raises(ConfigError) as error:
        engine.change_settings([("retrieval", "similarity")])
    assert error.value.field == "changes" and str(error.value).startswith("changes must be a mapping")
    assert engine.to_json() == before


def test_an_id_of_a_list_that_is_no_id_is_named_as_one_of_the_list():
    engine, _ = _stage("planned")
    for call, field in (
        (lambda: engine.plan("q", 2, 3, retrieved=[1.5]), "retrieved"),
        (lambda: engine.rank([None], k=1), "candidate_ids"),
    ):
        with pytest.raises(InputError) as error:
            call()
        assert error.value.field == field and str(error.value).startswith(f"{field}: each id must be a str or int")


def test_a_withdrawal_without_words_is_refused_as_a_release_or_correction_without_them_is():
    engine, _ = _stage("planned")
    before = engine.to_json()
    for reason in ("", "   ", "\n\t", "the drafter \ud800"):  # the last: a lone surrogate the log cannot record
        with pytest.raises(InputError) as error:
            engine.withdraw("p", reason)
        assert error.value.field == "reason"
    assert engine.to_json() == before
    engine.withdraw("p", "the drafter failed")
    settled, _ = _stage("settled")
    before = settled.to_json()
    with pytest.raises(InputError) as error:
        settled.correct("p", reason="a typo \udc80", rel_prices=np.full((3, 2), 1.01))
    assert error.value.field == "reason" and settled.to_json() == before


def test_a_call_s_choice_that_is_none_of_its_values_is_an_input_error_quoting_what_was_given():
    """kind and rule are a call's arguments, not settings: InputError (not ConfigError), the value as given."""
    engine, _ = _stage("settled")
    with pytest.raises(InputError) as error:
        engine.plan("q", 4, 5, retrieved=["a"], kind="bogus")
    assert error.value.field == "kind" and "got 'bogus'" in str(error.value)
    for rule, quoted in (("bogus", "'bogus'"), (5, "got 5")):
        with pytest.raises(InputError) as error:
            engine.settle_scored("s", outcome=0, rule=rule)
        assert error.value.field == "rule" and quoted in str(error.value)


def test_rows_given_as_arrays_are_read_from_their_dtypes():
    from memtrial.records import text_or_flag

    assert not text_or_flag([np.zeros(3), np.ones(3)]) and not text_or_flag([np.zeros(3, dtype=np.int64)])
    assert text_or_flag([np.zeros(3), np.array(["0.5"])]) and text_or_flag([np.zeros(2), np.array([True, False])])
    assert text_or_flag([np.zeros(2), [True, 0.0]])  # a list among the arrays is read item by item


def test_numpy_numbers_are_taken_as_the_same_numbers_given_by_hand():
    """Times, k, a scored reference and a settlement time taken from an array (np.int64) are the numbers
    themselves: the engine behaves, and writes its state, exactly as with Python's."""

    def run(number):
        engine = MemTrial(EngineConfig(gamma=5.0, design="half", k=number(4)))
        for experience_id in "abcd":
            engine.add_experience(experience_id, [1.0, 0.0])
        plan = engine.plan("s", number(2), number(3), retrieved=list("abcd"), kind="scored")
        engine.decide_scored("s", n_drafts=number(len(plan.masks)), reference=number(0))
        engine.settle_scored("s", utilities=[0.5] * len(plan.masks), at=number(3))
        ranked = engine.rank(list("abcd"), k=number(2))
        return engine.to_json(), [r.experience_id for r in ranked]

    assert run(np.int64) == run(int)
    with pytest.raises(InputError):  # a NumPy flag is still no time
        MemTrial(gamma=5.0).plan("d", np.bool_(True), 2, retrieved=[], kind="scored")


def test_a_rule_for_numbers_on_vector_drafts_is_refused_naming_the_rule_and_the_drafts_count():
    engine = MemTrial(gamma=5.0, design="half")
    engine.add_experience("a")
    plan = engine.plan("s", 0, 1, retrieved=["a"], kind="scored")
    engine.decide_scored("s", vectors=np.full((len(plan.masks), 3), 1 / 3))
    before = engine.to_json()
    with pytest.raises(InputError) as error:
        engine.settle_scored("s", outcome=0.5, rule="abs_error")
    assert error.value.field == "rule" and f"this decision's {len(plan.masks)} drafts are vectors of length 3" in str(
        error.value
    )
    assert engine.to_json() == before


def _buffered_run(copy: bool) -> str:
    """A portfolio agent and a scored one whose embeddings, references and drafts come from one reused buffer
    each (``copy``: a copy of the buffer is passed instead); the state written at the end."""
    rng = np.random.default_rng(3)
    engine = MemTrial(EngineConfig(investor="balanced"))
    scored = MemTrial(EngineConfig(gamma=0.0, design=SCORED_DESIGN))
    vector, reference, drafts, vectors = np.empty(6), np.empty(3), np.empty((8, 3)), np.empty((8, 3))
    for lesson in ("bonds after a rate shock", "equity momentum", "cash in drawdowns", "gold as a hedge"):
        vector[:] = rng.normal(size=6)
        engine.add_experience(lesson, vector.copy() if copy else vector)
        scored.add_experience(lesson, vector.copy() if copy else vector)
    for t in range(3):
        reference[:] = rng.dirichlet(np.ones(3))
        engine.plan(
            f"m{t}", t, t + 1, retrieved=list(engine.experiences), reference=reference.copy() if copy else reference
        )
        drafts[:] = rng.dirichlet(np.ones(3), size=8)
        engine.decide(f"m{t}", drafts.copy() if copy else drafts)
        plan = scored.plan(f"s{t}", t, t + 1, retrieved=list(scored.experiences), kind="scored")
        vectors[: len(plan.masks)] = rng.dirichlet(np.ones(3), size=len(plan.masks))
        given = vectors[: len(plan.masks)]
        scored.decide_scored(f"s{t}", vectors=given.copy() if copy else given)
    for t in range(3):
        engine.settle(f"m{t}", np.cumprod(1 + rng.normal(0.0004, 0.01, size=(5, 3)), axis=0))
        scored.settle_scored(f"s{t}", outcome=t % 3, rule="brier")
    return engine.to_json() + scored.to_json()


def test_an_agent_reusing_its_buffers_changes_nothing_the_engine_kept():
    # embeddings, references and drafts are the engine's own once given: refilling the caller's array for the
    # next experience or decision leaves what was registered, planned and decided as it was
    assert _buffered_run(copy=False) == _buffered_run(copy=True)


def test_a_scored_outcome_from_numpy_is_the_same_outcome_and_the_state_still_writes():
    # an outcome from an argmax is np.int64, a number read from an array np.float32: each is settled,
    # corrected and written exactly as the Python number
    def run(index, number):
        engine = MemTrial(EngineConfig(gamma=0.0, design=SCORED_DESIGN))
        for lesson in ("rate cuts lift stocks", "tariffs hurt", "holidays are calm", "earnings beats lift stocks"):
            engine.add_experience(lesson)
        rng = np.random.default_rng(0)
        for t, rule in enumerate(("brier", "log")):
            plan = engine.plan(f"q{t}", t, t + 1, retrieved=list(engine.experiences), kind="scored")
            engine.decide_scored(f"q{t}", vectors=rng.dirichlet(np.ones(3), size=len(plan.masks)))
            engine.settle_scored(f"q{t}", outcome=index(2), rule=rule)
        engine.correct("q0", outcome=index(1), rule="brier", reason="mis-graded")
        plan = engine.plan("n", 5, 6, retrieved=list(engine.experiences), kind="scored")
        engine.decide_scored("n", vectors=rng.normal(size=(len(plan.masks), 1)))
        engine.settle_scored("n", outcome=number(0.5), rule="abs_error")
        return engine.to_json()

    assert run(np.int64, np.float32) == run(int, float)


def test_numpy_numbers_in_quarantine_settings_and_call_reservations_are_the_numbers_they_hold():
    from memtrial.curation import QuarantineConfig

    assert QuarantineConfig(enabled=True, level=np.float64(0.1), spread=np.int64(30)) == QuarantineConfig(
        enabled=True, level=0.1, spread=30.0
    )
    engine = MemTrial(EngineConfig(investor="balanced", draft_budget=3, quarantine=QuarantineConfig(enabled=True)))
    engine.change_settings({"quarantine": {"enabled": True, "level": np.float64(0.1)}})
    assert engine.config.quarantine.level == 0.1
    engine.add_experience("a")
    engine.plan("d", 0, 1, retrieved=["a"], n_assets=2)
    granted = engine.reserve_calls(np.int64(2))
    engine.release_calls("d", np.int64(granted), np.int64(0))
    with pytest.raises(InputError) as error:  # an id is kept as given: a NumPy integer would not write
        engine.add_experience(np.int64(7))
    assert error.value.field == "experience_id" and "give int(id)" in str(error.value)


def test_a_state_that_is_no_text_or_embeddings_given_back_that_are_no_vectors_are_refused_naming_the_field():
    engine = MemTrial(EngineConfig(investor="balanced"))
    engine.add_experience("x", np.ones(8))
    engine.add_experience("y", np.ones(8))
    state = engine.to_json(embeddings=False)
    for given, message in (
        ({"x": [np.nan] * 8, "y": np.ones(8)}, "embeddings['x']: embeddings must be finite"),
        ({"x": np.ones(8), "y": ["a"] * 8}, "embeddings['y']: embeddings must be a vector of numbers"),
        ({"x": 3.0, "y": np.ones(8)}, "embeddings['x']: embeddings must be a non-empty 1-d vector"),
        ({"x": np.ones(8), "y": []}, "embeddings['y']: embeddings must be a non-empty 1-d vector"),
    ):
        with pytest.raises(StateError) as error:
            MemTrial.from_json(state, embeddings=given)
        assert error.value.field == "embeddings" and message in str(error.value)
    for text in (None, 3, {"version": 2}):
        with pytest.raises(StateError) as error:
            MemTrial.from_json(text)
        assert error.value.field == "state"
    with pytest.raises(ConfigError) as error:
        MemTrial(EngineConfig(investor="balanced"), gamma=3)
    assert error.value.field == "config"


def test_the_arrays_the_engine_returns_are_read_only_views_of_what_it_keeps():
    # a caller writing into a returned plan, decision, settlement or embedding would rewrite the engine's record
    engine = MemTrial(EngineConfig(investor="balanced"))
    given = np.ones(4)
    engine.add_experience("a", given)
    plan = engine.plan("d", 0, 1, retrieved=["a"], n_assets=3)
    decision = engine.decide("d", np.full((len(plan.masks), 3), 1 / 3))
    settlement = engine.settle("d", np.ones((2, 3)))
    before = engine.to_json()
    for array in (
        plan.reference,
        plan.previous,
        decision.weights,
        decision.drafts,
        settlement.rel_prices,
        settlement.draft_utilities,
        engine.experiences["a"].embedding,
    ):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 7.0
    assert engine.to_json() == before and given.flags.writeable  # the caller's own array stays its own


def test_a_decision_made_from_a_callers_drafts_leaves_the_callers_array_its_own():
    from memtrial.action import choose_portfolio

    engine = MemTrial(EngineConfig(investor="balanced"))
    engine.add_experience("a")
    plan = engine.plan("d", 0, 1, retrieved=["a"], n_assets=3)
    mine = np.full((len(plan.masks), 3), 1 / 3)
    decision = choose_portfolio(plan, mine)
    mine[:] = 0.5  # still the caller's to change, and the decision keeps what it was made from
    assert np.all(decision.drafts == 1 / 3) and not decision.drafts.flags.writeable


def test_an_id_of_the_wrong_type_is_refused_naming_its_field_not_with_a_python_error():
    # an unhashable id failed the lookup itself (TypeError: unhashable type), a text was read as its letters
    engine, plan = planned()
    lookups = [
        (engine.retire_experience, "experience_id"),
        (engine.remove_experience, "experience_id"),
        (engine.posterior, "experience_id"),
        (engine.evidence, "experience_id"),
        (engine.changed_at, "experience_id"),
        (lambda bad: engine.release(bad, "a reason"), "experience_id"),
        (lambda bad: engine.update_experience(bad, np.ones(8)), "experience_id"),
        (engine.get_plan, "decision_id"),
        (lambda bad: engine.decide(bad, np.tile(EQUAL, (8, 1))), "decision_id"),
        (lambda bad: engine.withdraw(bad, "a reason"), "decision_id"),
    ]
    before = engine.to_json()
    for call, field in lookups:
        with pytest.raises(InputError) as refused:
            call(["e00"])
        assert refused.value.field == field and "['e00']" in refused.value.message
    with pytest.raises(InputError, match="experience_ids must be a list of ids, got the text 'e0'") as refused:
        engine.posteriors("e0")
    assert refused.value.field == "experience_ids" and engine.to_json() == before


def test_a_history_that_is_no_store_and_a_malformed_state_are_refused_naming_what_is_wrong():
    with pytest.raises(ConfigError, match=r"^history must be a history store .* got 42 \(it lacks get, put, ") as bad:
        MemTrial(gamma=2.0, history=42)
    assert bad.value.field == "history"
    engine, _ = planned()
    state = json.loads(engine.to_json())
    for broken, said in (
        ({key: value for key, value in state.items() if key != "version"}, "state is malformed: it lacks 'version'"),
        ({**state, "rederived": "garbage"}, "state is malformed: AttributeError"),
    ):
        with pytest.raises(StateError) as refused:
            MemTrial.from_json(json.dumps(broken))
        assert refused.value.message.startswith(said) and refused.value.field == "state"
