"""``memtrial backtest``: run the benchmarks from the command line."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from backtest.methods.registry import (
    CURATION_IDS,
    FORECAST_METHODS,
    FRONTIER_IDS,
    KNOWN_IDS,
    METHOD_IDS,
    REAL_METHOD_IDS,
)
from backtest.plantedmem import ALL_REGIMES, CURATION_REGIMES, REGIMES

app = typer.Typer(
    help="Offline backtests on PlantedMem and the real-data benchmarks.", no_args_is_help=True, add_completion=False
)
data_app = typer.Typer(
    help="Benchmark data: what is present and where each input is looked for.",
    no_args_is_help=True,
    add_completion=False,
)

INVESTOR_CHOICES = ("aggressive", "balanced", "conservative")
REGIME_HELP = (
    "'all' (the seven: "
    + ", ".join(REGIMES)
    + "), 'curation' ("
    + ", ".join(CURATION_REGIMES)
    + ") or comma-separated regime ids."
)
FRONTIER_HELP = " By name only (the cost-quality frontier): " + ", ".join(FRONTIER_IDS) + "."
CURATION_HELP = " By name only (curation, method 4.12-4.14): " + ", ".join(CURATION_IDS) + "."
METHOD_HELP = (
    "Comma-separated method ids (default: all): " + ", ".join(METHOD_IDS) + "." + FRONTIER_HELP + CURATION_HELP
)
REAL_METHOD_HELP = "Comma-separated method ids (default: all): " + ", ".join(REAL_METHOD_IDS) + "." + FRONTIER_HELP

# options every benchmark command takes (the cost-quality frontier, method 4.11)
DRAFT_BUDGET = typer.Option(
    None,
    "--draft-budget",
    metavar="<calls>",
    help="LLM draft calls per decision of the default memtrial, its curation variants and memtrial_robust (method "
    "4.11; default: their whole design).",
)
FRONTIER = typer.Option(
    False, "--frontier", help="Add the frontier's variants to the methods: " + ", ".join(FRONTIER_IDS) + "."
)


MAX_SEEDS = 100_000  # worlds per investor and regime a command line may ask for


def bad(option: str, message: str) -> typer.BadParameter:
    """A refusal of an option's value, naming the option (``Invalid value for '--seeds': ...``)."""
    return typer.BadParameter(message, param_hint=f"'--{option}'")


