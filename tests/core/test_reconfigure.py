"""memtrial.engine.reconfigure: the draft budget and its horizon change mid-life, logged, from the next plan on."""

import json

import numpy as np
import pytest
from test_budget import engine_of, walk, world

from memtrial import MemTrial
from memtrial.errors import ConfigError


def test_a_budget_set_mid_life_takes_effect_at_the_next_plan_and_is_logged_with_old_and_new():
    dates = world(3, 40)
    engine = engine_of(None)
    gate_hash = engine.gate_hash
    before = walk(engine, dates[:10])
    assert all(plan.trial and plan.draft_calls == 8 for plan, _, _ in before)
    entry = engine.change_settings({"draft_budget": 3})
    assert entry is not None and entry.kind == "settings"
    assert entry.payload == {"changes": {"draft_budget": {"old": None, "new": 3.0}}, "decisions_budgeted": 0}
    after = walk(engine, dates[10:], start=10)
    calls = np.cumsum([plan.draft_calls for plan, _, _ in after])
    assert np.all(calls <= 3.0 * np.arange(1, 31) + 1e-9)  # the new budget from the first plan after the change
    assert any(not plan.trial for plan, _, _ in after)
    assert engine.gate_hash == gate_hash and engine.config.gate == engine_of(None).config.gate  # the gate as registered
    assert engine.verify().ok
    assert [e.kind for e in engine.history.log_entries()].count("settings") == 1


def test_the_credit_carries_over_a_budget_change_so_calls_stay_within_the_budgets_in_force():
    dates = world(5, 40)
    engine = engine_of(4.0)
    first = walk(engine, dates[:20])
    credit = engine.credit.credit
    engine.change_settings({"draft_budget": 2})
    assert engine.credit.credit == credit  # neither forgiven nor reset
    second = walk(engine, dates[20:], start=20)
    calls = np.cumsum([plan.draft_calls for plan, _, _ in first + second])
    allowed = np.cumsum([4.0] * 20 + [2.0] * 20)
    assert np.all(calls <= allowed + 1e-9)


def test_a_budget_change_survives_the_state_even_when_the_budget_is_set_aside_and_set_again():
    dates = world(9, 36)
    engine = engine_of(3.0)
    walk(engine, dates[:12])
    engine.change_settings({"draft_budget": None})
    walk(engine, dates[12:18], start=12)
    restored = MemTrial.from_json(engine.to_json())
    assert restored.config.draft_budget is None and restored.credit == engine.credit
    for each in (engine, restored):
        each.change_settings({"draft_budget": 2.5, "draft_horizon": 40})
    a, b = walk(engine, dates[18:], start=18), walk(restored, dates[18:], start=18)
    assert [p.masks for p, _, _ in a] == [p.masks for p, _, _ in b]
    assert json.loads(engine.to_json()) == json.loads(restored.to_json())


def test_a_correction_after_a_budget_change_relearns_as_if_settled_right_from_the_start():
    dates = world(11, 30)
    wrong = dates[4][2] * np.linspace(1.0, 1.2, 20)[:, None]  # a bad feed on decision 4, a trial
    corrected, reference = engine_of(None), engine_of(None)
    walk(corrected, [*dates[:4], (dates[4][0], dates[4][1], wrong), *dates[5:12]])
    walk(reference, dates[:12])
    for engine in (corrected, reference):
        engine.change_settings({"draft_budget": 2})
    walk(corrected, dates[12:], start=12)
    walk(reference, dates[12:], start=12)
    corrected.correct("d4", rel_prices=dates[4][2], reason="feed")
    assert corrected.values() == pytest.approx(reference.values(), abs=1e-12)
    gates = corrected.gate.statistics.to_dict(), reference.gate.statistics.to_dict()
    assert gates[0]["n_scored"] == gates[1]["n_scored"]
    np.testing.assert_allclose(gates[0]["log_growth"], gates[1]["log_growth"], rtol=0, atol=1e-12)
    assert corrected.credit == reference.credit and corrected.config == reference.config
    assert corrected.verify().ok


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"k": 5},
            "k",
            "k is fixed for the engine's life; only draft_budget, draft_horizon, retrieval, quarantine may change",
        ),
        (
            {"gate": None},
            "gate",
            "gate is fixed for the engine's life; only draft_budget, draft_horizon, retrieval, quarantine may change",
        ),
        (
            {"bogus": 1},
            "bogus",
            "bogus is not a setting of an engine; only draft_budget, draft_horizon, retrieval, quarantine may change",
        ),
        ({"draft_budget": 0.5}, "draft_budget", "draft_budget must be a number of draft calls per decision >= 1"),
        ({"draft_horizon": 10}, "draft_horizon", "draft_horizon needs a draft_budget to spread over it"),
        (
            {"quarantine": {"alpha": 0.1}},
            "quarantine.alpha",
            r"quarantine.alpha is not a quarantine setting \(enabled, level, change_threshold, spread, clip, control\)",
        ),
        (
            {"quarantine": {"control": "holm"}},
            "quarantine.control",
            r"quarantine.control must be one of \['fwer', 'fdr'\], got 'holm'",
        ),
    ],
)
def test_a_change_the_engine_refuses_names_the_setting_and_changes_nothing(changes, field, message):
    engine = engine_of(None)
    walk(engine, world(2, 3))
    state = engine.to_json()
    with pytest.raises(ConfigError, match=message) as caught:
        engine.change_settings(changes)
    assert caught.value.field == field
    assert engine.to_json() == state


def test_a_change_to_the_same_values_writes_no_entry():
    engine = engine_of(3.0)
    length = engine.gate.log.length
    assert engine.change_settings({"draft_budget": 3}) is None
    assert engine.gate.log.length == length
