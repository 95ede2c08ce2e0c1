"""The trust dial (method 4.8): omega from the e-process, the combination of designed drafts, its guarantee."""

import json

import numpy as np
import pytest

from memtrial import EngineConfig, MemTrial
from memtrial.action.rule import dial_combination, dial_gains, dial_weights, noise_gain
from memtrial.errors import ConfigError
from memtrial.outcomes.mandates import utility
from memtrial.trust.gate import (
    DEFAULT_BETS,
    GateConfig,
    GateStatistics,
    anytime_log_wealth,
    pearson_scores,
    trust_weight,
    trust_weights,
)
from memtrial.values import EmpiricalBayesLearner, RunningStatistics

HALF = [0, 3, 5, 6, 9, 10, 12, 15]
ALPHA = 0.05


def dial_engine(**settings):
    config = {
        "investor": "balanced",
        "action": "dial",
        "credit": "raw",
        "gate": GateConfig(test="anytime", alpha=ALPHA),
        **settings,
    }
    engine = MemTrial(EngineConfig(**config))
    for lesson in "abcdef":
        engine.add_experience(lesson)
    return engine


def run(engine, n_dates, seed=0, useful="a", start=0):
    """A small world where drafts that include ``useful`` tilt toward the asset that rises."""
    rng = np.random.default_rng(seed)
    decisions, settlements = [], []
    for t in range(start, start + n_dates):
        ids = list(rng.choice(list("abcdef"), 4, replace=False))
        plan = engine.plan(f"d{t}", time=20 * t, maturity=20 * t + 20, retrieved=ids, n_assets=3)
        drafts = rng.dirichlet(np.full(3, 5.0), size=len(plan.subsets))
        for row, subset in enumerate(plan.subsets):
            if useful in subset:
                drafts[row] = 0.6 * drafts[row] + 0.4 * np.array([1.0, 0.0, 0.0])
        decisions.append(engine.decide(f"d{t}", drafts))
        rel = np.cumprod(1.0 + rng.normal([0.004, 0.0, 0.0], 0.01, size=(20, 3)), axis=0)
        settlements.append(engine.settle(f"d{t}", rel))
    return decisions, settlements


def test_the_dial_needs_the_anytime_e_process():
    with pytest.raises(ConfigError, match="use gate test 'anytime'") as error:
        EngineConfig(investor="balanced", action="dial", gate=GateConfig(test="prequential"))
    assert error.value.field == "action"
    assert EngineConfig(investor="balanced", action="dial", gate=GateConfig(test="none")).action.value == "dial"


def test_omega_is_the_clipped_log_e_value_over_log_one_over_alpha():
    statistics = GateStatistics()
    config = GateConfig(test="anytime", alpha=ALPHA)
    assert trust_weight(config, statistics) == (0.0, 0.0)
    seen = []
    for score in [0.6, 0.8, 0.7, 0.9, 0.5, 0.8, 0.9, 0.7] * 3:
        statistics.add(score)
        seen.append(score)
        omega, log_e = trust_weight(config, statistics)
        assert log_e == pytest.approx(float(anytime_log_wealth(np.array(seen))[-1]), abs=1e-12)
        assert omega == pytest.approx(min(max(log_e / np.log(1 / ALPHA), 0.0), 1.0))
    assert trust_weight(config, statistics)[0] == 1.0  # 24 strong scores are full evidence
    assert trust_weight(GateConfig(test="none"), GateStatistics())[0] == 1.0


def test_log_e_of_the_engine_equals_the_e_process_of_its_logged_scores():
    engine = dial_engine()
    decisions, _ = run(engine, 40)
    scores = [
        e.payload["score"] for e in engine.history.log_entries() if e.kind == "score" and e.payload["score"] is not None
    ]
    expected = anytime_log_wealth(np.array(scores), DEFAULT_BETS)
    last = decisions[-1].dial
    assert last.log_evidence == pytest.approx(
        float(expected[-2]), abs=1e-12
    )  # the last plan saw all scores but its own
    assert last.trust_weight == pytest.approx(float(np.clip(expected[-2] / np.log(1 / ALPHA), 0, 1)), abs=1e-12)


def test_combination_projects_gains_over_twice_the_noise_cost_onto_the_simplex():
    predictions = np.array([0.01, 0.0, -0.01, 0.02])
    gains = dial_gains(predictions, HALF)
    assert gains[0] == 0.0  # the empty subset
    assert gains[HALF.index(3)] == pytest.approx(2 * (0.01 + 0.0) / 2)
    assert gains[HALF.index(15)] == pytest.approx(2 * 0.02 / 4)
    for kappa in (0.002, 0.01, 0.05):
        pi = dial_combination(gains, np.array(kappa), HALF)
        assert pi.sum() == pytest.approx(1.0) and (pi >= 0).all()
        # the projection is the minimiser of ||pi - g / (2 kappa)||: no feasible point is closer
        target = gains / (2 * kappa)
        rng = np.random.default_rng(1)
        for other in rng.dirichlet(np.ones(8), size=200):
            assert np.sum((pi - target) ** 2) <= np.sum((other - target) ** 2) + 1e-12
    higher_noise = dial_combination(gains, np.array(0.05), HALF)
    lower_noise = dial_combination(gains, np.array(0.002), HALF)
    assert (higher_noise > 0).sum() >= (lower_noise > 0).sum()  # noisier drafts: spread wider
    no_estimate = dial_combination(gains, np.array(np.nan), HALF)
    assert no_estimate.tolist() == [1.0 if m == 9 else 0.0 for m in HALF]  # the best subset alone


