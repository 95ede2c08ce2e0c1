"""``memtrial backtest``: run the benchmarks from the command line."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import typer

app = typer.Typer(help="Offline backtests on PlantedMem and the real-data benchmarks.", no_args_is_help=True)

INVESTOR_CHOICES = ("aggressive", "balanced", "conservative")


def parse_seeds(text: str) -> list[int]:
    """'15-114' or '0,3,5' or '7' -> seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                if high < low:
                    raise ValueError
                seeds.extend(range(low, high + 1))
            else:
                seeds.append(int(part))
    except ValueError:
        raise typer.BadParameter(f"seeds must look like 15-114 or 1,2,3, got {text!r}") from None
    return seeds


@app.callback()
def _backtest() -> None:
    """Offline backtests on PlantedMem and the real-data benchmarks."""


@app.command("plantedmem")
def plantedmem(
    investor: str = typer.Option("all", help="aggressive, balanced, conservative or all."),
    regimes: str = typer.Option("all", help="'all' or comma-separated regime ids."),
    seeds: str = typer.Option("15-114", help="Seeds: test 15-114, dev 0-14 (tune only on dev)."),
    workers: int = typer.Option(1, min=1, help="Local worker processes."),
    scheduler: str | None = typer.Option(None, help="Dask scheduler address (tcp://host:port): run the worlds there."),
    out: Path = typer.Option(..., help="Output folder for results.json, results.md and the plots."),
    synthetic_market: bool = typer.Option(False, "--synthetic-market", help="Regime-switching synthetic class returns instead of the price data."),
    methods: str | None = typer.Option(None, help="Comma-separated method ids (default: all)."),
    learner: str = typer.Option("empirical", help="Value model of the MemTrial variants: empirical (closed form) or bayes (NumPyro, SVI)."),
) -> None:
    """PlantedMem: every method, every regime, every investor."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from backtest.methods.registry import METHOD_IDS
    from backtest.plantedmem import REGIMES
    from backtest.report import write_report
    from backtest.runner import WorldSpec, market_for, run_many
    from memtrial.errors import MemtrialError

    investors = list(INVESTOR_CHOICES) if investor == "all" else [investor]
    if any(i not in INVESTOR_CHOICES for i in investors):
        raise typer.BadParameter(f"investor must be one of {[*INVESTOR_CHOICES, 'all']}, got {investor!r}")
    regime_ids = list(REGIMES) if regimes == "all" else [r.strip() for r in regimes.split(",")]
    unknown = [r for r in regime_ids if r not in REGIMES]
    if unknown:
        raise typer.BadParameter(f"unknown regimes {unknown}; choose from {list(REGIMES)}")
    method_ids = None if methods is None else tuple(m.strip() for m in methods.split(","))
    if method_ids is not None and (bad := [m for m in method_ids if m not in METHOD_IDS]):
        raise typer.BadParameter(f"unknown methods {bad}; choose from {METHOD_IDS}")
    if learner not in ("empirical", "bayes"):
        raise typer.BadParameter(f"learner must be one of ['empirical', 'bayes'], got {learner!r}")
    seed_list = parse_seeds(seeds)
    try:
        market_for(synthetic_market)
    except MemtrialError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    specs = [WorldSpec(r, i, s, synthetic_market, method_ids, learner) for i in investors for r in regime_ids for s in seed_list]
    start = time.perf_counter()
    columns = (TextColumn("worlds"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task("worlds", total=len(specs))
        results = run_many(specs, workers, scheduler, on_done=lambda _: progress.advance(task))
    wall = time.perf_counter() - start
    command = "memtrial backtest " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else "memtrial backtest plantedmem"
    document = write_report(out, results, seed_list, wall, command)
    memtrial_means = [cell["memtrial"]["mean_utility_pp"] for cells in document["investors"].values() for cell in cells.values() if "memtrial" in cell]
    typer.echo(f"{len(specs)} worlds in {wall:.1f} s; results in {out}/results.json")
    if memtrial_means:
        typer.echo(f"MemTrial mean utility over regimes and investors: {sum(memtrial_means) / len(memtrial_means):.4f} pp")