def parse_seeds(text: str) -> list[int]:
    """'15-114' or '0,3,5' or '7' -> seeds: integers >= 0, a range's start not above its end, none twice."""
    seeds: list[int] = []
    rule = "seeds are integers >= 0, as a range (15-114) or a list (1,2,3), a range's start not above its end"
    for part in text.split(","):
        try:
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
            else:
                low = high = int(part)
        except ValueError:
            raise bad("seeds", f"{rule}; got {text!r}") from None
        if low < 0 or high < low:
            raise bad("seeds", f"{rule}; got {part.strip()!r} in {text!r}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise bad("seeds", f"at most {MAX_SEEDS:,} seeds; {text!r} holds more")
        seeds.extend(range(low, high + 1))
    if repeated := _repeats(seeds):
        raise bad("seeds", f"each seed once (a repeated seed would count its worlds twice); repeated: {repeated[:10]}")
    return seeds


def _repeats(values: list[int]) -> list[int]:
    seen: set[int] = set()
    repeated: set[int] = set()
    for value in values:
        (repeated if value in seen else seen).add(value)
    return sorted(repeated)


def _listed(option: str, text: str) -> list[str]:
    """A comma-separated list of names, each once."""
    names = [name.strip() for name in text.split(",")]
    if repeated := sorted({n for n in names if names.count(n) > 1}):
        raise bad(option, f"each name once (a repeated one would count its worlds twice); repeated: {repeated}")
    return names


def _check_methods_and_learner(method_ids: tuple[str, ...] | None, known: list[str], learner: str) -> None:
    if method_ids is not None and (unknown := [m for m in method_ids if m not in known]):
        raise bad("methods", f"unknown methods {unknown}; choose from {known}")
    if learner not in ("empirical", "bayes"):
        raise bad("learner", f"learner must be one of ['empirical', 'bayes'], got {learner!r}")


def _check_budget_and_scheduler(draft_budget: float | None, scheduler: str | None, workers: int = 1) -> None:
    if draft_budget is not None and not (math.isfinite(draft_budget) and draft_budget >= 1.0):
        raise bad("draft-budget", f"a budget is a finite number of calls >= 1, got {draft_budget!r}")
    if scheduler is not None and not re.fullmatch(r"(?:[a-z]+://)?\S+:\d+", scheduler):
        raise bad("scheduler", f"a scheduler's address looks like tcp://host:port (or host:port), got {scheduler!r}")
    if scheduler is not None and workers != 1:
        raise bad(
            "workers",
            f"--workers starts local worker processes, and with --scheduler the scheduler's workers run the worlds: "
            f"give one or the other, got --workers {workers} with --scheduler {scheduler}",
        )


def _check_out(out: Path) -> None:
    """The output folder can be written before any world runs (a run is not lost at its end)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise bad("out", f"cannot make the output folder {str(out)!r}: {error.strerror or error}") from None
    if not os.access(out, os.W_OK):
        raise bad("out", f"the output folder {str(out)!r} is not writable")


def _methods(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(_listed("methods", text))


def _with_frontier(method_ids: tuple[str, ...] | None, default: list[str]) -> tuple[str, ...]:
    chosen = list(method_ids or default)
    return tuple(chosen + [m for m in FRONTIER_IDS if m not in chosen])


def _load_or_exit(load: Callable[[], object]) -> None:
    """Load the benchmark data up front: a missing or malformed file ends the command with its name."""
    from memtrial.errors import MemtrialError

    try:
        load()
    except MemtrialError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None


@app.callback()
def _backtest() -> None:
    """Offline backtests on PlantedMem and the real-data benchmarks."""


@app.command("plantedmem")
def plantedmem(
    investor: str = typer.Option("all", help="aggressive, balanced, conservative or all."),
    regimes: str = typer.Option("all", help=REGIME_HELP),
    seeds: str = typer.Option("15-114", help="Seeds: test 15-114, dev 0-14 (tune only on dev)."),
    workers: int = typer.Option(1, min=1, help="Local worker processes."),
    scheduler: str | None = typer.Option(None, help="Dask scheduler address (tcp://host:port): run the worlds there."),
    out: Path = typer.Option(..., help="Output folder for results.json, results.md and the plots."),
    synthetic_market: bool = typer.Option(
        False, "--synthetic-market", help="Regime-switching synthetic class returns instead of the price data."
    ),
    methods: str | None = typer.Option(None, help=METHOD_HELP),
    learner: str = typer.Option(
        "empirical", help="Value model of the MemTrial variants: empirical (closed form) or bayes (NumPyro, SVI)."
    ),
    draft_budget: float | None = DRAFT_BUDGET,
    frontier: bool = FRONTIER,
) -> None:
    """PlantedMem: every method, every regime, every investor."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from backtest.data.prices import provenance
    from backtest.report import PLANTEDMEM_INPUTS, write_report
    from backtest.runner import WorldSpec, market_for, run_many

    investors = list(INVESTOR_CHOICES) if investor == "all" else [investor]
    if any(i not in INVESTOR_CHOICES for i in investors):
        raise bad("investor", f"investor must be one of {[*INVESTOR_CHOICES, 'all']}, got {investor!r}")
    named = {"all": list(REGIMES), "curation": list(CURATION_REGIMES)}
    regime_ids = named.get(regimes) or _listed("regimes", regimes)
    if groups := [r for r in regime_ids if r in named]:
        raise bad(
            "regimes",
            f"{groups} name groups of regimes and are given alone, not in a list; got {regimes!r} "
            f"(list regime ids from {list(ALL_REGIMES)} instead)",
        )
    unknown = [r for r in regime_ids if r not in ALL_REGIMES]
    if unknown:
        raise bad(
            "regimes",
            f"unknown regimes {unknown}; give 'all' or 'curation' alone, or regime ids from {list(ALL_REGIMES)}",
        )
    method_ids = _methods(methods)
    _check_methods_and_learner(method_ids, KNOWN_IDS, learner)
    _check_budget_and_scheduler(draft_budget, scheduler, workers)
    if frontier:
        method_ids = _with_frontier(method_ids, METHOD_IDS)
    seed_list = parse_seeds(seeds)
    _load_or_exit(lambda: market_for(synthetic_market))
    data: dict[str, Any] = {}  # the files the run reads (none on the synthetic market), named in results.json
    _load_or_exit(lambda: data.update(provenance(() if synthetic_market else PLANTEDMEM_INPUTS)))
    _check_out(out)  # once the data are there: a run refused for its data leaves no folder behind
    specs = [
        WorldSpec(r, i, s, synthetic_market, method_ids, learner, draft_budget=draft_budget)
        for i in investors
        for r in regime_ids
        for s in seed_list
    ]
    start = time.perf_counter()
    columns = (
        TextColumn("worlds"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    from memtrial.errors import MemtrialError

    try:
        with Progress(*columns, transient=False) as progress:
            task = progress.add_task("worlds", total=len(specs))
            results = run_many(specs, workers, scheduler, on_done=lambda _: progress.advance(task))
    except MemtrialError as error:  # an unreachable scheduler, a world's bad input: one line, no traceback
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    wall = time.perf_counter() - start
    command = (
        "memtrial backtest " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if len(sys.argv) > 2
        else "memtrial backtest plantedmem"
    )
    document = write_report(out, results, seed_list, wall, command, data)
    memtrial_means = [
        cell["memtrial"]["mean_utility_pp"]
        for cells in document["investors"].values()
        for cell in cells.values()
        if "memtrial" in cell
    ]
    typer.echo(f"{len(specs)} worlds in {wall:.1f} s; results in {out}/results.json")
    if memtrial_means:
        typer.echo(
            f"MemTrial mean utility over regimes and investors: {sum(memtrial_means) / len(memtrial_means):.4f} pp"
        )


def _real_command(env: str, help_text: str) -> None:
    def command(
        drafter: str = typer.Option(
            "analogical",
            help="analogical (offline, no LLM), litellm (any model litellm reaches) or smollm2 (the local model of the local-llm extra).",
        ),
        model: str | None = typer.Option(
            None, help="litellm model name, e.g. openai/gpt-4o-mini or openai/smollm2 with --api-base."
        ),
        api_base: str | None = typer.Option(None, help="Base URL of an OpenAI-compatible server (litellm's api_base)."),
        cache: Path | None = typer.Option(
            None, help="Response cache file (SQLite); default OUT/draft_cache.sqlite for litellm."
        ),
        offline: bool = typer.Option(
            False, "--offline", help="Replay answers from the cache only; a miss is an error."
        ),
        json_schema: bool = typer.Option(
            False, "--json-schema", help="Ask the server to constrain answers to the weights' JSON schema."
        ),
        investor: str = typer.Option("all", help="aggressive, balanced, conservative or all."),
        seeds: str = typer.Option("0-19", help="Seeds of the drafter's randomness and the methods' exploration."),
        workers: int = typer.Option(1, min=1, help="Local worker processes."),
        scheduler: str | None = typer.Option(
            None, help="Dask scheduler address (tcp://host:port): run the worlds there."
        ),
        methods: str | None = typer.Option(None, help=REAL_METHOD_HELP),
        warmup_dates: int | None = typer.Option(
            None, min=0, help="Keep only the last N warm-up decisions (short runs)."
        ),
        test_dates: int | None = typer.Option(None, min=1, help="Keep only the first N test decisions (short runs)."),
        learner: str = typer.Option("empirical", help="Value model of the MemTrial variants: empirical or bayes."),
        out: Path = typer.Option(..., help="Output folder for results.json, results.md and the plots."),
        draft_budget: float | None = DRAFT_BUDGET,
        frontier: bool = FRONTIER,
    ) -> None:
        _run_real(
            env,
            drafter,
            model,
            api_base,
            cache,
            offline,
            json_schema,
            investor,
            seeds,
            workers,
            scheduler,
            methods,
            warmup_dates,
            test_dates,
            learner,
            out,
            draft_budget,
            frontier,
        )

    command.__doc__ = help_text
    app.command(env)(command)


def _run_real(
    env: str,
    drafter: str,
    model: str | None,
    api_base: str | None,
    cache: Path | None,
    offline: bool,
    json_schema: bool,
    investor: str,
    seeds: str,
    workers: int,
    scheduler: str | None,
    methods: str | None,
    warmup_dates: int | None,
    test_dates: int | None,
    learner: str,
    out: Path,
    draft_budget: float | None = None,
    frontier: bool = False,
) -> None:
    from backtest.data.prices import provenance
    from backtest.methods.registry import REAL_METHOD_IDS
    from backtest.realdata import load_setting
    from backtest.report_real import REAL_INPUTS
    from backtest.runner import DrafterSpec, WorldSpec
    from memtrial.errors import MemtrialError

    investors = list(INVESTOR_CHOICES) if investor == "all" else [investor]
    if any(i not in INVESTOR_CHOICES for i in investors):
        raise bad("investor", f"investor must be one of {[*INVESTOR_CHOICES, 'all']}, got {investor!r}")
    if drafter not in ("analogical", "litellm", "smollm2"):
        raise bad("drafter", f"drafter must be one of ['analogical', 'litellm', 'smollm2'], got {drafter!r}")
    if drafter == "smollm2" and (model or api_base):
        raise typer.BadParameter("--model and --api-base do not apply to --drafter smollm2 (it serves its own model)")
    if drafter == "litellm" and not model:
        raise typer.BadParameter("--model is required with --drafter litellm")
    if drafter == "analogical" and (model or api_base or offline or cache is not None or json_schema):
        raise typer.BadParameter(
            "--model and --api-base apply to --drafter litellm only, and --offline, --cache and --json-schema to "
            "the model drafters (litellm, smollm2): the analogical drafter calls no model"
        )
    method_ids = _methods(methods)
    _check_methods_and_learner(method_ids, [*REAL_METHOD_IDS, *FRONTIER_IDS], learner)
    _check_budget_and_scheduler(draft_budget, scheduler, workers)
    if frontier:
        method_ids = _with_frontier(method_ids, REAL_METHOD_IDS)
    if method_ids is not None and "equal_weight" not in method_ids:
        method_ids = ("equal_weight", *method_ids)
    seed_list = parse_seeds(seeds)
    if drafter != "analogical" and cache is None:
        cache = out / "draft_cache.sqlite"
    _check_cache(cache, offline)  # before the output folder is made: a refusal leaves nothing behind
    _load_or_exit(lambda: load_setting(env))
    data: dict[str, Any] = {}
    _load_or_exit(lambda: data.update(provenance(REAL_INPUTS[env])))
    _check_out(out)  # once the data are there: a run refused for its data leaves no folder behind
    with contextlib.ExitStack() as stack:
        if drafter == "smollm2":
            from backtest.local_llm import MODEL_NAME, LocalModelServer

            model, json_schema = MODEL_NAME, True
            if not offline:
                try:
                    api_base = stack.enter_context(LocalModelServer())
                except MemtrialError as error:
                    typer.echo(f"error: {error}", err=True)
                    raise typer.Exit(code=2) from None
        kind = "analogical" if drafter == "analogical" else "litellm"
        # the weak local model's answers are clipped at 0 (its decoding cannot forbid a minus sign); others are rejected
        spec_of_drafter = DrafterSpec(
            kind, model, api_base, str(cache.resolve()) if cache else None, offline, json_schema, drafter == "smollm2"
        )
        specs = [
            WorldSpec(
                env,
                i,
                s,
                methods=method_ids,
                value_model=learner,
                env=env,
                drafter=spec_of_drafter,
                warmup_dates=warmup_dates,
                test_dates=test_dates,
                draft_budget=draft_budget,
            )
            for i in investors
            for s in seed_list
        ]
        drafter_info = {"kind": drafter, "model": model, "api_base": api_base}
        _run_specs(env, specs, seed_list, workers, scheduler, out, drafter_info, data)


def _run_specs(
    env: str,
    specs: list[Any],
    seed_list: list[int],
    workers: int,
    scheduler: str | None,
    out: Path,
    drafter_info: dict[str, Any],
    data: dict[str, Any],
) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from backtest.report_real import write_real_report
    from backtest.runner import run_many
    from memtrial.errors import MemtrialError

    start = time.perf_counter()
    columns = (
        TextColumn(f"{env} worlds"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, transient=False) as progress:
            task = progress.add_task("worlds", total=len(specs))
            results = run_many(specs, workers, scheduler, on_done=lambda _: progress.advance(task))
    except MemtrialError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    wall = time.perf_counter() - start
    command = (
        "memtrial backtest " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if len(sys.argv) > 2
        else f"memtrial backtest {env}"
    )
    document = write_real_report(out, results, seed_list, wall, command, env, drafter_info, data)
    typer.echo(f"{len(specs)} worlds in {wall:.1f} s; results in {out}/results.json")
    for name, cells in document["investors"].items():
        cell = cells[env]
        if "memtrial" in cell:
            gap = cell["memtrial"]["mean_utility_pp"] - cell["equal_weight"]["mean_utility_pp"]
            typer.echo(
                f"{name}: MemTrial {cell['memtrial']['mean_utility_pp']:.4f} pp, 1/N {cell['equal_weight']['mean_utility_pp']:.4f} pp ({gap:+.4f})"
            )


_real_command("classalloc", "ClassAlloc: five class indices, monthly, warm-up 2015-07..2020-04, test 2020-05 on.")
_real_command(
    "investorbench", "InvestorBench: HON, JNJ, MSFT, UVV + cash, daily, horizon 1, news in the context; 149 test days."
)
_real_command(
    "portbench", "PortBench-97: 88 ETFs/stocks + 9 crypto, monthly, warm-up 2019-08..2022-12, test 2023-01..2024-11."
)


def _check_cache(cache: Path | None, offline: bool) -> None:
    """Refuse, before any world runs, a draft cache that cannot be read, or none to replay ``--offline``."""
    if cache is None:
        return
    if cache.exists() and not cache.is_file():
        raise bad("cache", f"{cache} is not a file: give the draft cache's file (a SQLite file memtrial writes)")
    if offline and not cache.exists():
        raise bad(
            "cache", f"{cache} does not exist: --offline replays the drafts a cache holds (drop --offline to make them)"
        )
    if cache.exists():
        from backtest.llm import ResponseCache
        from memtrial.errors import MemtrialError

        try:
            ResponseCache(cache).close()
        except MemtrialError as error:
            raise bad("cache", error.message) from None


#: Every input of the benchmarks: (path within a data folder, who needs it).
DATA_INPUTS = (
    ("prices/etf_daily_close.csv.gz", "plantedmem, classalloc, portbench"),
    ("prices/crypto_daily_close.csv.gz", "portbench"),
    ("prices/asset_classes.csv", "plantedmem, classalloc, portbench"),
    ("investorbench/hon.json", "investorbench"),
    ("investorbench/jnj.json", "investorbench"),
    ("investorbench/msft.json", "investorbench"),
    ("investorbench/uvv.json", "investorbench"),
)


@app.command("render")
def render(
    folder: Path = typer.Argument(..., help="A PlantedMem run's output folder (its results.json)."),
) -> None:
    """Re-render a PlantedMem run's results.md and cost-quality plot from its results.json, running nothing."""
    import json

    from backtest.report import render as render_report

    source = folder / "results.json"
    if not source.is_file():
        raise typer.BadParameter(f"{source} does not exist: give a PlantedMem run's --out folder")
    try:
        document = json.loads(source.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise typer.BadParameter(f"{source} is not a run's results (JSON): {error}") from None
    env = document.get("env") if isinstance(document, dict) else None
    if env != "plantedmem":
        raise typer.BadParameter(
            f"{source} holds a {env or 'non-PlantedMem'} run's results: render rewrites a PlantedMem run's page only "
            "(its own page was written by the run and stays as it is)"
        )
    missing = _incomplete(document)
    if missing:
        raise typer.BadParameter(f"{source} is not a whole PlantedMem run's results: {missing}; nothing was written")
    try:
        written = render_report(folder)
    except (KeyError, TypeError, ValueError, IndexError, StopIteration) as error:  # a figure the page needs
        raise typer.BadParameter(
            f"{source} lacks what the page shows ({type(error).__name__}: {error}); nothing was written: "
            "render a run's own results.json"
        ) from None
    for path in written:
        typer.echo(f"wrote {path}")


def _incomplete(document: dict[str, object]) -> str | None:
    """What a PlantedMem results.json lacks that every page needs (investors, regimes, methods, seeds), or None."""
    investors = document.get("investors")
    if not isinstance(investors, dict) or not investors:
        return "no investors"
    for investor, regimes in investors.items():
        if not isinstance(regimes, dict) or not regimes:
            return f"investor {investor!r} has no regimes"
        for regime, methods in regimes.items():
            if not isinstance(methods, dict) or not methods:
                return f"investor {investor!r}, regime {regime!r} has no methods"
    seeds = document.get("seeds")
    if not isinstance(seeds, list) or not seeds:
        return "no seeds"
    return None


@app.command("forecast")
def forecast(
    seeds: str = typer.Option("15-114", help="Seeds: test 15-114, dev 0-14."),
    workers: int = typer.Option(1, min=1, help="Local worker processes."),
    out: Path = typer.Option(..., help="Output folder for results.json and results.md."),
    methods: str | None = typer.Option(
        None,
        help="Comma-separated method ids (default: all): " + ", ".join(FORECAST_METHODS) + ".",
    ),
) -> None:
    """PlantedForecast: scored decisions (three-outcome forecasts, Brier rule) with planted experiences."""
    import json

    from backtest.forecast import forecast_report, run_forecasts

    seed_list = parse_seeds(seeds)
    chosen = tuple(_listed("methods", methods)) if methods else tuple(FORECAST_METHODS)
    if unknown := [m for m in chosen if m not in FORECAST_METHODS]:
        raise bad("methods", f"unknown methods {unknown}; choose from {FORECAST_METHODS}")
    _check_out(out)
    results, wall = run_forecasts(seed_list, workers, chosen)
    command = (
        "memtrial backtest forecast " + " ".join(shlex.quote(a) for a in sys.argv[sys.argv.index("forecast") + 1 :])
        if "forecast" in sys.argv
        else "memtrial backtest forecast"
    )
    document, table = forecast_report(results, seed_list, wall, command)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({**document, "worlds": results}, indent=1) + "\n")
    (out / "results.md").write_text(table)
    typer.echo(f"{len(seed_list)} worlds in {wall:.1f} s; results in {out / 'results.json'}")
    best = document["methods"]
    if "memtrial" in best:
        typer.echo(
            f"MemTrial {best['memtrial']['mean_utility']:.4f}"
            + "".join(f", {m} {best[m]['mean_utility']:.4f}" for m in best if m != "memtrial")
        )


@data_app.callback()
def _data() -> None:
    """Benchmark data: what is present and where each input is looked for."""


@data_app.command("check")
def data_check() -> None:
    """Report every benchmark input: the copy in use, or every place it was looked for (exit 1 if any is missing)."""
    from backtest.data import check_input
    from backtest.data.prices import DataError, candidates

    missing = damaged = 0
    for relative, users in DATA_INPUTS:
        try:
            places = candidates(relative)
        except DataError as error:  # MEMTRIAL_DATA names no folder
            typer.echo(f"error: {error.message}", err=True)
            raise typer.Exit(code=2) from None
        found = next((p for p in places if p.is_file()), None)
        if found is not None:
            try:
                check_input(found)
            except DataError as error:
                damaged += 1
                typer.echo(f"damaged  {relative:36s} {error.message}  ({users})")
                continue
            typer.echo(f"ok       {relative:36s} {found}  ({users})")
        else:
            missing += 1
            typer.echo(f"missing  {relative:36s} looked in: {', '.join(str(p) for p in places)}  ({users})")
    if missing:
        folder = os.environ.get("MEMTRIAL_DATA")
        where = (
            "set MEMTRIAL_DATA to a folder that holds them"
            if not folder
            else f"MEMTRIAL_DATA ({folder}) does not hold them (the places looked in are above)"
        )
        typer.echo(
            f"{missing} input{'s' if missing > 1 else ''} missing: {where}. InvestorBench's files are not shipped: "
            "the guide to backtests says where they come from and where they go."
        )
    if damaged:
        typer.echo(
            f"{damaged} input{'s' if damaged > 1 else ''} damaged: fetch {'them' if damaged > 1 else 'it'} again"
        )
    if missing or damaged:
        raise typer.Exit(code=1)
    typer.echo("every benchmark input is present and reads as the benchmarks read it")
