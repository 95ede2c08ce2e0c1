"""Quarantine and stale lessons (method 4.13, 4.14): the test per experience, the engine's quarantine,
release, log, state and corrections, and the guarantees checked by Monte Carlo through the engine."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from support import assert_snapshots_close, engine_snapshot

from memtrial.curation import BETS, Curator, Evidence, QuarantineConfig, threshold
from memtrial.engine.config import SCORED_DESIGN
from memtrial.engine.lifecycle import MemTrial
from memtrial.errors import ConfigError, DuplicateError, InputError, StateError
from memtrial.trust.log import LogKind

ON = QuarantineConfig(enabled=True)
EXPERIENCES = ("stale", "e0", "e1", "e2")  # a lesson that flips and three null ones


def _engine(values, quarantine=ON, **settings) -> MemTrial:
    engine = MemTrial(gamma=5.0, quarantine=quarantine, **{"design": SCORED_DESIGN, **settings})  # scored trials
    for experience_id in values:
        engine.add_experience(experience_id)
    return engine


def _drive(engine, values, decisions, rng, *, noise=0.5, flip_at=None, start=0):
    """Scored trials over four experiences drawn at random among those not quarantined; each draft's
    utility is the sum of its subset's values plus Gaussian noise. From ``flip_at`` on, ``values`` flip sign."""
    ids = list(values)
    for t in range(start, start + decisions):
        pool = [e for e in ids if e not in engine.quarantined]
        retrieved = [str(e) for e in rng.choice(pool, size=min(4, len(pool)), replace=False)]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        sign = -1.0 if flip_at is not None and t >= flip_at else 1.0
        utilities = [sum(sign * values[e] for e in subset) + rng.normal(0.0, noise) for subset in plan.subsets]
        engine.settle_scored(f"d{t}", utilities=utilities)


def test_evidence_wealth_is_a_supermartingale_under_the_null():
    # for any P(c < 0) <= P(c > 0) every bet's factor has expectation <= 1
    for p_negative, p_positive in [(0.5, 0.5), (0.3, 0.6), (0.0, 1.0), (0.2, 0.2)]:
        for bet in BETS:
            assert p_negative * (1 + bet) + p_positive * (1 - bet) + (1 - p_negative - p_positive) <= 1 + 1e-12


def test_evidence_quarantines_at_its_slot_threshold():
    evidence = Evidence(slot=3)
    n = 0
    while evidence.quarantined_at is None:
        evidence.observe(f"d{n}", -1.0, ON, 99)
        n += 1
    bar = threshold(3, 0.05, ON.spread)
    assert evidence.e_value >= bar and threshold(3, 0.05) == 240.0
    assert bar == pytest.approx((3 + ON.spread) * (4 + ON.spread) / ((ON.spread + 1) * 0.05))
    before = Evidence(slot=3)
    for i in range(n - 1):
        before.observe(f"d{i}", -1.0, ON, 99)
    assert before.e_value < bar and before.quarantined_at is None


def test_the_sweep_after_a_quarantine_applies_the_lowered_bar_as_a_contribution_would():
    # method 4.13: after quarantines every running test is compared with its lowered bar T_j(r), whatever its
    # wealth; a bar below 1 (a level near 1) quarantines a test whose E < 1 at once, not at its next contribution
    curator = Curator(QuarantineConfig(enabled=True, level=0.99, spread=0.0, clip=None, control="fdr"))
    curator.observe("d0", {"A": 1.0})
    curator.observe("d1", {"A": -1.0})
    decision = 2
    while len(curator.quarantined) < 2:
        curator.observe(f"d{decision}", {"B": -1.0, "C": -1.0})
        decision += 1
    a = curator.evidence["A"]
    bar = threshold(a.slot, 0.99, 0.0, curator.discoveries)
    assert bar <= a.e_value < 1.0  # the lowered bar is met by a wealth below 1
    assert curator.is_quarantined("A") and a.quarantined_at == f"d{decision - 1}"