def test_noise_cost_is_the_running_mean_of_the_drafts_noise_gain():
    engine = dial_engine()
    _, settlements = run(engine, 25)
    expected = [noise_gain(s.draft_utilities, s.mean_utility) for s in settlements]
    assert expected[0] == pytest.approx(8 / 7 * (settlements[0].mean_utility - np.mean(settlements[0].draft_utilities)))
    assert engine.noise.cost == pytest.approx(float(np.mean(expected)), abs=1e-15)


def test_dial_decisions_blend_memory_and_fallback_and_log_their_evidence():
    engine = dial_engine()
    decisions, _ = run(engine, 60)
    omegas = [d.dial.trust_weight for d in decisions]
    assert omegas[0] == 0.0 and omegas[-1] == 1.0 and any(0.0 < w < 1.0 for w in omegas)
    for decision in decisions:
        dial = decision.dial
        plan = engine.get_plan(decision.decision_id)
        expected = dial_weights(
            np.array(dial.combination), np.array(dial.trust_weight), np.array(plan.q), plan.reference, decision.drafts
        )
        assert np.array_equal(decision.weights, expected)
        assert decision.weights.sum() == pytest.approx(1.0) and (decision.weights >= 0).all()
    registered = [e.payload for e in engine.history.log_entries() if e.kind == "prediction"]
    assert [p["details"]["dial"]["trust_weight"] for p in registered] == omegas
    assert registered[-1]["details"]["dial"]["combination"] == list(decisions[-1].dial.combination)
    assert "trust weight" in decisions[30].explanation and "log e-value" in decisions[30].explanation
    assert engine.verify().ok


def test_a_dial_engine_round_trips_through_its_state_and_continues_identically():
    first = dial_engine()
    run(first, 30, seed=3)
    restored = MemTrial.from_json(first.to_json())
    assert restored.to_json() == first.to_json()
    a, _ = run(first, 10, seed=4, start=30)
    b, _ = run(restored, 10, seed=4, start=30)
    assert [d.weights.tolist() for d in a] == [d.weights.tolist() for d in b]


def test_raw_credit_learns_from_uncentred_contrasts():
    records = [("d1", "a", 0.02), ("d1", "b", 0.00), ("d2", "a", 0.04), ("d2", "c", -0.01), ("d3", "b", 0.01)]
    raw = RunningStatistics.from_records(records, centre=False)
    assert raw.snapshot().means.tolist() == pytest.approx([0.03, 0.005, -0.01])
    assert raw.n_records == 5  # the one-experience date counts too
    running = RunningStatistics(centre=False)
    for date in ("d1", "d2", "d3"):
        running.add_date({e: c for d, e, c in records if d == date})
    assert running.snapshot().means.tolist() == pytest.approx(raw.snapshot().means.tolist())
    restored = RunningStatistics.from_dict(json.loads(json.dumps(running.to_dict())))
    assert restored.centre is False
    learner = EmpiricalBayesLearner("identity", centre=False).fit(records)
    assert learner.predict("a") > 0 > learner.predict("c")


def test_utility_of_the_blend_is_scored_like_any_weights():
    engine = dial_engine()
    decisions, settlements = run(engine, 12)
    for decision, settlement in zip(decisions, settlements, strict=True):
        expected = utility(
            decision.weights / decision.weights.sum(),
            settlement.rel_prices,
            np.full(3, 1 / 3),
            engine.config.risk_aversion,
        )
        assert settlement.chosen_utility == pytest.approx(float(expected), abs=1e-15)


# Monte Carlo: 2,000 null runs x 1,000 dates (about two seconds)
@pytest.mark.parametrize("null", ["pearson of unrelated values", "fair coin of -1 and +1"])
def test_under_the_null_trust_weight_x_is_ever_reached_with_probability_at_most_alpha_to_the_x(null):
    rng = np.random.default_rng(20261130)
    runs, dates = 2000, 1000
    if null == "fair coin of -1 and +1":
        scores = rng.choice([-1.0, 1.0], size=(runs, dates))  # the most volatile null a score in [-1, 1] can have
    else:
        scores = pearson_scores(rng.normal(size=(runs * dates, 4)), rng.normal(size=(runs * dates, 4))).reshape(
            runs, dates
        )
    highest = np.zeros(runs)
    for start in range(0, runs, 250):
        log_e = anytime_log_wealth(scores[start : start + 250], DEFAULT_BETS)
        highest[start : start + 250] = trust_weights(log_e, ALPHA).max(axis=1)
    for x in (0.25, 0.5, 0.75, 1.0):
        rate, bound = float(np.mean(highest >= x)), ALPHA**x
        slack = 3.0 * np.sqrt(
            bound * (1.0 - bound) / runs
        )  # Monte Carlo error: the coin's martingale makes the bound nearly tight
        assert rate <= bound + slack, f"P(ever omega >= {x}) = {rate} > alpha^x = {bound} (+ {slack:.4f})"
    assert np.mean(highest > 0) > 0.1  # the dial does move under the null: the check is not vacuous
