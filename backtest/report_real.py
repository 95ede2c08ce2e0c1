"""Reports of the real-data settings: results.json, a Markdown table per investor and PNG plots.

The document has the PlantedMem shape (investors -> setting -> methods ->
summary over seeds) plus the setting's dates, what the run excluded and why,
and the drafter's usage (calls, replayed answers, tokens, cost).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from backtest.report import (
    DISPLAY,
    PLOTS,
    aggregate,
    frontier_lines,
    frontier_plot,
    save_figure,
    seeds_label,
)

__all__ = ["markdown_real", "plots_real", "write_real_report"]

TITLES = {"classalloc": "ClassAlloc", "investorbench": "InvestorBench", "portbench": "PortBench-97"}


def _usage(results: Sequence[dict[str, Any]]) -> dict[str, float] | None:
    usages = [r["drafter_usage"] for r in results if r.get("drafter_usage")]
    if not usages:
        return None
    return {key: float(sum(u[key] for u in usages)) for key in usages[0]}


def document_of(
    results: Sequence[dict[str, Any]], seeds: Sequence[int], wall_seconds: float, env: str, drafter: dict[str, Any]
) -> dict[str, Any]:
    document = aggregate(results, seeds, wall_seconds, env)
    first = results[0]
    exclusions: list[dict[str, str]] = []
    for result in results:
        for item in result["exclusions"]:
            if item not in exclusions:
                exclusions.append(item)
    document.update(
        {
            "drafter": drafter,
            "scored_dates": first["dates"],
            "presented_dates": first["presented_dates"],
            "exclusions": exclusions,
            "drafter_usage": _usage(results),
        }
    )
    return document


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def markdown_real(document: dict[str, Any], command: str) -> str:
    env = document["env"]
    seeds = document["seeds"]
    dates = document["scored_dates"]
    lines = [
        f"# {TITLES.get(env, env)} results ({document['drafter']['kind']} drafter, {seeds_label(seeds)})",
        "",
        f"Command: `{command}`  ",
        f"Wall time: {document['wall_seconds']:.0f} s on this machine ({len(document['investors'])} investors x {len(seeds)} seeds).  ",
        f"Scored (test) decisions: {len(dates)}, {dates[0]} .. {dates[-1]}; decisions presented to the methods, warm-up included: {document['presented_dates']}.",
        "",
        "Mean utility per scored decision in percentage points (mean over seeds ± sd over seeds); vs 1/N is the difference to",
        "equal weight (projected onto the mandate) in pp and relative to 1/N's mean utility; Sharpe-like is the annualised",
        "mean/sd of the per-decision returns; drawdown and final wealth are of the wealth path over the test window",
        "(mean over seeds); turnover is half the L1 change of the book between consecutive decisions; 'open' is the share",
        "of scored decisions with the trust gate open; 'calls' is the draft calls the method needs per decision.",
    ]
    for investor, cells in document["investors"].items():
        cell = cells[env]
        base = cell["equal_weight"]["mean_utility_pp"]
        ranked = sorted(cell, key=lambda m: -cell[m]["mean_utility_pp"])
        lines += [
            "",
            f"## {investor}",
            "",
            "| rank | method | utility (pp) | vs 1/N (pp) | vs 1/N (%) | Sharpe-like | max drawdown | final wealth | turnover | open | calls |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for rank, method in enumerate(ranked, start=1):
            row = cell[method]
            gap = row["mean_utility_pp"] - base
            relative = 100.0 * gap / abs(base) if base else float("nan")
            lines.append(
                f"| {rank} | {DISPLAY.get(method, method)} | {row['mean_utility_pp']:.3f} ± {row['sd_over_seeds']:.3f} | {gap:+.3f} | {relative:+.1f}% "
                f"| {_fmt(row.get('sharpe'), '.2f')} | {_fmt(row.get('max_drawdown'), '.1%')} | {_fmt(row.get('final_wealth'), '.3f')} "
                f"| {_fmt(row.get('turnover'), '.3f')} | {_fmt(row.get('open_rate'), '.2f')} | {_fmt(row.get('draft_calls_per_decision'), '.2f')} |"
            )
        summary = []
        for gated in ("memtrial", "memtrial_anytime"):
            if gated in cell:
                summary.append(
                    f"{DISPLAY[gated]}: gate open on {cell[gated]['open_rate']:.1%} of scored decisions, ever open in {cell[gated]['ever_open_rate']:.0%} of seeds"
                )
        if summary:
            lines += ["", "; ".join(summary) + "."]
    lines += [
        "",
        "## Averaged over investors",
        "",
        "| rank | method | utility (pp) | vs 1/N (pp) |",
        "|---:|---|---:|---:|",
    ]
    methods = list(next(iter(document["investors"].values()))[env])
    means = {
        m: float(np.mean([cells[env][m]["mean_utility_pp"] for cells in document["investors"].values()]))
        for m in methods
    }
    for rank, method in enumerate(sorted(methods, key=lambda m: -means[m]), start=1):
        lines.append(
            f"| {rank} | {DISPLAY.get(method, method)} | {means[method]:.4f} | {means[method] - means['equal_weight']:+.4f} |"
        )
    lines += frontier_lines(document["investors"], [("utility", [env])], methods)
    usage = document.get("drafter_usage")
    if usage:
        lines += [
            "",
            "## Drafter usage",
            "",
            f"{usage['calls']:.0f} calls ({usage['failed_calls']:.0f} failed, {usage['retries']:.0f} retries, {usage['malformed']:.0f} malformed answers, "
            f"{usage.get('clipped', 0):.0f} answers with negative weights clipped to 0), "
            f"{usage['cache_hits']:.0f} answers replayed from the cache; {usage['prompt_tokens']:.0f} prompt and {usage['completion_tokens']:.0f} completion tokens; "
            f"cost ${usage['cost_usd']:.4f}; {usage['call_seconds']:.0f} s inside calls.",
        ]
        if usage["calls"]:
            answered = usage["calls"] - usage["failed_calls"]
            parse_rate = (answered - usage["malformed"]) / answered if answered else 0.0
            lines += [
                "",
                f"Parse rate (valid answers / answers): {parse_rate:.1%}; seconds per draft (time spent waiting for drafts / calls): "
                f"{usage.get('draft_wall_seconds', 0.0) / usage['calls']:.2f}; mean latency of a call: {usage['call_seconds'] / usage['calls']:.2f} s "
                f"(calls overlap and may queue at the server).",
            ]
    if document["exclusions"]:
        lines += ["", "## Excluded, and why", ""]
        lines += [
            f"- {e['what']}: {e['reason']}" + (f" ({e['dates']})" if e["dates"] else "") for e in document["exclusions"]
        ]
    return "\n".join(lines) + "\n"


def plots_real(document: dict[str, Any], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env, investors = document["env"], document["investors"]
    paths: list[Path] = []
    figure, axes = plt.subplots(1, len(investors), figsize=(6 * len(investors), 5), squeeze=False)
    for axis, (investor, cells) in zip(axes[0], investors.items(), strict=True):
        cell = cells[env]
        order = sorted(cell, key=lambda m: cell[m]["mean_utility_pp"])
        axis.barh(
            range(len(order)),
            [cell[m]["mean_utility_pp"] for m in order],
            xerr=[cell[m]["sd_over_seeds"] for m in order],
            color=["C3" if m == "memtrial" else "C0" for m in order],
        )
        axis.set_yticks(range(len(order)), [DISPLAY.get(m, m) for m in order], fontsize=6)
        axis.axvline(cell["equal_weight"]["mean_utility_pp"], color="k", lw=0.8, ls="--")
        axis.set_title(f"{investor}: mean utility (pp), dashed = 1/N")
    save_figure(figure, folder / "utility_by_method.png", paths)

    dates = document["scored_dates"]
    for investor, cells in investors.items():
        cell = cells[env]
        methods = [m for m in cell if cell[m].get("wealth_path")]
        columns = 6
        rows = (len(methods) + columns - 1) // columns
        figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False, sharey=True)
        base = cell["equal_weight"]["wealth_path"]
        for axis, method in zip(axes.flat, methods, strict=False):
            axis.plot(base, color="0.6", lw=0.8, label="1/N")
            axis.plot(cell[method]["wealth_path"], color="C3" if method.startswith("memtrial") else "C0", lw=1.0)
            axis.set_title(DISPLAY.get(method, method), fontsize=7)
            axis.tick_params(labelsize=6)
        for axis in list(axes.flat)[len(methods) :]:
            axis.axis("off")
        figure.suptitle(
            f"{TITLES.get(env, env)}, {investor}: wealth over the test window ({dates[0]} .. {dates[-1]}), mean over seeds; grey = 1/N",
            fontsize=9,
        )
        top = 1 - 0.4 / (2.4 * rows)  # the title's band above the panels: it covers no panel's title
        save_figure(figure, folder / f"wealth_paths_{investor}.png", paths, dpi=100, rect=(0, 0, 1, top))

    figure, axis = plt.subplots(figsize=(7, 4))
    gated = [
        m
        for m in ("memtrial", "memtrial_anytime", "memtrial_alpha_0.2", "memtrial_alpha_0.01")
        if m in next(iter(investors.values()))[env]
    ]
    width = 0.8 / max(len(gated), 1)
    for i, method in enumerate(gated):
        axis.bar(
            np.arange(len(investors)) + i * width,
            [cells[env][method]["open_rate"] for cells in investors.values()],
            width,
            label=DISPLAY.get(method, method),
        )
    axis.set_xticks(np.arange(len(investors)) + 0.4 - width / 2, list(investors))
    axis.set_ylabel("share of scored decisions with the gate open")
    if gated:
        axis.legend(fontsize=7)
    else:  # a run of methods without a gate: the plot says so instead of an empty legend
        axis.text(0.5, 0.5, "no gated method in this run", ha="center", va="center", transform=axis.transAxes)
    save_figure(figure, folder / "gate_open_rate.png", paths)
    methods = list(next(iter(investors.values()))[env])
    frontier_plot(
        investors, [(f"{env}: utility against calls", [env])], methods, folder / "cost_quality_frontier.png", paths
    )
    return paths


#: the data files each real-data setting reads
REAL_INPUTS = {
    "classalloc": ("prices/etf_daily_close.csv.gz", "prices/asset_classes.csv"),
    "investorbench": tuple(f"investorbench/{t}.json" for t in ("hon", "jnj", "msft", "uvv")),
    "portbench": ("prices/etf_daily_close.csv.gz", "prices/crypto_daily_close.csv.gz", "prices/asset_classes.csv"),
}


def write_real_report(
    folder: Path,
    results: Sequence[dict[str, Any]],
    seeds: Sequence[int],
    wall_seconds: float,
    command: str,
    env: str,
    drafter: dict[str, Any],
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    document = {**document_of(results, seeds, wall_seconds, env, drafter), "command": command}
    if data is not None:  # the files it read (backtest.data.prices.provenance)
        document["data"] = data
    (folder / "results.json").write_text(json.dumps(document, indent=1) + "\n")
    (folder / "results.md").write_text(markdown_real(document, command))
    drawn = {path.name for path in plots_real(document, folder)}
    # a plot an earlier run left in the folder (another benchmark's, an investor not run now) would pass for this run's
    for stale in [*(folder / name for name in PLOTS), *folder.glob("wealth_paths_*.png")]:
        if stale.name not in drawn:
            stale.unlink(missing_ok=True)
    return document