def test_evidence_detects_a_sign_flip_and_restarts():
    evidence = Evidence(slot=1)
    for i in range(30):
        evidence.observe(f"d{i}", 1.0, ON, 2)
    changed = None
    for i in range(30, 60):
        if evidence.observe(f"d{i}", -1.0, ON, 2).changed:
            changed = i
            break
    assert changed is not None and changed - 30 <= 15
    assert evidence.changed_at == f"d{changed}" and evidence.slot == 2 and evidence.n == 0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"level": 1.5}, "quarantine.level must be in [1e-12, 1), got 1.5"),
        # below it a bar overflows to inf, which no log entry can record (every release would be refused)
        ({"level": 1e-310}, "quarantine.level must be in [1e-12, 1), got 1e-310"),
        ({"enabled": 1}, "quarantine.enabled must be a bool, got 1"),
        ({"change_threshold": 1.0}, "quarantine.change_threshold must be finite and > 1, got 1.0"),
        ({"spread": -1.0}, "quarantine.spread must be in [0, 1,000,000], got -1.0"),
        ({"spread": 1e200}, "quarantine.spread must be in [0, 1,000,000], got 1e+200"),
        ({"spread": math.inf}, "quarantine.spread must be in [0, 1,000,000], got inf"),
        ({"clip": 0.0}, "quarantine.clip must be in (0, 1,000,000] (or null), got 0.0"),
        ({"clip": math.nan}, "quarantine.clip must be in (0, 1,000,000] (or null), got nan"),
    ],
)
def test_quarantine_config_bad_setting_is_rejected(settings, message):
    with pytest.raises(ConfigError) as error:
        QuarantineConfig(**settings)
    assert str(error.value) == message


def test_engine_quarantines_a_harmful_experience_logs_it_and_stops_retrieving_it():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    assert engine.quarantined == ("bad",)
    entries = [e for e in engine.history.log_entries() if e.kind == LogKind.QUARANTINE]
    assert len(entries) == 1
    payload = entries[0].payload
    assert payload["experience_id"] == "bad" and payload["e_value"] >= payload["threshold"]
    assert payload["mean"] < 0
    assert engine.verify().ok
    with pytest.raises(InputError) as error:
        engine.plan("x", 1000, 1000, retrieved=["bad"], kind="scored")
    assert str(error.value) == "experience 'bad' is quarantined"
    assert "bad" not in [p.experience_id for p in engine.rank(list(values), 7)]


def test_engine_release_logs_the_evidence_and_restarts_the_test():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    evidence = engine.evidence("bad")
    entry = engine.release("bad", "reviewed: the lesson was rewritten")
    assert entry.kind == LogKind.RELEASE
    assert entry.payload["reason"] == "reviewed: the lesson was rewritten"
    assert entry.payload["e_value"] == evidence["e_value"]
    assert engine.quarantined == () and engine.evidence("bad")["n"] == 0
    with pytest.raises(InputError) as error:
        engine.release("bad", "again")
    assert str(error.value) == "experience 'bad' is not quarantined"
    assert engine.verify().ok


def test_engine_does_not_release_a_quarantined_experience_retired_by_hand():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    assert "bad" in engine.quarantined
    engine.retire_experience("bad")
    entries = engine.gate.log.length
    with pytest.raises(InputError) as error:
        engine.release("bad", "reviewed")
    assert (str(error.value), error.value.field) == ("experience 'bad' is retired, not quarantined", "experience_id")
    assert engine.gate.log.length == entries and engine.curator.is_quarantined("bad")  # nothing written or changed
    assert engine.quarantined == ()  # retired, it is listed as retired, not as quarantined


def test_a_removed_experience_leaves_the_quarantine_list_and_its_id_is_not_given_to_a_new_one():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    assert engine.quarantined == ("bad",)
    discoveries = engine.curator.discoveries
    engine.remove_experience("bad")
    assert engine.quarantined == () and engine.curator.discoveries == discoveries  # the quarantine still counts
    before = engine.to_json()
    with pytest.raises(DuplicateError) as error:  # it would be born quarantined, with the old value
        engine.add_experience("bad")
    assert error.value.field == "experience_id" and "was removed and its records stay" in str(error.value)
    assert engine.to_json() == before
    engine.add_experience("fresh")
    engine.remove_experience("fresh")  # no records: its id may be given again
    engine.add_experience("fresh")
    assert engine.posterior("fresh")[2] == 0 and "fresh" not in engine.quarantined


@pytest.mark.parametrize("setting", [{"spread": 10}, {"clip": 2}, {"change_threshold": 500}])
def test_a_quarantine_setting_given_as_an_integer_round_trips_byte_for_byte(setting):
    engine = MemTrial(gamma=5.0, quarantine=QuarantineConfig(enabled=True, **setting))
    text = engine.to_json()
    assert MemTrial.from_json(text).to_json() == text
    assert engine.config.quarantine == QuarantineConfig.from_dict(engine.config.quarantine.to_dict())


