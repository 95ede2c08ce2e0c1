"""``memtrial backtest plantedmem`` at tiny size, and its errors."""

import json

import pytest
from typer.testing import CliRunner

from memtrial.cli.console import app


def test_plantedmem_command_writes_results_table_and_plots(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "plantedmem",
            "--investor",
            "balanced",
            "--regimes",
            "beta_0.5,noise_only",
            "--seeds",
            "0-1",
            "--workers",
            "1",
            "--methods",
            "memtrial,memtrial_anytime,outcome_credit,no_memory,equal_weight,draft_mean,oracle",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((out / "results.json").read_text())
    assert document["env"] == "plantedmem" and document["seeds"] == [0, 1]
    cell = document["investors"]["balanced"]["beta_0.5"]["memtrial"]
    assert set(cell) >= {"mean_utility_pp", "sd_over_seeds", "per_seed", "open_rate"} and len(cell["per_seed"]) == 2
    assert document["investors"]["balanced"]["noise_only"]["equal_weight"]["open_rate"] is None
    assert "MemTrial's rank (non-oracle)" in (out / "results.md").read_text()
    for name in ("utility_by_regime.png", "gate_open_rate_by_regime.png", "learned_value_vs_type.png"):
        assert (out / name).stat().st_size > 1000
    page = (out / "results.md").read_text()
    (out / "results.md").write_text(page.replace("## Cost and quality", "## Out of date"))
    rendered = CliRunner().invoke(app, ["backtest", "render", str(out)])
    assert rendered.exit_code == 0, rendered.output
    assert (out / "results.md").read_text() == page  # the page as the run wrote it, from results.json alone


def test_render_without_results_json_is_refused_naming_it(tmp_path):
    result = CliRunner().invoke(app, ["backtest", "render", str(tmp_path)])
    assert result.exit_code == 2 and "results.jsondoesnotexist" in "".join(result.output.replace("│", "").split())


def test_a_one_regime_run_ranks_its_methods_once(tmp_path):
    out = tmp_path / "one"
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "plantedmem",
            "--investor",
            "balanced",
            "--regimes",
            "beta_0.5",
            "--seeds",
            "0",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    page = (out / "results.md").read_text()
    assert page.count("| rank | method |") == 1  # the closing ranking; no group column repeats it
    assert "## Memory regimes and the paper's core five" not in page
    assert page.count("| memory regimes |") == 0 and "all regimes" in page


def test_missing_price_data_is_reported_with_every_place_looked(tmp_path, monkeypatch):
    import backtest.data.prices
    import backtest.runner

    (tmp_path / "nowhere").mkdir()
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setattr(backtest.data.prices, "packaged", lambda: tmp_path / "not-packaged")
    monkeypatch.setattr(backtest.runner, "_MARKETS", {})
    result = CliRunner().invoke(app, ["backtest", "plantedmem", "--seeds", "0", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    output = " ".join(result.output.split())
    assert "benchmark data file prices/etf_daily_close.csv.gz is missing: looked in" in output
    for folder in ("nowhere", "not-packaged"):
        assert str(tmp_path / folder / "prices" / "etf_daily_close.csv.gz") in output
    assert not (tmp_path / "x").exists()  # a run refused for its data leaves no output folder behind
    # so does a real-data run whose files are missing
    refused = CliRunner().invoke(app, ["backtest", "investorbench", "--seeds", "0", "--out", str(tmp_path / "ib")])
    assert refused.exit_code == 2 and not (tmp_path / "ib").exists(), refused.output


def _damaged(raw: bytes, damage: str) -> bytes:
    """The shipped ETF closes (gzip ``raw``) damaged as a bad download leaves them."""
    import gzip

    text = gzip.decompress(raw)
    if damage == "truncated gzip":
        return raw[: len(raw) // 2]
    if damage == "corrupt gzip":
        middle = len(raw) // 2
        return raw[:middle] + bytes(b ^ 0xFF for b in raw[middle : middle + 64]) + raw[middle + 64 :]
    if damage == "cut mid-row":
        return gzip.compress(text[:600_000])
    if damage == "a short row":
        lines = text.split(b"\n")
        lines[100] = lines[100].rsplit(b",", 3)[0]
        return gzip.compress(b"\n".join(lines))
    lines = text.split(b"\n")  # "ends early": whole rows, closes up to 2016 only
    return gzip.compress(b"\n".join(lines[:700]) + b"\n")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncated gzip", "cannot be read (EOFError"),
        ("corrupt gzip", "cannot be read (BadGzipFile"),
        ("cut mid-row", "ends in the middle of a row: the file is cut short"),
        ("a short row", "row 101 has 86 fields, the header 89: the file is damaged"),
        ("ends early", "the benchmarks need 2014-01-02 to 2026-08-03 at least"),
    ],
)
def test_a_damaged_price_file_ends_the_command_naming_it_and_writes_nothing(tmp_path, monkeypatch, damage, message):
    """A truncated or corrupt download printed "Aborted." or a traceback; a table cut short at a row's end ran a
    shorter benchmark (10 PlantedMem decisions instead of 127) without a word."""
    import backtest.runner
    from backtest.data.prices import packaged

    shipped = packaged() / "prices" / "etf_daily_close.csv.gz"
    damaged = tmp_path / "data" / "prices" / "etf_daily_close.csv.gz"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(_damaged(shipped.read_bytes(), damage))
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(backtest.runner, "_MARKETS", {})
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["backtest", "plantedmem", "--seeds", "0", "--regimes", "no_influence", "--out", str(out)]
    )
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and str(damaged) in output and message in output, output
    assert "Traceback" not in output and not (out / "results.json").exists()
    checked = CliRunner().invoke(app, ["data", "check"])  # which says so too (it read only whether the file was there)
    assert checked.exit_code == 1 and "damaged  prices/etf_daily_close.csv.gz" in checked.output
    assert message in " ".join(checked.output.split())


def test_packaged_prices_are_used_when_the_data_folder_lacks_them(tmp_path, monkeypatch):
    from backtest.data.prices import locate, packaged

    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "empty"))
    assert locate("prices/etf_daily_close.csv.gz") == packaged() / "prices" / "etf_daily_close.csv.gz"


