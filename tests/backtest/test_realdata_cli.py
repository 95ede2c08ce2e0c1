"""``memtrial backtest classalloc|investorbench|portbench`` at tiny size: analogical and litellm drafting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_llm import FakeLLM
from typer.testing import CliRunner

from memtrial.cli.console import app

SHORT = ["--investor", "balanced", "--seeds", "0", "--warmup-dates", "8", "--test-dates", "3"]


def test_analogical_run_writes_results_table_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "portbench",
            *SHORT,
            "--methods",
            "memtrial,memtrial_anytime,outcome_credit,no_memory",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((out / "results.json").read_text())
    assert document["env"] == "portbench" and document["seeds"] == [0] and document["drafter"]["kind"] == "analogical"
    assert set(document["data"]) == {
        "prices/etf_daily_close.csv.gz",
        "prices/crypto_daily_close.csv.gz",
        "prices/asset_classes.csv",
    } and {d["from"] for d in document["data"].values()} <= {"shipped", "MEMTRIAL_DATA"}
    assert document["command"].startswith("memtrial backtest")
    cell = document["investors"]["balanced"]["portbench"]
    assert set(cell) == {"equal_weight", "memtrial", "memtrial_anytime", "outcome_credit", "no_memory"}
    assert set(cell["memtrial"]) >= {
        "mean_utility_pp",
        "sd_over_seeds",
        "per_seed",
        "open_rate",
        "sharpe",
        "max_drawdown",
        "turnover",
        "wealth_path",
    }
    assert len(cell["memtrial"]["wealth_path"]) == len(document["scored_dates"]) == 3
    assert document["scored_dates"][0] == "2023-01-03"
    markdown = (out / "results.md").read_text()
    assert "# PortBench-97 results (analogical drafter" in markdown and "## Excluded, and why" in markdown
    for name in ("utility_by_method.png", "wealth_paths_balanced.png", "gate_open_rate.png"):
        assert (out / name).stat().st_size > 1000


def test_litellm_run_goes_over_http_and_replays_offline_bit_for_bit(
    tmp_path: Path, investorbench_fixture: Path
) -> None:
    methods = ["--methods", "memtrial,no_memory,self_consistency"]
    with FakeLLM() as fake:
        first = CliRunner().invoke(
            app,
            [
                "backtest",
                "investorbench",
                *SHORT,
                *methods,
                "--drafter",
                "litellm",
                "--model",
                "openai/fake",
                "--api-base",
                fake.api_base,
                "--out",
                str(tmp_path / "a"),
            ],
        )
        assert first.exit_code == 0, first.output
        calls = fake.calls
    document = json.loads((tmp_path / "a" / "results.json").read_text())
    usage = document["drafter_usage"]
    assert usage["calls"] == calls > 0 and usage["prompt_tokens"] == 10 * calls and usage["malformed"] == 0
    # every prompt of the run names the date's universe and carries news in its context
    assert (
        "CASH (cash)" in fake.requests[0]["messages"][-1]["content"]
        and "News:" in fake.requests[-1]["messages"][-1]["content"]
    )
    replay = CliRunner().invoke(
        app,
        ["backtest", "investorbench", *SHORT, *methods, "--drafter", "litellm", "--model", "openai/fake", "--offline",
         "--cache", str(tmp_path / "a" / "draft_cache.sqlite"), "--out", str(tmp_path / "b")],
    )  # fmt: skip
    assert replay.exit_code == 0, replay.output
    again = json.loads((tmp_path / "b" / "results.json").read_text())
    assert again["investors"] == document["investors"]
    assert (
        again["drafter_usage"]["calls"] == 0
        and again["drafter_usage"]["cache_hits"] == usage["calls"] + usage["cache_hits"]
    )


def test_a_drafter_that_only_answers_nonsense_stops_the_run_with_the_reason(
    tmp_path: Path, investorbench_fixture: Path
) -> None:
    with FakeLLM(malformed=True) as fake:
        result = CliRunner().invoke(
            app,
            [
                "backtest",
                "investorbench",
                *SHORT,
                "--methods",
                "memtrial",
                "--drafter",
                "litellm",
                "--model",
                "openai/fake",
                "--api-base",
                fake.api_base,
                "--out",
                str(tmp_path),
            ],
        )
    assert result.exit_code == 2
    assert "no usable answer after 3 tries" in result.output and "no JSON object" in result.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--drafter", "gpt"], "drafter must be one of"),
        (["--drafter", "litellm"], "--model is required"),
        (["--model", "openai/x"], "--model and --api-base apply to --drafter litellm only"),
        (["--json-schema"], "--cache and --json-schema to the model drafters (litellm, smollm2)"),
        (["--cache", "c.sqlite"], "the analogical drafter calls no model"),
        (["--offline"], "the analogical drafter calls no model"),
        (["--investor", "reckless"], "investor must be one of"),
        (["--methods", "oracle"], "unknown methods ['oracle']"),
    ],
)
def test_bad_options_are_rejected(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["backtest", "classalloc", *arguments, "--out", str(tmp_path)])
    words = " ".join(result.output.replace("│", " ").split())  # the error box wraps long messages
    assert result.exit_code == 2 and message in words


@pytest.mark.parametrize("kind", ["text", "folder", "damaged", "absent"])
def test_a_draft_cache_that_cannot_be_read_is_refused_before_any_world_and_left_as_it_is(
    tmp_path: Path, kind: str
) -> None:
    """A text file, a folder or a damaged SQLite file as --cache ended in a SQLite traceback from a worker;
    --offline without a cache made an empty one and then failed every draft."""
    cache = tmp_path / "cache.sqlite"
    if kind == "folder":
        cache.mkdir()
    elif kind != "absent":
        cache.write_bytes(b"not a database" if kind == "text" else bytes(range(256)) * 20)
    before = None if kind in ("folder", "absent") else cache.read_bytes()
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["backtest", "classalloc", "--drafter", "litellm", "--model", "openai/fake", "--offline", "--seeds", "0"]
        + ["--investor", "balanced", "--methods", "memtrial", "--cache", str(cache), "--out", str(out)],
    )
    words = " ".join(result.output.replace("│", " ").split())
    expected = {"text": "is not a draft cache memtrial can read", "folder": "is not a file", "absent": "does not exist"}
    assert result.exit_code == 2 and "'--cache'" in words and expected.get(kind, expected["text"]) in words, words
    assert "Traceback" not in result.output and not out.exists()
    assert before is None or cache.read_bytes() == before
    assert kind != "absent" or not cache.exists()


def test_missing_investorbench_data_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from backtest.realdata import load_setting

    (tmp_path / "nowhere").mkdir()
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "nowhere"))
    load_setting.cache_clear()
    try:
        result = CliRunner().invoke(app, ["backtest", "investorbench", "--out", str(tmp_path / "x")])
    finally:
        load_setting.cache_clear()
    assert result.exit_code == 2
    assert "benchmark data file investorbench/hon.json is missing: looked in" in result.output
    assert str(tmp_path / "nowhere" / "investorbench" / "hon.json") in result.output


def test_a_run_too_short_to_score_a_date_writes_nothing_and_a_short_one_says_what_it_lost(tmp_path: Path) -> None:
    # a date is presented once four experiences have matured: without warm-up the first test dates fill the bank
    base = ["backtest", "classalloc", "--investor", "balanced", "--seeds", "0", "--methods", "no_memory"]
    empty = CliRunner().invoke(app, [*base, "--warmup-dates", "0", "--test-dates", "3", "--out", str(tmp_path / "a")])
    assert empty.exit_code == 2 and "no test date was scored, so there is nothing to report" in empty.output
    assert not (tmp_path / "a" / "results.json").exists()  # no document of NaN
    short = CliRunner().invoke(app, [*base, "--warmup-dates", "0", "--test-dates", "6", "--out", str(tmp_path / "b")])
    assert short.exit_code == 0, short.output
    document = json.loads((tmp_path / "b" / "results.json").read_text())
    assert len(document["scored_dates"]) == 2
    lost = [e for e in document["exclusions"] if e["what"] == "test dates"]
    assert lost and lost[0]["reason"].startswith("the first 4 of 6 test dates were not presented")
    assert "the first 4 of 6 test dates were not presented" in (tmp_path / "b" / "results.md").read_text()