def _book_state():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    assert engine.quarantined == ("bad",)
    return json.loads(engine.to_json())


def _evidence(state, field, value):
    state["curation"]["evidence"][0][1][field] = value


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda s: s.pop("curation"), "quarantine is on but the state holds no quarantine book"),
        (lambda s: s["curation"]["evidence"].append(s["curation"]["evidence"][0]), "an experience has one test"),
        (lambda s: _evidence(s, "wealth", [-1.0] * len(BETS)), "evidence wealth must be"),
        (lambda s: _evidence(s, "wealth", [1.0]), "evidence wealth must be"),
        (lambda s: _evidence(s, "detector", [-0.5] * len(BETS)), "evidence detector must be"),
        (lambda s: _evidence(s, "slot", 0), "slot must be an integer >= 1"),
        (lambda s: _evidence(s, "slot", 2.7), "slot must be an integer >= 1"),
        (lambda s: _evidence(s, "n", -1), "n must be an integer >= 0"),
        (lambda s: _evidence(s, "squares", -1.0), "evidence total and squares must be finite"),
        (lambda s: _evidence(s, "slot", 10_000), "hold slots not yet given"),
        (lambda s: s["curation"].update(discoveries=-3), "discoveries must be an integer >= 0"),
        (lambda s: s["curation"].update(abs_count=0), "abs_total must be finite, >= 0 and 0 without contributions"),
    ],
)
def test_a_damaged_quarantine_book_is_refused_naming_what_is_wrong(damage, message):
    state = _book_state()
    damage(state)
    with pytest.raises(StateError) as error:
        MemTrial.from_dict(state)
    assert message in str(error.value)


def test_a_book_whose_wealth_underflowed_to_zero_still_loads():
    # a lesson that helps at every settlement bets against itself: the wealth of the boldest bet reaches 0.0
    # after a few hundred settlements, and the state must load as it was written
    curator = Curator(ON)
    for t in range(400):
        curator.observe(f"d{t}", {"good": 1.0})
    assert 0.0 in curator.evidence["good"].wealth
    restored = Curator.from_dict(ON, curator.to_dict())
    assert restored.to_dict() == curator.to_dict()


def test_a_book_with_an_infinite_count_is_refused_as_a_state_error():
    state = _book_state()
    state["curation"]["next_slot"] = float("inf")
    with pytest.raises(StateError) as error:
        MemTrial.from_dict(state)
    assert "next_slot must be an integer >= 1, got inf" in str(error.value)


def test_engine_without_quarantine_has_no_book():
    engine = _engine({"a": 0.0}, QuarantineConfig())
    assert engine.quarantined == () and engine.changed_at("a") is None
    with pytest.raises(ConfigError) as error:
        engine.release("a", "why")
    assert str(error.value) == "quarantine is off for this engine (EngineConfig.quarantine)"


def test_engine_with_quarantine_state_round_trips_and_continues_identically():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 40, np.random.default_rng(2))
    text = engine.to_json()
    restored = MemTrial.from_json(text)
    assert restored.to_json() == text
    _drive(engine, values, 30, np.random.default_rng(3), start=40)
    _drive(restored, values, 30, np.random.default_rng(3), start=40)
    assert restored.to_json() == engine.to_json()


def test_correction_with_quarantine_equals_an_engine_settled_with_the_corrected_outcome():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    rng = np.random.default_rng(4)
    plans, utilities = [], []
    engine, fresh = _engine(values), _engine(values)
    for t in range(60):
        pool = [e for e in values if e not in engine.quarantined]
        retrieved = [str(e) for e in rng.choice(pool, size=4, replace=False)]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        row = [sum(values[e] for e in s) + rng.normal(0.0, 0.5) for s in plan.subsets]
        engine.settle_scored(f"d{t}", utilities=row)
        plans.append(retrieved)
        utilities.append(row)
    corrected = list(np.asarray(utilities[3]) + np.arange(len(utilities[3])))
    engine.correct("d3", reason="mis-graded", utilities=corrected)
    for t, retrieved in enumerate(plans):
        plan = fresh.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        fresh.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        fresh.settle_scored(f"d{t}", utilities=corrected if t == 3 else utilities[t])
    assert engine.curator.to_dict() == fresh.curator.to_dict()
    assert engine.quarantined == fresh.quarantined == ("bad",)
    assert engine.verify().ok