def test_data_check_says_whether_the_data_folder_is_set_and_where_investorbench_comes_from(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMTRIAL_DATA", raising=False)
    unset = " ".join(CliRunner().invoke(app, ["data", "check"]).output.split())
    assert "missing: set MEMTRIAL_DATA to a folder that holds them" in unset
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "empty"))
    checked = CliRunner().invoke(app, ["data", "check"])
    said = " ".join(checked.output.split())
    assert checked.exit_code == 1 and f"MEMTRIAL_DATA ({tmp_path / 'empty'}) does not hold them" in said, said
    assert "set MEMTRIAL_DATA to" not in said and "the guide to backtests says where they come from" in said


def test_unknown_regime_is_rejected(tmp_path):
    result = CliRunner().invoke(app, ["backtest", "plantedmem", "--regimes", "beta_0.9", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown regimes ['beta_0.9']" in result.output


def _words(output: str) -> str:
    return " ".join(output.replace("│", " ").split())  # the error box wraps long messages


@pytest.mark.parametrize(
    ("arguments", "option", "message"),
    [
        (["--seeds", "5-2"], "--seeds", "a range's start not above its end; got '5-2'"),
        (["--seeds", "-1"], "--seeds", "seeds are integers >= 0"),
        (
            ["--seeds", "0,0,1"],
            "--seeds",
            "each seed once (a repeated seed would count its worlds twice); repeated: [0]",
        ),
        (["--seeds", "0-2,1-3"], "--seeds", "repeated: [1, 2]"),
        (["--seeds", "0-99999999999999"], "--seeds", "at most 100,000 seeds"),
        (["--regimes", "poisoned,poisoned"], "--regimes", "each name once"),
        (["--regimes", "curation,all"], "--regimes", "['curation', 'all'] name groups of regimes and are given alone"),
        (
            ["--regimes", "all,poisoned"],
            "--regimes",
            "['all'] name groups of regimes and are given alone, not in a list",
        ),
        (
            ["--regimes", "bogus"],
            "--regimes",
            "unknown regimes ['bogus']; give 'all' or 'curation' alone, or regime ids",
        ),
        (
            ["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"],
            "--workers",
            "with --scheduler the scheduler's workers run the worlds: give one or the other",
        ),
        (["--methods", "memtrial,memtrial"], "--methods", "each name once"),
        (["--draft-budget", "inf"], "--draft-budget", "a budget is a finite number of calls >= 1, got inf"),
        (["--draft-budget", "nan"], "--draft-budget", "a budget is a finite number of calls >= 1, got nan"),
        (["--draft-budget", "0.5"], "--draft-budget", "a budget is a finite number of calls >= 1, got 0.5"),
        (["--scheduler", "bogus"], "--scheduler", "looks like tcp://host:port (or host:port), got 'bogus'"),
        (["--investor", "x"], "--investor", "investor must be one of"),
        (["--learner", "y"], "--learner", "learner must be one of"),
    ],
)
def test_a_bad_option_is_refused_naming_it_before_any_world_runs(tmp_path, arguments, option, message):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["backtest", "plantedmem", *arguments, "--out", str(out)])
    words = _words(result.output)
    assert result.exit_code == 2 and f"Invalid value for '{option}':" in words and message in words, words
    assert not out.exists()  # nothing ran, nothing written


def test_an_output_folder_that_cannot_be_made_is_refused_before_any_world_runs(tmp_path):
    taken = tmp_path / "a_file"
    taken.write_text("not a folder")
    result = CliRunner().invoke(
        app, ["backtest", "plantedmem", "--seeds", "0", "--regimes", "beta_0.5", "--out", str(taken)]
    )
    words = _words(result.output)
    assert result.exit_code == 2 and "Invalid value for '--out': cannot make the output folder" in words
    assert "worlds" not in words and taken.read_text() == "not a folder"


INCOMPLETE = {
    "no investors": {"env": "plantedmem"},
    "investor 'balanced' has no regimes": {"env": "plantedmem", "investors": {"balanced": {}}},
    "regime 'poisoned' has no methods": {"env": "plantedmem", "investors": {"balanced": {"poisoned": {}}}},
    "lacks what the page shows": {
        "env": "plantedmem",
        "investors": {"balanced": {"poisoned": {"memtrial": {}}}},
        "seeds": [1],
    },
}


@pytest.mark.parametrize("kind", ["classalloc", "forecast", "corrupt", *INCOMPLETE])
def test_render_refuses_what_is_not_a_plantedmem_run_and_keeps_its_page(tmp_path, kind):
    (tmp_path / "results.md").write_text("# the run's own page\n")
    if kind == "corrupt":
        (tmp_path / "results.json").write_text('{"env": "plantedmem", "investors": ')
    elif kind in INCOMPLETE:  # valid JSON, but not all a page shows: refused in one message, no traceback
        (tmp_path / "results.json").write_text(json.dumps(INCOMPLETE[kind]))
    else:
        (tmp_path / "results.json").write_text(json.dumps({"env": kind, "investors": {"balanced": {}}, "seeds": [0]}))
    result = CliRunner().invoke(app, ["backtest", "render", str(tmp_path)])
    words = _words(result.output)
    assert result.exit_code == 2, words
    expected = {"corrupt": "is not a run's results"}.get(
        kind, kind if kind in INCOMPLETE else f"holds a {kind} run's results"
    )
    assert expected in words and "Traceback" not in result.output
    assert (tmp_path / "results.md").read_text() == "# the run's own page\n"


@pytest.mark.slow  # NUTS inside every MemTrial variant
def test_plantedmem_with_the_bayes_learner(tmp_path):
    out = tmp_path / "bayes"
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "plantedmem",
            "--investor",
            "balanced",
            "--regimes",
            "beta_0.5",
            "--seeds",
            "0",
            "--synthetic-market",
            "--methods",
            "memtrial,no_memory",
            "--learner",
            "bayes",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    cell = json.loads((out / "results.json").read_text())["investors"]["balanced"]["beta_0.5"]["memtrial"]
    assert cell["value_recovery"] is not None and cell["value_recovery"] > 0


def test_forecast_command_runs_scored_decisions_and_writes_its_table(tmp_path):
    out = tmp_path / "forecast"
    result = CliRunner().invoke(app, ["backtest", "forecast", "--seeds", "0-1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads((out / "results.json").read_text())
    methods = document["methods"]
    assert set(methods) == {
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
    }
    assert methods["memtrial"]["mean_utility"] > methods["no_memory"]["mean_utility"]  # the useful experiences are used
    calls = {m: cell["draft_calls_per_decision"] for m, cell in methods.items()}
    # the default quarantines credibly misleading experiences: a plan without them drafts the subsets of those left
    assert calls["memtrial"] <= calls["counterfactual_argmax"] == 8 and calls["no_memory"] == 1
    assert all(calls[f"memtrial_budget_{b}"] <= b for b in (2, 3, 4))
    assert all(-2.0 <= m["mean_utility"] <= 0.0 for m in methods.values())  # minus a Brier score
    assert document["value_recovery"] > 0
    assert "| MemTrial (trust dial) |" in (out / "results.md").read_text()
    bad = CliRunner().invoke(app, ["backtest", "forecast", "--methods", "magic", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown methods ['magic']" in bad.output


def test_a_run_of_curation_variants_alone_writes_its_report(tmp_path):
    """None of the methods the regime plot shows is among them: its panel is empty, without a legend."""
    out = tmp_path / "curation"
    methods = "memtrial_value_aware,memtrial_curated"
    arguments = ["--investor", "balanced", "--regimes", "drift", "--seeds", "0", "--workers", "1"]
    result = CliRunner().invoke(app, ["backtest", "plantedmem", *arguments, "--methods", methods, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "utility_by_regime.png").stat().st_size > 1000
    assert set(json.loads((out / "results.json").read_text())["investors"]["balanced"]["drift"]) == set(
        methods.split(",")
    )


def test_the_report_shows_each_curation_figure_results_json_holds(tmp_path):
    out = tmp_path / "poisoned"
    methods = "memtrial,memtrial_similarity,no_memory"
    arguments = ["--investor", "balanced", "--regimes", "poisoned,noise_only", "--seeds", "0-1", "--workers", "1"]
    result = CliRunner().invoke(app, ["backtest", "plantedmem", *arguments, "--methods", methods, "--out", str(out)])
    assert result.exit_code == 0, result.output
    cells = json.loads((out / "results.json").read_text())["investors"]["balanced"]["poisoned"]
    page = (out / "results.md").read_text()
    section = page.split("## Curation", 1)[1].split("\n## ", 1)[0]
    table = section.split("### balanced, poisoned", 1)[1]
    header = (
        "| method | after the event (pp) | poisoned share of slots | false quarantine rate | median quarantine delay |"
    )
    assert header in table
    default = cells["memtrial"]
    assert (
        f"| MemTrial (trust dial, odd half) | {default['mean_utility_after_event_pp']:.4f} | "
        f"{default['poison_retrieved_share']:.3f} | {default['false_quarantine_rate']:.2f} | "
        f"{default['quarantine_delay']:.0f} |"
    ) in table
    similarity = cells["memtrial_similarity"]
    assert (
        f"| MemTrial, similarity retrieval | {similarity['mean_utility_after_event_pp']:.4f} | "
        f"{similarity['poison_retrieved_share']:.3f} | - | - |"
    ) in table
    assert "### balanced, noise_only" not in section  # a null regime without a quarantine: nothing to show


def test_a_page_names_its_seeds_as_they_were_given():
    from backtest.report import seeds_label

    assert seeds_label([7]) == "1 seed: 7"
    assert seeds_label([0, 5]) == "2 seeds: 0, 5"
    assert seeds_label(list(range(15, 115))) == "100 seeds: 15-114"
    assert seeds_label([0, 1, 2, 5, 7, 8, 9]) == "7 seeds: 0-2, 5, 7-9"


def test_the_forecast_help_lists_every_forecast_method():
    from backtest.methods.registry import FORECAST_METHODS

    words = _words(CliRunner().invoke(app, ["backtest", "forecast", "--help"], terminal_width=400).output)
    assert ", ".join(FORECAST_METHODS) in words


def test_a_scheduler_address_with_or_without_its_scheme_is_taken():
    from backtest.cli import _check_budget_and_scheduler

    for address in ("tcp://127.0.0.1:8786", "127.0.0.1:8786", "localhost:8786", "tls://[::1]:8786"):
        _check_budget_and_scheduler(None, address)


def test_an_unreachable_scheduler_ends_the_command_in_one_line_and_only_a_connection_is_blamed(tmp_path):
    import dask
    import distributed  # noqa: F401  # its defaults in dask's config first: leaving the set below restores them

    from backtest.runner import SchedulerError, WorldSpec, run_many

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(SchedulerError) as error:
            run_many([WorldSpec("beta_0.5", "balanced", 0, methods=("no_memory",))], scheduler="tcp://127.0.0.1:1")
        assert str(error.value).startswith("--scheduler tcp://127.0.0.1:1: cannot reach it")
        arguments = ["--seeds", "0", "--regimes", "beta_0.5", "--investor", "balanced", "--methods", "no_memory"]
        out = tmp_path / "out"
        result = CliRunner().invoke(
            app, ["backtest", "plantedmem", *arguments, "--scheduler", "tcp://127.0.0.1:1", "--out", str(out)]
        )
    assert result.exit_code == 2 and "error: --scheduler tcp://127.0.0.1:1: cannot reach it" in result.output
    assert "Traceback" not in result.output and not (out / "results.json").exists()


@pytest.mark.parametrize("variant", ["CRLF line ends", "a blank line at the end"])
def test_a_whole_price_table_written_another_way_reads_as_the_shipped_one(tmp_path, variant):
    import gzip

    from backtest.data.prices import packaged, read_closes

    shipped = packaged() / "prices" / "etf_daily_close.csv.gz"
    text = gzip.decompress(shipped.read_bytes())
    other = tmp_path / "prices" / "etf_daily_close.csv.gz"
    other.parent.mkdir()
    other.write_bytes(gzip.compress(text.replace(b"\n", b"\r\n") if variant.startswith("CRLF") else text + b"\n\n"))
    assert read_closes(other).equals(read_closes(shipped))


def test_a_data_folder_that_is_none_is_refused_instead_of_left_for_the_shipped_prices(tmp_path, monkeypatch):
    import backtest.runner

    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "mistyped"))
    monkeypatch.setattr(backtest.runner, "_MARKETS", {})
    for command in (["backtest", "plantedmem", "--seeds", "0", "--out", str(tmp_path / "run")], ["data", "check"]):
        result = CliRunner().invoke(app, command)
        words = " ".join(result.output.split())
        assert result.exit_code == 2 and f"MEMTRIAL_DATA names {tmp_path / 'mistyped'}, which is not a folder" in words
    assert not (tmp_path / "run" / "results.json").exists()


def test_results_json_records_the_command_and_the_data_and_a_run_clears_another_benchmarks_plots(tmp_path, monkeypatch):
    """results.json recorded neither the options nor the data a run read (render printed "(unknown)" once
    results.md was gone); a PlantedMem run into a real-data run's folder left that run's plots beside its own."""
    import hashlib

    from backtest.data.prices import packaged

    monkeypatch.delenv("MEMTRIAL_DATA", raising=False)  # the shipped prices (CI points it at the data folder)
    out = tmp_path / "run"
    out.mkdir()
    for stale in ("utility_by_method.png", "wealth_paths_balanced.png", "gate_open_rate.png"):
        (out / stale).write_bytes(b"an earlier run's plot")
    result = CliRunner().invoke(
        app,
        [
            "backtest",
            "plantedmem",
            "--seeds",
            "0",
            "--regimes",
            "no_influence",
            "--methods",
            "no_memory",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads((out / "results.json").read_text())
    shipped = packaged() / "prices" / "etf_daily_close.csv.gz"
    assert document["data"]["prices/etf_daily_close.csv.gz"] == {
        "from": "shipped",
        "sha256": hashlib.sha256(shipped.read_bytes()).hexdigest(),
    }
    assert set(document["data"]) == {"prices/etf_daily_close.csv.gz", "prices/asset_classes.csv"}
    assert not any(
        (out / stale).exists() for stale in ("utility_by_method.png", "wealth_paths_balanced.png", "gate_open_rate.png")
    )
    (out / "results.md").unlink()
    assert CliRunner().invoke(app, ["backtest", "render", str(out)]).exit_code == 0
    assert f"Command: `{document['command']}`" in (out / "results.md").read_text()


def test_a_run_on_the_synthetic_market_records_no_data_and_needs_no_data_folder(tmp_path, monkeypatch):
    # it reads no file: results.json names none, and a data folder that is none does not stop it after its worlds
    monkeypatch.setenv("MEMTRIAL_DATA", str(tmp_path / "mistyped"))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["backtest", "plantedmem", "--synthetic-market", "--seeds", "0", "--regimes", "no_influence"]
        + ["--methods", "no_memory", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["data"] == {}
