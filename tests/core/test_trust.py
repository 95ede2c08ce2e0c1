"""memtrial.trust.gate and memtrial.trust.log: gates, pre-registration, the hash chain."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from memtrial.errors import ConfigError, DuplicateError, InputError, UnknownDecisionError
from memtrial.trust.gate import (
    AnytimeGate,
    GateConfig,
    GateTest,
    PrequentialGate,
    TrustStatus,
    UngatedGate,
    anytime_log_wealth,
    make_gate,
    pearson_score,
    prequential_p_values,
)
from memtrial.trust.log import LogEntry

N_RUNS, N_DATES, ALPHA = 2000, 1000, 0.05


def ever_open_rates(scores):
    """Fraction of runs whose gate is open at some date, for both tests, checked at every date."""
    anytime = (anytime_log_wealth(scores) >= np.log(1 / ALPHA)).any(axis=1).mean()
    p_values = prequential_p_values(scores)
    prequential = (p_values[:, 9:] < ALPHA).any(axis=1).mean()
    return float(anytime), float(prequential)


@pytest.mark.slow  # Monte Carlo
def test_under_the_null_only_the_anytime_gate_keeps_its_level():
    # Pearson scores of four independent pairs are uniform on [-1, 1] under the null
    scores = np.random.default_rng(2026).uniform(-1, 1, size=(N_RUNS, N_DATES))
    anytime, prequential = ever_open_rates(scores)
    print(
        f"\never-open rate under the null over {N_DATES} dates x {N_RUNS} runs: anytime {anytime:.4f}, prequential {prequential:.4f}"
    )
    monte_carlo_sd = np.sqrt(ALPHA * (1 - ALPHA) / N_RUNS)
    assert anytime <= ALPHA + 3 * monte_carlo_sd
    assert prequential > ALPHA + 10 * monte_carlo_sd
    assert prequential > anytime


def test_under_a_clear_alternative_both_gates_open():
    rng = np.random.default_rng(1)
    scores = np.clip(rng.normal(0.4, 0.35, size=(200, 150)), -1, 1)
    anytime, prequential = ever_open_rates(scores)
    print(f"\never-open rate at mean score 0.4 over 150 dates: anytime {anytime:.3f}, prequential {prequential:.3f}")
    assert anytime == 1.0
    assert prequential == 1.0


def test_prequential_p_values_match_scipy_t_test():
    x = np.random.default_rng(0).normal(0.1, 0.5, size=30)
    p = prequential_p_values(x)
    for t in (5, 12, 29):
        assert p[t] == pytest.approx(stats.ttest_1samp(x[: t + 1], 0, alternative="greater").pvalue, rel=1e-10)


def test_anytime_wealth_is_the_mean_over_bets_of_products():
    x = np.array([0.5, -0.2, 0.9])
    bets = (0.1, 0.5)
    expected = np.mean([np.prod(1 + b * x) for b in bets])
    assert np.exp(anytime_log_wealth(x, bets)[-1]) == pytest.approx(expected, rel=1e-14)


def feed(gate, scores):
    for t, score in enumerate(scores):
        predicted = {"a": 0.0, "b": 1.0}
        gate.register(t, predicted)
        # two points correlate at +1 or -1; realised order sets the sign
        gate.score(t, {"a": 0.0, "b": 1.0} if score > 0 else {"a": 1.0, "b": 0.0})


def test_prequential_gate_waits_for_ten_scores():
    gate = PrequentialGate()
    feed(gate, [1] * 9)
    decision = gate.decision()
    assert decision.status is TrustStatus.INSUFFICIENT_EVIDENCE
    assert (decision.n_scored, decision.statistic) == (9, None)
    feed_more = PrequentialGate()
    feed(feed_more, [1] * 10)
    assert feed_more.decision().is_open
    assert feed_more.decision().statistic == 0.0


def test_anytime_gate_opens_once_wealth_reaches_one_over_alpha():
    gate = AnytimeGate(alpha=0.05)
    feed(gate, [1] * 6)
    assert gate.decision().status is TrustStatus.CLOSED
    feed(gate := AnytimeGate(alpha=0.05), [1] * 12)
    decision = gate.decision()
    assert decision.is_open
    assert decision.statistic >= 20.0
    assert decision.threshold == 20.0


def test_anytime_gate_closes_again_when_wealth_falls():
    gate = AnytimeGate(alpha=0.05)
    feed(gate, [1] * 12 + [-1] * 4)
    assert gate.decision().status is TrustStatus.CLOSED


def test_ungated_gate_is_always_open():
    assert UngatedGate().decision().is_open


def test_constant_predictions_are_skipped_not_scored():
    gate = PrequentialGate()
    gate.register("d1", {"a": 0.0, "b": 0.0, "c": 0.0})
    result = gate.score("d1", {"a": 0.1, "b": -0.2, "c": 0.1})
    assert result.score is None
    assert result.skipped == "constant predictions or outcomes"
    assert gate.n_scored == 0


def test_pearson_score_is_none_for_constant_outcomes():
    assert pearson_score([1, 2, 3], [0, 0, 0]) is None
    assert pearson_score([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)


def test_registering_a_date_twice_is_rejected():
    gate = AnytimeGate()
    gate.register("d1", {"a": 1.0})
    with pytest.raises(DuplicateError, match="predictions for date 'd1' are already registered"):
        gate.register("d1", {"a": 2.0})


def test_scoring_an_unregistered_date_is_rejected():
    with pytest.raises(UnknownDecisionError, match="no registered predictions await a score for date 'x'"):
        PrequentialGate().score("x", {})


def test_scoring_other_experiences_than_registered_is_rejected():
    gate = PrequentialGate()
    gate.register("d", {"a": 1.0, "b": 2.0})
    with pytest.raises(
        InputError, match=r"realised contributions must cover exactly the registered experiences \['a', 'b'\]"
    ):
        gate.score("d", {"a": 1.0})


def test_config_hash_is_stable_and_changes_with_any_setting():
    first = GateConfig(GateTest.PREQUENTIAL, 0.05, 10)
    assert first.hash == GateConfig().hash
    assert len(first.hash) == 64
    assert GateConfig(alpha=0.01).hash != first.hash
    assert GateConfig(test="anytime").hash != first.hash
    assert GateConfig.from_dict(first.to_dict()) == first


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        GateConfig().alpha = 0.2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"alpha": 1.5}, r"alpha must be in \(0, 1\), got 1.5"),
        ({"test": "bayes"}, r"test must be one of \['prequential', 'anytime', 'none'\], got 'bayes'"),
        ({"min_scores": 1}, "min_scores must be >= 2 for a t-test, got 1"),
        ({"test": "anytime", "bets": (1.0,)}, r"bets must be a non-empty tuple of values in \(0, 1\), got \(1.0,\)"),
    ],
)
def test_gate_config_rejects_bad_settings(settings, message):
    with pytest.raises(ConfigError, match=message):
        GateConfig(**settings)


def test_make_gate_builds_the_configured_test():
    assert isinstance(make_gate(GateConfig(test="anytime", alpha=0.1)), AnytimeGate)
    assert make_gate(GateConfig(test="anytime", alpha=0.1)).config_hash == GateConfig(test="anytime", alpha=0.1).hash


def test_log_chain_verifies_and_is_anchored_at_the_config_hash():
    gate = PrequentialGate()
    feed(gate, [1, -1, 1])
    check = gate.log.verify()
    assert check.ok and check.n_entries == 6
    assert gate.log.entries[0].prev_hash == GateConfig().hash


@pytest.mark.parametrize("position", [0, 3, 5])
def test_editing_any_stored_prediction_breaks_verification(position):
    gate = PrequentialGate()
    feed(gate, [1, -1, 1])
    entry = gate.log.entries[position]
    payload = dict(entry.payload)
    payload["date"] = 99
    gate.log.entries[position] = LogEntry(entry.index, entry.kind, payload, entry.prev_hash, entry.hash)
    check = gate.log.verify()
    assert not check.ok
    assert check.first_invalid == position
    assert check.reason == f"entry {position} was modified after it was written"


def test_rehashing_an_edited_entry_still_breaks_the_chain():
    gate = PrequentialGate()
    feed(gate, [1, 1])
    entry = gate.log.entries[0]
    forged = LogEntry(
        entry.index, entry.kind, {**entry.payload, "predictions": [["a", 5.0], ["b", 1.0]]}, entry.prev_hash, ""
    )
    gate.log.entries[0] = LogEntry(forged.index, forged.kind, forged.payload, forged.prev_hash, forged.expected_hash())
    check = gate.log.verify()
    assert (check.ok, check.first_invalid, check.reason) == (False, 1, "entry 1 does not link to its predecessor")


def test_deleting_an_entry_breaks_the_chain():
    gate = PrequentialGate()
    feed(gate, [1, 1])
    del gate.log.entries[1]
    assert gate.log.verify().first_invalid == 1


def test_log_kinds_are_pinned_and_an_entry_hashes_the_kinds_value():
    import hashlib
    import json

    from memtrial.trust.log import LogKind, PredictionLog

    assert {k.name: k.value for k in LogKind} == {
        "PREDICTION": "prediction",
        "SCORE": "score",
        "CORRECTION": "correction",
        "EXPLOIT": "exploit",
        "SETTINGS": "settings",
        "RETRY": "retry",
        "WITHDRAWAL": "withdrawal",
        "QUARANTINE": "quarantine",
        "RELEASE": "release",
    }
    log = PredictionLog(genesis="0" * 64)
    entry = log.append(LogKind.RETRY, {"date": "d1", "draft_calls": 2})
    body = {"index": 0, "kind": "retry", "payload": {"date": "d1", "draft_calls": 2}, "prev_hash": "0" * 64}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    assert type(entry.kind) is str and entry.kind == "retry"
    assert entry.hash == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_score_does_not_depend_on_the_unit_utilities_are_counted_in_up_to_the_engines_bound():
    """Utilities within the engine's bound (1e100) from about 1e77 on overflowed the product of the Pearson
    score's two sums: every score read 0 and the trust weight stayed 0. Scaled utilities now score alike."""
    import numpy as np

    from memtrial import EngineConfig, MemTrial
    from memtrial.engine.config import SCORED_DESIGN
    from memtrial.trust.gate import pearson_scores

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    for scale in (1e-80, 1e77, 1e90, 1e100):
        np.testing.assert_allclose(pearson_scores(x * scale, y * scale), pearson_scores(x, y), rtol=0, atol=1e-15)

    def run(scale):
        from memtrial.curation import QuarantineConfig

        engine = MemTrial(EngineConfig(gamma=0.0, design=SCORED_DESIGN, quarantine=QuarantineConfig(enabled=False)))
        for lesson in "abcdef":
            engine.add_experience(lesson)
        world = np.random.default_rng(5)
        worth = {"a": 0.4, "b": -0.3, "c": 0.1, "d": 0.0, "e": 0.2, "f": -0.1}
        scores = []
        for t in range(30):
            retrieved = [str(e) for e in world.choice(list("abcdef"), size=4, replace=False)]
            plan = engine.plan(f"q{t}", time=t, maturity=t + 1, retrieved=retrieved, kind="scored")
            engine.decide_scored(f"q{t}", vectors=world.dirichlet(np.ones(3), size=len(plan.subsets)))
            utilities = [sum(worth[e] for e in s) + world.normal(0, 0.05) for s in plan.subsets]
            scores.append(engine.settle_scored(f"q{t}", utilities=np.array(utilities) * scale).score)
        return scores

    plain, huge = run(1.0), run(1e90)
    assert [s is None for s in plain] == [s is None for s in huge]
    np.testing.assert_allclose([s for s in huge if s is not None], [s for s in plain if s is not None], atol=1e-9)
    assert any(abs(s) > 0.5 for s in plain if s is not None)  # the scores say something