def test_a_quarantine_a_correction_finds_is_logged_with_the_evidence_at_the_decision_it_fired():
    # the harmful lesson was first settled as neutral: the corrections, one by one, make the replay quarantine
    # it; the entry must hold what an engine settled right from the start logged at that decision (the threshold
    # before that quarantine counted, the mean and e-value then), not the book as it stands after the replay
    values = {"bad": -1.0} | {f"e{i}": 0.0 for i in range(5)}
    level = QuarantineConfig(enabled=True, level=0.2)
    rng = np.random.default_rng(8)
    engine = _engine(values, level)
    plans, wrong, right = [], [], []
    for t in range(30):
        retrieved = ["bad", *(str(e) for e in rng.choice(list(values)[1:], size=3, replace=False))]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        noise = rng.normal(0.0, 0.3, size=len(plan.subsets))
        wrong.append([float(x) for x in noise])  # as if "bad" were neutral
        engine.settle_scored(f"d{t}", utilities=wrong[-1])
        plans.append(retrieved)
        right.append([sum(values[e] for e in s) + x for s, x in zip(plan.subsets, noise, strict=True)])
    assert engine.quarantined == ()
    for t in range(30):
        engine.correct(f"d{t}", reason="regraded", utilities=right[t])
        if engine.quarantined:
            break
    assert engine.quarantined == ("bad",)
    logged = [e.payload for e in engine.history.log if e.kind == LogKind.QUARANTINE]
    assert len(logged) == 1 and logged[0]["discoveries"] == 0  # the first quarantine
    fired_at = int(logged[0]["date"][1:])
    assert fired_at < 29  # later decisions, with "bad" in them, were replayed after it fired
    fresh = _engine(values, level)  # settled from the start with the outcomes as they stand now
    for s in range(fired_at + 1):
        plan = fresh.plan(f"d{s}", s, s, retrieved=plans[s], kind="scored")
        fresh.decide_scored(f"d{s}", n_drafts=len(plan.masks))
        fresh.settle_scored(f"d{s}", utilities=right[s] if s <= t else wrong[s])
    expected = [e.payload for e in fresh.history.log if e.kind == LogKind.QUARANTINE]
    assert fresh.quarantined == ("bad",) and logged == expected
    assert engine.verify().ok


def _null_world_quarantines(seed: int, n_experiences: int = 8, decisions: int = 150) -> int:
    """Experiences whose value is >= 0 (zero or positive, Gaussian noise) wrongly quarantined in one world."""
    rng = np.random.default_rng(seed)
    values = {f"e{i}": float(v) for i, v in enumerate(rng.choice([0.0, 0.0, 0.2, 0.5], size=n_experiences))}
    engine = _engine(values, QuarantineConfig(enabled=True, level=0.2))
    _drive(engine, values, decisions, rng, noise=1.0)
    return len(engine.quarantined)


@pytest.mark.slow  # Monte Carlo through the engine
def test_quarantine_family_wise_error_is_within_level_in_null_worlds():
    # every value >= 0, so the default fdr rule's first quarantine is the family-wise rule's, and the false
    # discovery rate is this probability; level 0.2 (so that the check has power to fail); 200 worlds:
    # 3 binomial sds above 0.2 is 0.285
    seeds = np.random.SeedSequence(2026).generate_state(200)
    wrong = [_null_world_quarantines(int(s)) for s in seeds]
    share = np.mean([w > 0 for w in wrong])
    assert share <= 0.2 + 3 * np.sqrt(0.2 * 0.8 / len(seeds))


def _mixed_world_false_share(seed: int, level: float = 0.2) -> float:
    """The share of wrong quarantines among all quarantines (0 with none) in one world of five null
    experiences (value 0) and three harmful ones (value -0.4), Gaussian noise (sd 1), 150 scored trials."""
    rng = np.random.default_rng(seed)
    values = {f"null{i}": 0.0 for i in range(5)} | {f"bad{i}": -0.4 for i in range(3)}
    engine = _engine(values, QuarantineConfig(enabled=True, level=level))
    _drive(engine, values, 150, rng, noise=1.0)
    wrong = sum(e.startswith("null") for e in engine.quarantined)
    return wrong / max(len(engine.quarantined), 1)


FDR_WORLDS = 80  # the mean of 80 shares in [0, 1] has an sd of at most 0.5 / sqrt(80) = 0.056


def _fdr_bound(level: float) -> float:
    return level + 3 * 0.5 / np.sqrt(FDR_WORLDS)


