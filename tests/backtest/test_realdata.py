"""The real-data settings: data layer, universes, mandates, information timing, experiences."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from backtest.data import (
    DataError,
    align_to_sessions,
    class_indices,
    load_asset_classes,
    load_crypto_closes,
    load_etf_closes,
    load_investorbench,
)
from backtest.realdata import RISKY, RealWorld, load_setting
from backtest.runner import WorldSpec, run_world
from memtrial.drafting.drafts import AnalogicalDrafter
from memtrial.outcomes.mandates import INVESTORS


def test_class_index_built_by_hand_for_two_dates_equals_the_loader() -> None:
    closes, classes = load_etf_closes(), load_asset_classes()
    frame = class_indices(closes, classes, ["real_estate", "cash"])
    members = [t for t in closes.columns if classes[t] == "real_estate"]
    # XLRE lists in 2015-10: it joins the index after 20 sessions of prices, inside this span
    first, second = pd.Timestamp("2015-09-01"), pd.Timestamp("2016-03-01")
    values = closes[members].to_numpy()
    dates = list(closes.index)
    level_first = level = 1.0
    for t in range(1, dates.index(second) + 1):
        moves = []
        for j in range(len(members)):
            seen_before = int(np.isfinite(values[:t, j]).sum())
            if seen_before >= 20 and np.isfinite(values[t, j]) and np.isfinite(values[t - 1, j]):
                moves.append(values[t, j] / values[t - 1, j] - 1.0)
        level *= 1.0 + (sum(moves) / len(moves) if moves else 0.0)
        if dates[t] == first:
            level_first = level
    assert frame.loc[first, "real_estate"] == pytest.approx(level_first, rel=1e-12)
    assert frame.loc[second, "real_estate"] == pytest.approx(level, rel=1e-12)


def test_investorbench_test_window_has_exactly_149_next_day_returns(real_investorbench: Path) -> None:
    setting = load_setting("investorbench")
    test = setting.decisions[setting.first_test :]
    assert len(test) == setting.n_test == 149
    assert str(setting.dates[test[0]].date()) == "2020-10-01" and str(setting.dates[test[-1]].date()) == "2021-05-05"
    assert str(setting.dates[test[-1] + 1].date()) == "2021-05-06"
    assert setting.horizon == 1 and setting.assets == ("HON", "JNJ", "MSFT", "UVV", "CASH")
    warmup = setting.decisions[: setting.first_test]
    assert str(setting.dates[warmup[0]].date()) == "2020-07-01"


def test_classalloc_and_portbench_windows() -> None:
    classalloc = load_setting("classalloc")
    assert classalloc.assets == ("equities", "bonds", "commodities", "real_estate", "cash")
    dates = [str(classalloc.dates[s].date())[:7] for s in classalloc.decisions]
    assert (
        dates[0] == "2015-07"
        and dates[classalloc.first_test] == "2020-05"
        and dates[classalloc.first_test - 1] == "2020-04"
    )
    assert all(s + 20 < len(classalloc.dates) and s >= 126 for s in classalloc.decisions)
    portbench = load_setting("portbench")
    assert len(portbench.assets) == 97
    months = [str(portbench.dates[s].date())[:7] for s in portbench.decisions]
    assert months[0] == "2019-08" and months[portbench.first_test] == "2023-01" and months[-1] == "2024-11"


def test_investorbench_fixture_has_the_real_format_and_windows(investorbench_fixture: Path) -> None:
    setting = load_setting("investorbench")
    assert setting.assets == ("HON", "JNJ", "MSFT", "UVV", "CASH") and setting.horizon == 1
    test = setting.decisions[setting.first_test :]
    assert (
        str(setting.dates[test[0]].date()) == "2020-10-01"
        and str(setting.dates[setting.decisions[0]].date()) == "2020-07-01"
    )
    assert all(setting.news[t] for t in ("HON", "JNJ", "MSFT", "UVV"))


def test_missing_data_names_the_file_the_ticker_or_the_date(tmp_path: Path, investorbench_fixture: Path) -> None:
    classes = load_asset_classes()
    del classes["XLRE"]
    with pytest.raises(DataError, match=r"tickers without an asset class: \['XLRE'\]"):
        class_indices(load_etf_closes(), classes, ["real_estate"])
    folder = tmp_path / "investorbench"
    folder.mkdir()
    for ticker in ("hon", "jnj", "msft"):
        shutil.copy(investorbench_fixture / "investorbench" / f"{ticker}.json", folder / f"{ticker}.json")
    with pytest.raises(DataError, match=r"investorbench/uvv\.json is missing"):
        load_investorbench(folder=tmp_path)
    uvv = json.loads((investorbench_fixture / "investorbench" / "uvv.json").read_text())
    del uvv["2020-11-02"]
    (folder / "uvv.json").write_text(json.dumps(uvv))
    with pytest.raises(DataError, match=r"uvv\.json has no entry for 2020-11-02"):
        load_investorbench(folder=tmp_path)
    uvv["2020-11-02"] = {"prices": -3.0, "news": []}
    (folder / "uvv.json").write_text(json.dumps(uvv))
    with pytest.raises(DataError, match=r"2020-11-02\.prices must be a finite number > 0, got -3\.0"):
        load_investorbench(folder=tmp_path)


def test_crypto_takes_the_last_close_on_or_before_each_session_and_never_past_its_data() -> None:
    sessions = pd.DatetimeIndex(load_etf_closes().index)
    crypto = load_crypto_closes()
    aligned = align_to_sessions(crypto, sessions)
    monday = pd.Timestamp("2021-03-01")
    assert aligned.loc[monday, "BTC-USD"] == crypto.loc[monday, "BTC-USD"]
    friday, saturday = pd.Timestamp("2021-03-05"), pd.Timestamp("2021-03-06")
    assert aligned.loc[friday, "ETH-USD"] == crypto.loc[friday, "ETH-USD"] != crypto.loc[saturday, "ETH-USD"]
    after = sessions[sessions > crypto.index[-1]]
    assert len(after) > 0 and aligned.loc[after].isna().all().all()
    assert aligned.loc[: pd.Timestamp("2020-01-01"), "SOL-USD"].isna().all()


@pytest.mark.slow  # the full real-data universe
def test_per_date_universes_admit_an_asset_once_it_has_the_history() -> None:
    setting = load_setting("portbench")
    world = RealWorld(setting.truncated(None, 1), "balanced", AnalogicalDrafter(0))
    sol = setting.assets.index("SOL-USD")
    first, later = world.universe[0], world.universe[20]
    assert sol not in first and sol in later
    assert any(e.what == "SOL-USD" and "fewer than 127" in e.reason for e in setting.exclusions)


def test_drafts_reference_and_every_choice_respect_the_mandate() -> None:
    setting = load_setting("portbench").truncated(8, 3)
    investor = INVESTORS["conservative"]
    world = RealWorld(setting, "conservative", AnalogicalDrafter(1))

    def feasible(date: int, weights: np.ndarray) -> None:
        risky, defensive = world.groups[date]
        for row in np.atleast_2d(weights):
            assert row.min() >= -1e-12 and row.sum() == pytest.approx(1.0, abs=1e-9)
            assert row[risky].sum() <= investor.risky_cap + 1e-9
            assert row[defensive].sum() >= investor.defensive_floor - 1e-9

    presented = 0
    for date in range(world.n_dates):
        context = world.context(date)
        if context is None:
            continue
        presented += 1
        feasible(date, context.drafts[~np.isnan(context.drafts[:, 0])])
        feasible(date, context.reference)
        feasible(date, context.self_consistency)
        assert np.allclose(
            world.project_onto_mandate(date, np.full(len(context.equal), 1.0)), context.reference, atol=1e-9
        )
    assert presented > 0
    # equal weight over the universe is 62/97 risky: the conservative reference is its projection
    assert {setting.classes[m] for m in world.universe[-1]} >= RISKY


def test_experiences_come_only_from_matured_decisions() -> None:
    setting = load_setting("classalloc").truncated(30, 4)
    world = RealWorld(setting, "balanced", AnalogicalDrafter(2))
    available: set[int] = set()
    late = 0
    for date in range(world.n_dates):
        context = world.context(date)
        if context is None:
            continue
        available |= {e for e, _ in context.added}
        assert all(world.maturity[e] <= context.session for e in available)
        assert set(context.retrieved) <= available and len(context.retrieved) == 4
        # a month of 19 sessions: the previous decision has not matured when this one is made
        if date - 1 not in available and world.maturity[date - 1] > context.session:
            late += 1
    assert late > 0
    lesson = world.lessons[0].text
    assert (
        lesson.startswith("On 2017-11-01 (bonds: ")
        and "the agent held mostly" in lesson
        and "equal-weight reference" in lesson
    )


def test_a_change_to_later_prices_changes_no_earlier_decision() -> None:
    setting = load_setting("classalloc").truncated(12, 8)
    cut = setting.decisions[setting.first_test + 3]
    later = setting.closes.copy()
    later[cut + 1 :, 0] *= 1.5  # equities jump right after the cut
    methods = ("equal_weight", "memtrial", "memtrial_no_gate", "outcome_credit", "hedge", "min_variance")
    spec = WorldSpec("classalloc", "aggressive", 3, methods=methods, env="classalloc")
    base = run_world(spec, market=setting, keep_choices=True)
    changed = run_world(spec, market=replace(setting, closes=later), keep_choices=True)
    presented = list(setting.decisions)[-base["presented_dates"] :]
    before = sum(1 for s in presented if s <= cut)
    for method in methods:
        assert base["choices"][method][:before] == changed["choices"][method][:before], method
    assert any(base["choices"][m][before:] != changed["choices"][m][before:] for m in methods)


def test_a_short_run_reports_every_metric(investorbench_fixture: Path) -> None:
    spec = WorldSpec(
        "investorbench",
        "balanced",
        0,
        methods=("equal_weight", "memtrial", "outcome_credit", "no_memory"),
        env="investorbench",
        warmup_dates=10,
        test_dates=5,
    )
    result = run_world(spec)
    assert len(result["dates"]) == 5 and result["dates"][0] == "2020-10-01"
    cell = result["methods"]["memtrial"]
    assert len(cell["utilities_pp"]) == len(cell["returns"]) == 5
    for key in ("sharpe", "max_drawdown", "final_wealth", "turnover", "open_rate"):
        assert cell[key] is not None
    assert cell["draft_calls_per_decision"] == 8 and result["methods"]["no_memory"]["draft_calls_per_decision"] == 1
    assert any("shortened" in e["reason"] for e in result["exclusions"])


def test_wealth_statistics() -> None:
    from backtest.runner import _wealth_stats

    stats = _wealth_stats([0.10, -0.50, 0.20], 12.0)
    assert stats["final_wealth"] == pytest.approx(1.1 * 0.5 * 1.2)
    assert stats["max_drawdown"] == pytest.approx(0.5)
    assert stats["sharpe"] == pytest.approx(np.mean([0.1, -0.5, 0.2]) / np.std([0.1, -0.5, 0.2], ddof=1) * np.sqrt(12))
    # a book that pays the same fee every day and never moves has no meaningful ratio
    assert _wealth_stats([-0.0024] * 5, 252.0)["sharpe"] is None


def test_a_run_is_noted_as_shortened_only_when_a_limit_cut_dates():
    """Limits past the calendar cut nothing: the run is the full one, and says nothing of a shortening (it
    said "run shortened to 41 warm-up and 23 test dates on request" for PortBench's whole calendar)."""
    setting = load_setting("portbench")
    notes = lambda s: [e.reason for e in s.exclusions if e.what == "decision dates"]  # noqa: E731
    whole = setting.truncated(1000, 1000)
    assert (whole.first_test, whole.n_test) == (setting.first_test, setting.n_test) and notes(whole) == []
    assert notes(setting.truncated(None, None)) == []
    assert notes(setting.truncated(8, 3)) == ["run shortened to 8 warm-up and 3 test dates on request"]
    assert notes(setting.truncated(1000, 3)) == [
        f"run shortened to {setting.first_test} warm-up and 3 test dates on request"
    ]