@pytest.mark.slow  # Monte Carlo through the engine
def test_quarantine_false_discovery_rate_is_within_level_in_worlds_with_harmful_experiences():
    seeds = np.random.SeedSequence(2027).generate_state(FDR_WORLDS)
    assert np.mean([_mixed_world_false_share(int(s)) for s in seeds]) <= _fdr_bound(0.2)


@pytest.mark.slow  # Monte Carlo through the engine
def test_quarantine_false_discovery_check_fails_a_rule_without_the_correction_across_experiences(monkeypatch):
    # the check above has the power to fail: each test at the whole level, 1 / (level (r + 1)), exceeds it
    import memtrial.curation.quarantine as quarantine

    monkeypatch.setattr(
        quarantine, "threshold", lambda slot, level, spread=0.0, discoveries=0: 1 / (level * (discoveries + 1))
    )
    seeds = np.random.SeedSequence(2027).generate_state(FDR_WORLDS)
    assert np.mean([_mixed_world_false_share(int(s)) for s in seeds]) > _fdr_bound(0.2)


@pytest.mark.slow  # Monte Carlo through the engine
def test_quarantine_catches_a_planted_harmful_experience_within_bounded_decisions():
    caught = []
    for seed in range(20):
        values = {f"e{i}": 0.0 for i in range(7)} | {"bad": -0.5}
        engine = _engine(values)
        rng = np.random.default_rng(seed)
        for block in itertools.count():
            _drive(engine, values, 10, rng, noise=1.0, start=10 * block)
            if "bad" in engine.quarantined or block == 30:
                break
        caught.append(10 * (block + 1) if "bad" in engine.quarantined else None)
    assert all(c is not None and c <= 300 for c in caught)


@pytest.mark.slow  # Monte Carlo through the engine
def test_stale_lesson_flip_is_detected_relearnt_and_quarantined_stable_world_is_not_flagged():
    detected, stable_alarms = [], 0
    for seed in range(20):
        values = {f"e{i}": 0.0 for i in range(5)} | {"stale": 0.5}
        engine = _engine(values)
        _drive(engine, values, 200, np.random.default_rng(seed), noise=1.0)
        stable_alarms += engine.changed_at("stale") is not None
        flipped = _engine(values)
        _flip_drive(flipped, values, np.random.default_rng(seed))
        detected.append(flipped)
    assert stable_alarms <= 2
    for engine in detected:
        changed = engine.changed_at("stale")
        assert changed is not None and 100 <= int(changed[1:]) <= 100 + 200
        assert "stale" in engine.quarantined
        # the value is learnt from the new regime only: the evidence counts the contributions since the change
        evidence = engine.evidence("stale")
        assert evidence["mean"] < 0 and evidence["n"] < engine.curator.evidence["stale"].n_seen
        assert engine._posteriors(["stale"])["stale"].mean == pytest.approx(evidence["mean"])


def _flip_drive(engine, values, rng):
    """Only the stale lesson flips: it helps for 100 decisions, then hurts as much."""
    ids = list(values)
    for t in range(400):
        pool = [e for e in ids if e not in engine.quarantined]
        retrieved = [str(e) for e in rng.choice(pool, size=min(4, len(pool)), replace=False)]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        now = values | {"stale": values["stale"] if t < 100 else -values["stale"]}
        engine.settle_scored(f"d{t}", utilities=[sum(now[e] for e in s) + rng.normal(0, 1.0) for s in plan.subsets])


def _lesson_that_flips(engine, rows, n_settled, n_planned, settings=None):
    """A lesson that helps for 12 decisions and then hurts, beside three null ones, all retrieved each time:
    ``n_planned`` scored trials, the first ``n_settled`` settled with ``rows[t]`` (drawn on first use), and
    ``settings[t]`` changed before trial t."""
    values = {"stale": 1.0, "e0": 0.0, "e1": 0.0, "e2": 0.0}
    rng = np.random.default_rng(0)
    for t in range(n_planned):
        if t in (settings or {}):
            engine.change_settings(settings[t])
        plan = engine.plan(f"d{t}", t, t, retrieved=list(values), kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        now = values | {"stale": 1.0 if t < 12 else -1.0}
        drawn = [sum(now[e] for e in subset) + rng.normal(0.0, 0.5) for subset in plan.subsets]
        rows.setdefault(t, drawn)
        if t < n_settled:
            engine.settle_scored(f"d{t}", utilities=rows[t])


def test_after_a_change_the_posterior_is_the_value_learnt_since_it_and_values_stay_pooled():
    """MemTrial.posterior reads what the engine acts on (method 4.12, 4.14): after a detected change, the mean,
    standard error and number of the contributions since it; values() keeps the learner's pooled means."""
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig(enabled=True, change_threshold=10.0))
    _lesson_that_flips(engine, {}, 24, 24)
    assert engine.changed_at("stale") is not None and engine.changed_at("e0") is None
    regime = engine.curator.regime_posterior("stale")
    assert engine.posterior("stale") == (regime.mean, regime.sd, regime.n)
    assert 1 <= regime.n < engine.learner.count("stale") and regime.mean < 0
    assert engine.values()["stale"] == engine.learner.predictions(["stale"])[0] != regime.mean  # pooled
    reported = engine.learner.reported_posterior("e0")  # no change: the learner's own
    assert engine.posterior("e0") == (reported.mean, reported.sd, engine.learner.count("e0"))
    assert engine.posteriors(["e0", "stale"]) == [engine.posterior("e0"), engine.posterior("stale")]


def test_a_release_restarts_the_test_but_keeps_the_value_learnt_since_the_change():
    """Releasing a lesson quarantined after a detected change restarts its test (a fresh slot, n = 0), not its
    regime: the value, standard error and number it was acted on with stay those of every contribution since
    the change, and the next settlement adds to them; a stored book keeps them, and one stored before the
    regime had figures of its own reads the test's."""
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig(enabled=True, change_threshold=10.0))
    rng = np.random.default_rng(0)

    def trial(t):
        retrieved = [e for e in EXPERIENCES if e not in engine.quarantined]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        now = dict.fromkeys(EXPERIENCES, 0.0) | {"stale": 1.0 if t < 12 else -1.0}
        engine.settle_scored(f"d{t}", utilities=[sum(now[e] for e in s) + rng.normal(0.0, 0.5) for s in plan.subsets])

    t = 0
    while "stale" not in engine.quarantined:
        trial(t)
        t += 1
        assert t < 200, "the stale lesson was never quarantined"
    changed, before = engine.changed_at("stale"), engine.posterior("stale")
    assert changed is not None and before[0] < 0 and before[2] >= 2
    engine.release("stale", "reviewed")
    assert engine.evidence("stale")["n"] == 0 and engine.changed_at("stale") == changed  # the test restarted
    assert engine.posterior("stale") == before  # the regime did not
    stored = json.loads(json.dumps(engine.curator.to_dict()))
    regime = engine.curator.regime_posterior("stale")
    assert Curator.from_dict(engine.curator.config, stored).regime_posterior("stale") == regime
    written = dict(stored["evidence"])
    assert {"regime_n", "regime_total", "regime_squares"} <= set(written["stale"])  # released after its change
    assert not {"regime_n", "regime_total", "regime_squares"} & set(written["e0"])  # the test's figures: left out
    for name in ("regime_n", "regime_total", "regime_squares"):  # a book stored before these figures
        del written["stale"][name]
    assert Curator.from_dict(engine.curator.config, stored).regime_posterior("stale").n == 0
    trial(t)  # retrieved again: its next contribution adds to the regime
    after = engine.posterior("stale")
    assert after[2] == before[2] + 1 and engine.evidence("stale")["n"] == 1


def test_correction_before_and_after_a_change_equals_an_engine_settled_with_the_corrected_outcomes():
    quarantine = QuarantineConfig(enabled=True, change_threshold=10.0)
    truthful_rows: dict[int, list[float]] = {}
    truthful = _engine(dict.fromkeys(EXPERIENCES, 0.0), quarantine)
    _lesson_that_flips(truthful, truthful_rows, 24, 26)
    changed = truthful.changed_at("stale")
    assert changed is not None and 12 < int(changed[1:]) < 20 and truthful.quarantined == ()
    wrong_rows = dict(truthful_rows)
    wrong_rows[4] = [u + 0.3 * i for i, u in enumerate(truthful_rows[4])]  # before the change
    wrong_rows[20] = [-u for u in truthful_rows[20]]  # after it: the lesson looks helpful again
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), quarantine)
    _lesson_that_flips(engine, wrong_rows, 24, 26)
    engine.correct("d4", reason="mis-graded", utilities=truthful_rows[4])
    engine.correct("d20", reason="mis-graded", utilities=truthful_rows[20])  # replayed from the checkpoint at entry 32
    assert_snapshots_close(engine_snapshot(engine, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    assert engine.curator.to_dict() == truthful.curator.to_dict()
    assert engine.changed_at("stale") == changed and engine.quarantined == truthful.quarantined
    for awaiting in ("d24", "d25"):  # the predictions the plans awaiting their score are learnt with
        derived, served = engine._learnt(engine.get_plan(awaiting)), truthful.get_plan(awaiting)
        assert derived.predictions == pytest.approx(served.predictions, abs=1e-12)
        for mode, predictions in served.mode_predictions.items():
            assert derived.mode_predictions[mode] == pytest.approx(predictions, abs=1e-12)
    assert engine.verify().ok


def test_correction_replays_the_reset_under_the_quarantine_settings_of_each_plan():
    # off at first, on from trial 2 with a detector that never alarms, sensitive from trial 16 on: the
    # replayed book follows the settings as they were (a book under the last one throughout alarms earlier)
    settings = {
        2: {"quarantine": {"enabled": True, "change_threshold": 1e6}},
        16: {"quarantine": {"change_threshold": 5.0}},
    }
    truthful_rows: dict[int, list[float]] = {}
    truthful = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig())
    _lesson_that_flips(truthful, truthful_rows, 22, 24, settings)
    assert truthful.changed_at("stale") == "d16" and truthful.quarantined == ()
    wrong_rows = dict(truthful_rows)
    wrong_rows[1] = [u + 0.3 * i for i, u in enumerate(truthful_rows[1])]  # before the book existed
    wrong_rows[18] = [-u for u in truthful_rows[18]]  # after the change
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig())
    _lesson_that_flips(engine, wrong_rows, 22, 24, settings)
    engine.correct("d18", reason="mis-graded", utilities=truthful_rows[18])
    engine.correct("d1", reason="mis-graded", utilities=truthful_rows[1])
    assert_snapshots_close(engine_snapshot(engine, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    assert engine.curator.to_dict() == truthful.curator.to_dict()
    assert engine.changed_at("stale") == "d16" and engine.quarantined == ()
    for awaiting in ("d22", "d23"):
        derived, served = engine._learnt(engine.get_plan(awaiting)), truthful.get_plan(awaiting)
        assert derived.predictions == pytest.approx(served.predictions, abs=1e-12)
    assert engine.verify().ok


def test_correcting_a_decision_without_experiences_keeps_the_quarantine_book():
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig(enabled=True, change_threshold=10.0))
    _lesson_that_flips(engine, {}, 16, 16)
    plan = engine.plan("bare", 16, 16, retrieved=[], kind="scored")
    engine.decide_scored("bare", n_drafts=len(plan.masks))
    engine.settle_scored("bare", utilities=[0.1] * len(plan.masks))
    book = engine.curator.to_dict()
    engine.correct("bare", reason="mis-graded", utilities=[0.5] * len(plan.masks))
    assert engine.curator is not None and engine.curator.to_dict() == book


def test_correction_after_the_quarantine_was_turned_off_replays_the_reset_of_the_plans_made_while_on():
    settings = {
        2: {"quarantine": {"enabled": True, "change_threshold": 1e6}},
        16: {"quarantine": {"change_threshold": 5.0}},
        21: {"quarantine": {"enabled": False}},
    }
    truthful_rows: dict[int, list[float]] = {}
    truthful = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig())
    _lesson_that_flips(truthful, truthful_rows, 26, 28, settings)
    wrong_rows = dict(truthful_rows)
    wrong_rows[18] = [-u for u in truthful_rows[18]]  # while on, after the change at d16
    wrong_rows[23] = [u + 1.0 for u in truthful_rows[23]]  # after it was turned off
    engine = _engine(dict.fromkeys(EXPERIENCES, 0.0), QuarantineConfig())
    _lesson_that_flips(engine, wrong_rows, 26, 28, settings)
    engine.correct("d23", reason="mis-graded", utilities=truthful_rows[23])
    engine.correct("d18", reason="mis-graded", utilities=truthful_rows[18])  # both replayed from entry 33 on
    assert_snapshots_close(engine_snapshot(engine, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    assert engine.curator is None and truthful.curator is None
    assert engine._learnt(engine.get_plan("d27")).predictions == pytest.approx(truthful.get_plan("d27").predictions)


def test_contributions_since_a_change_that_agree_give_a_standard_error_not_zero():
    """Contributions since a change that are all alike measure no spread: the standard error is |mean| / sqrt(n),
    as one contribution's is |mean| (a value learnt never reads sd 0), and missing while they are all 0; spread
    ones give the sample's standard error, as before."""
    curator = Curator(QuarantineConfig(enabled=True))
    curator.evidence["x"] = evidence = Evidence(1)
    evidence.changed_at = "d3"

    def regime(values):
        evidence.regime_n, evidence.regime_total = len(values), float(sum(values))
        evidence.regime_squares = float(sum(v * v for v in values))
        return curator.regime_posterior("x")

    alike = regime([-0.25] * 12)
    assert (alike.mean, alike.sd, alike.n) == (-0.25, 0.25 / np.sqrt(12), 12)
    assert regime([0.1] * 3).sd == pytest.approx(0.1 / np.sqrt(3))  # 0.1 + 0.1 + 0.1 is not 0.3
    one = regime([-0.4])
    assert (one.mean, one.sd, one.n) == (-0.4, 0.4, 1)
    assert regime([0.0]).sd is None and regime([0.0, 0.0]).sd is None
    spread = [-0.5, -0.1, -0.3]
    assert regime(spread).sd == pytest.approx(np.std(spread, ddof=1) / np.sqrt(3), rel=1e-12)


def test_many_equal_contributions_since_a_change_stay_alike_whatever_their_sums_round_to():
    curator = Curator(QuarantineConfig(enabled=True))
    curator.evidence["x"] = evidence = Evidence(1)
    evidence.changed_at = "d3"
    for value in (0.1, -0.3, 1 / 3):
        n = 50_000
        evidence.regime_n, evidence.regime_total, evidence.regime_squares = n, 0.0, 0.0
        for _ in range(n):  # summed one at a time, as settlements add them
            evidence.regime_total += value
            evidence.regime_squares += value * value
        regime = curator.regime_posterior("x")
        assert regime.sd == pytest.approx(abs(value) / np.sqrt(n), rel=1e-9)


def test_a_release_the_log_cannot_record_is_refused_before_the_quarantine_ends():
    values = {f"e{i}": 0.0 for i in range(6)} | {"bad": -1.0}
    engine = _engine(values)
    _drive(engine, values, 80, np.random.default_rng(0))
    entries = engine.gate.log.length
    with pytest.raises(InputError) as error:
        engine.release("bad", "reviewed \ud800")  # a lone surrogate: UTF-8 cannot write it, nor the chain hash it
    assert error.value.field == "reason"
    assert engine.quarantined == ("bad",) and engine.gate.log.length == entries
    assert engine.release("bad", "reviewed").kind == LogKind.RELEASE
    assert engine.verify().ok


def test_a_setting_stored_before_the_bounds_on_new_ones_still_reads_back_and_corrects():
    """A level below 1e-12, or a spread or clip above 1,000,000, was accepted before those bounds: a state or a
    log entry that holds one reads back (and a correction replays it); only a new setting is refused."""
    values = {f"e{i}": 0.0 for i in range(4)}
    engine = _engine(values, QuarantineConfig(enabled=True, level=0.05))
    _drive(engine, values, 6, np.random.default_rng(3))
    engine.change_settings({"quarantine": {"level": 0.01}})
    _drive(engine, values, 2, np.random.default_rng(4), start=6)
    old = {"enabled": True, "level": 1e-13, "change_threshold": 1000.0, "spread": 2e6, "clip": 5e6, "control": "fdr"}
    text = engine.to_json()
    for now in (0.01, 0.05):  # the configuration and the settings entries of the log, as an older release wrote them
        text = text.replace(f'"level":{now}', '"level":1e-13')
    text = text.replace('"spread":30.0', '"spread":2000000.0').replace('"clip":1.0', '"clip":5000000.0')
    restored = MemTrial.from_json(text)
    assert restored.config.quarantine == QuarantineConfig.from_dict(old)
    restored.correct("d3", reason="a mis-graded answer", utilities=[0.1] * len(restored.history.get("d3").plan.masks))
    with pytest.raises(ConfigError) as error:
        QuarantineConfig(**old)
    assert error.value.field == "quarantine.level"
    # its owner may change another field (turn it off, say) without restating the level; a new level is checked
    with pytest.raises(ConfigError) as error:
        restored.change_settings({"quarantine": {"level": 1e-14}})
    assert error.value.field == "quarantine.level"
    restored.change_settings({"quarantine": {"enabled": False}})
    assert not restored.config.quarantine.enabled and restored.config.quarantine.level == 1e-13
