"""Aggregate world results into results.json, a Markdown table and PNG plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from backtest.plantedmem import PlantedMemWorld
from backtest.runner import reference_draws

__all__ = [
    "DISPLAY",
    "FrontierLayout",
    "aggregate",
    "frontier_lines",
    "frontier_plot",
    "frontier_points",
    "markdown",
    "plots",
    "save_figure",
    "seeds_label",
    "write_report",
]


def seeds_label(seeds: Sequence[int]) -> str:
    """How a page names a run's seeds: '1 seed: 7', '100 seeds: 15-114', '3 seeds: 0, 5, 9-10'."""
    runs: list[list[int]] = []
    for seed in seeds:
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    parts = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"{len(seeds)} seed{'' if len(seeds) == 1 else 's'}: {parts}"


DISPLAY: dict[str, str] = {
    "equal_weight": "1/N",
    "min_variance": "Minimum variance",
    "no_memory": "No memory",
    "all_four": "All 4 experiences",
    "similarity_top2": "Similarity top-2",
    "self_consistency": "Top-2, 8-run self-consistency",
    "draft_mean": "Draft mean (8 designed)",
    "reference": "No-memory 8-draw reference",
    "outcome_credit": "Outcome credit top-2",
    "counterfactual_argmax": "Counterfactual argmax top-2 (no gate)",
    "uplift_credit": "Uplift credit top-2",
    "finmem": "FinMem (adapted)",
    "expel": "ExpeL (adapted)",
    "reflexion": "Reflexion (adapted)",
    "hedge": "Hedge over drafts",
    "memtrial": "MemTrial (trust dial, odd half)",
    "memtrial_dial_half": "MemTrial dial: even half fraction",
    "memtrial_paper": "MemTrial: paper's rule (auto, prequential gate)",
    "memtrial_anytime": "MemTrial: paper's rule, anytime gate",
    "memtrial_content": "MemTrial: content only",
    "memtrial_identity": "MemTrial: identity",
    "memtrial_no_gate": "MemTrial: no gate",
    "memtrial_closed_ens": "MemTrial: closed -> draft mean",
    "memtrial_closed_ref": "MemTrial: closed -> reference",
    "memtrial_uniform": "MemTrial: uniform prior",
    "memtrial_alpha_0.2": "MemTrial: alpha 0.2",
    "memtrial_alpha_0.01": "MemTrial: alpha 0.01",
    "memtrial_full": "MemTrial: full 16-draft design",
    "memtrial_dial_centred": "MemTrial dial: centred values",
    "memtrial_dial_identity": "MemTrial dial: identity learner",
    "memtrial_memory_free": "MemTrial: a memory-free ninth draft as reference",
    "memtrial_budget_2": "MemTrial at a budget of 2 calls",
    "memtrial_budget_3": "MemTrial at a budget of 3 calls",
    "memtrial_budget_4": "MemTrial at a budget of 4 calls",
    "memtrial_similarity": "MemTrial, similarity retrieval",
    "memtrial_value_aware": "MemTrial, value-aware retrieval",
    "memtrial_quarantine": "MemTrial, quarantine",
    "memtrial_curated": "MemTrial, value-aware retrieval and quarantine",
    "memtrial_robust": "MemTrial, robust learner",
    "q_retrieval": "Q-value retrieval (MemRL-style)",
    "oracle_retrieval": "Oracle retrieval (knows the types; not ranked)",
    "similarity_top2_anchored": "Similarity top-2 + anchored fallback",
    "all_four_anchored": "All 4 + anchored fallback",
    "outcome_credit_anchored": "Outcome credit + anchored fallback",
    "finmem_anchored": "FinMem + anchored fallback",
    "expel_anchored": "ExpeL + anchored fallback",
    "reflexion_anchored": "Reflexion + anchored fallback",
    "oracle": "Oracle (knows the types; not ranked)",
}
UNRANKED = {"oracle", "oracle_retrieval"}
#: The paper's comparison: its five core regimes and its fifteen methods (MemTrial by the paper's rule).
CORE_REGIMES = ["no_influence", "noise_only", "beta_0.1", "beta_0.25", "beta_0.5"]
MEMORY_REGIMES = ["beta_0.1", "beta_0.25", "beta_0.5", "many_experiences", "informative_content"]
NULL_REGIMES = ["no_influence", "noise_only"]
PAPER_METHODS = [
    "equal_weight", "min_variance", "no_memory", "all_four", "similarity_top2", "self_consistency", "draft_mean", "outcome_credit",
    "counterfactual_argmax", "uplift_credit", "finmem", "expel", "reflexion", "hedge", "memtrial_paper",
]  # fmt: skip


def aggregate(
    results: Sequence[dict[str, Any]], seeds: Sequence[int], wall_seconds: float, env: str = "plantedmem"
) -> dict[str, Any]:
    """The results.json document: investors -> regimes -> methods -> summary over seeds."""
    table: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for result in results:
        spec = result["spec"]
        grouped.setdefault((spec["investor"], spec["regime"]), []).append(result)
    for (investor, regime), worlds in grouped.items():
        worlds = sorted(worlds, key=lambda r: r["spec"]["seed"])
        methods = worlds[0]["methods"]
        summary = {}
        for method_id in methods:
            per_seed = [w["methods"][method_id]["mean_utility_pp"] for w in worlds]
            opens = [w["methods"][method_id]["open_rate"] for w in worlds]
            dials = [w["methods"][method_id].get("trust_weights") for w in worlds]
            recoveries = [
                w["methods"][method_id]["value_recovery"]
                for w in worlds
                if w["methods"][method_id]["value_recovery"] is not None
            ]
            summary[method_id] = {
                "mean_utility_pp": float(np.mean(per_seed)),
                "sd_over_seeds": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else 0.0,
                "per_seed": per_seed,
                "open_rate": None if opens[0] is None else float(np.mean(opens)),
                "ever_open_rate": None if opens[0] is None else float(np.mean([o > 0 for o in opens])),
                "value_recovery": float(np.mean(recoveries)) if recoveries else None,
                **_dial_metrics(dials),
                **_real_metrics(worlds, method_id),
                **_curation_summary(worlds, method_id),
            }
        table.setdefault(investor, {})[regime] = summary
    # in the order of every per-seed list above (a run's --seeds may list them in any order)
    return {"env": env, "investors": table, "seeds": sorted(seeds), "wall_seconds": wall_seconds}


def _dial_metrics(paths: Sequence[list[float] | None]) -> dict[str, Any]:
    """Trust-dial summaries over seeds: mean omega, the share of worlds ever at omega = 1, omega by date."""
    if not paths or any(p is None for p in paths):
        return {}
    lengths = {len(p) for p in paths if p is not None}
    return {
        "trust_weight": float(np.mean([np.mean(p) for p in paths if p])),
        "ever_fully_trusted_rate": float(np.mean([max(p) >= 1.0 for p in paths if p])),
        "trust_weight_by_date": np.mean(np.array(paths), axis=0).tolist() if len(lengths) == 1 else None,
    }


def _curation_summary(worlds: Sequence[dict[str, Any]], method_id: str) -> dict[str, Any]:
    """The curation figures over seeds (method 5): means of the utility after the event and of the
    poisoned share of retrieval slots, the share of worlds with a false quarantine, the median delay."""
    cells = [w["methods"][method_id] for w in worlds]
    out: dict[str, Any] = {}
    for name, summary in (
        ("mean_utility_after_event_pp", "mean_utility_after_event_pp"),
        ("poison_retrieved_share", "poison_retrieved_share"),
        ("false_quarantine", "false_quarantine_rate"),
        ("quarantine_delay", "quarantine_delay"),
    ):
        if name not in cells[0]:
            continue
        values = [float(c[name]) for c in cells]
        out[summary] = float(np.median(values)) if name == "quarantine_delay" else float(np.mean(values))
        out[summary + "_per_seed"] = values
    return out


def _mean_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _real_metrics(worlds: Sequence[dict[str, Any]], method_id: str) -> dict[str, Any]:
    """Wealth-path metrics, averaged over seeds (absent from results written before they existed)."""
    cells = [w["methods"][method_id] for w in worlds]
    if "returns" not in cells[0]:
        return {}
    paths = [np.cumprod(1.0 + np.asarray(c["returns"])) for c in cells if c["returns"]]
    return {
        "sharpe": _mean_of([c["sharpe"] for c in cells]),
        "max_drawdown": _mean_of([c["max_drawdown"] for c in cells]),
        "final_wealth": _mean_of([c["final_wealth"] for c in cells]),
        "turnover": _mean_of([c["turnover"] for c in cells]),
        "draft_calls_per_decision": _mean_of([c["draft_calls_per_decision"] for c in cells]),
        "reference_calls_per_decision": _mean_of([c.get("reference_calls_per_decision") for c in cells]),
        "wealth_path": np.mean(paths, axis=0).tolist() if paths else [],
    }


def _ranks(cell: dict[str, dict[str, Any]]) -> dict[str, int]:
    ranked = sorted((m for m in cell if m not in UNRANKED), key=lambda m: -cell[m]["mean_utility_pp"])
    return {m: i + 1 for i, m in enumerate(ranked)}


#: the curation figures of a cell (issue of the curation regimes), their column titles and formats
CURATION_FIGURES = (
    ("mean_utility_after_event_pp", "after the event (pp)", ".4f"),
    ("poison_retrieved_share", "poisoned share of slots", ".3f"),
    ("false_quarantine_rate", "false quarantine rate", ".2f"),
    ("quarantine_delay", "median quarantine delay", ".0f"),
)


def _curation_lines(investors: dict[str, Any], regimes: list[str], methods: list[str]) -> list[str]:
    """Per investor, the curation figures of every regime that has them (the poisoning or the drift, the share
    of retrieval slots poisoned experiences took after it, false quarantines, the delay until all four poisoned
    experiences are quarantined): a table per regime, a row per method with any of them, '-' for one it lacks."""
    lines: list[str] = []
    for investor, cells in investors.items():
        for regime in regimes:
            shown = [
                (key, title, pattern)
                for key, title, pattern in CURATION_FIGURES
                if any(key in cells[regime][m] for m in methods)
            ]
            if (
                not shown
                or shown == [CURATION_FIGURES[2]]
                and all(cells[regime][m].get("false_quarantine_rate", 0.0) == 0.0 for m in methods)
            ):
                continue  # a null regime where nothing was quarantined: the all-zero column is in results.json
            if not lines:
                lines += [
                    "",
                    "## Curation",
                    "",
                    "After the event: mean utility per scored decision after the poisoning (`poisoned`) or the drift "
                    "(`drift`); poisoned share: the share of retrieval slots the poisoned experiences took after "
                    "their arrival; false quarantine rate: the share of worlds in which an experience whose value was "
                    ">= 0 then was quarantined; median quarantine delay: decisions from the poisoning until all four "
                    "poisoned experiences are quarantined (the decisions left when they never are).",
                ]
            lines += [
                "",
                f"### {investor}, {regime}",
                "",
                "| method | " + " | ".join(title for _, title, _ in shown) + " |",
                "|---|" + "---:|" * len(shown),
            ]
            for method in methods:
                cell = cells[regime][method]
                if not any(key in cell for key, _, _ in shown):
                    continue  # a method with none of these figures (a run's other baselines)
                row = " | ".join("-" if key not in cell else format(cell[key], pattern) for key, _, pattern in shown)
                lines.append(f"| {DISPLAY.get(method, method)} | {row} |")
    return lines


def markdown(document: dict[str, Any], command: str) -> str:
    investors = document["investors"]
    regimes = list(next(iter(investors.values())))
    methods = list(next(iter(next(iter(investors.values())).values())))
    lines = [
        f"# PlantedMem results ({seeds_label(document['seeds'])})",
        "",
        f"Command: `{command}`  ",
        f"Wall time: {document['wall_seconds']:.0f} s on this machine ({len(investors)} investors x {len(regimes)} regimes x {len(document['seeds'])} seeds).",
        "",
        "Mean utility per scored decision in percentage points (mean over seeds ± sd over seeds).",
    ]
    average: dict[str, list[float]] = {m: [] for m in methods}
    for investor, cells in investors.items():
        lines += [
            "",
            f"## {investor}",
            "",
            "| method | " + " | ".join(regimes) + " | mean |",
            "|---|" + "---:|" * (len(regimes) + 1),
        ]
        for method in methods:
            values = [cells[r][method]["mean_utility_pp"] for r in regimes]
            average[method].extend(values)
            row = " | ".join(
                f"{cells[r][method]['mean_utility_pp']:.3f} ± {cells[r][method]['sd_over_seeds']:.3f}" for r in regimes
            )
            lines.append(f"| {DISPLAY.get(method, method)} | {row} | {np.mean(values):.3f} |")
        ranks = [_ranks(cells[r])["memtrial"] for r in regimes if "memtrial" in cells[r]]
        if ranks:
            lines.append(
                "| MemTrial's rank (non-oracle) | " + " | ".join(str(x) for x in ranks) + f" | {np.mean(ranks):.1f} |"
            )
        opens = [cells[r].get("memtrial_anytime", {}).get("ever_open_rate") for r in regimes]
        if all(o is not None for o in opens):
            lines.append("| anytime gate: worlds ever open | " + " | ".join(f"{o:.2f}" for o in opens) + " | |")
        opens = [cells[r].get("memtrial_paper", {}).get("ever_open_rate") for r in regimes]
        if all(o is not None for o in opens):
            lines.append("| prequential gate: worlds ever open | " + " | ".join(f"{o:.2f}" for o in opens) + " | |")
        trusted = [cells[r].get("memtrial", {}).get("ever_fully_trusted_rate") for r in regimes]
        if all(t is not None for t in trusted):
            lines.append("| trust dial: worlds ever at weight 1 | " + " | ".join(f"{t:.2f}" for t in trusted) + " | |")
            lines.append(
                "| trust dial: mean weight | "
                + " | ".join(f"{cells[r]['memtrial']['trust_weight']:.2f}" for r in regimes)
                + " | |"
            )
    lines += _curation_lines(investors, regimes, methods)
    lines += _summary(investors, regimes, methods)
    groups = [
        (n, [r for r in rs if r in regimes])
        for n, rs in (("memory regimes", MEMORY_REGIMES), ("null regimes", NULL_REGIMES))
    ]
    # a group holding every regime of the run is the "all regimes" column already
    partial = [(n, rs) for n, rs in groups if rs and set(rs) != set(regimes)]
    lines += frontier_lines(investors, [*partial, ("all regimes", regimes)], methods, PlantedMemWorld.reference_calls)
    overall = sorted(((float(np.mean(v)), m) for m, v in average.items() if v), reverse=True)
    lines += [
        "",
        "## Averaged over regimes and investors",
        "",
        "| rank | method | mean utility (pp) |",
        "|---:|---|---:|",
    ]
    rank = 0
    for value, method in overall:
        label = "-" if method in UNRANKED else str(rank := rank + 1)
        lines.append(f"| {label} | {DISPLAY.get(method, method)} | {value:.4f} |")
    return "\n".join(lines) + "\n"


def frontier_points(
    investors: dict[str, Any], regimes: Sequence[str], methods: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """(LLM draft calls per decision, mean utility in pp over ``regimes`` and the investors) of each method."""
    points = {}
    for method in methods:
        calls = [investors[i][r][method].get("draft_calls_per_decision") for i in investors for r in regimes]
        if calls and all(c is not None for c in calls):
            points[method] = (float(np.mean(calls)), _regime_mean(investors, regimes, method))
    return points


def reference_share(investors: dict[str, Any], regimes: Sequence[str], method: str, reference_calls: int = 0) -> float:
    """The draws of the world's reference among ``method``'s calls per decision, averaged over the cells
    (a document written before the cells recorded them: by the run's rules, the world's reference costing
    ``reference_calls``; :func:`backtest.runner.reference_draws`)."""
    recorded = [investors[i][r][method].get("reference_calls_per_decision") for i in investors for r in regimes]
    if recorded and all(v is not None for v in recorded):
        return float(np.mean(recorded))
    return float(reference_draws(method, reference_calls))


def calls_breakdown(calls: float, reference: float) -> str:
    """``"8 + 8"``: a method's own draft calls per decision, then the world's reference draws among them."""
    return f"{calls - reference:.2f} + {reference:g}"


def frontier_lines(
    investors: dict[str, Any],
    groups: Sequence[tuple[str, Sequence[str]]],
    methods: Sequence[str],
    reference_calls: int = 0,
) -> list[str]:
    """The cost-quality table (method 4.11): every method's LLM draft calls per decision, with their
    breakdown into its own drafts and the world's reference draws (``reference_calls`` each where a method
    uses the reference), beside its utility, cheapest first; a method is on the frontier when no method
    at most as costly does better."""
    if not groups:
        return []
    points = [frontier_points(investors, regimes, methods) for _, regimes in groups]
    shown = [m for m in methods if all(m in p for p in points)]
    if not shown:
        return []
    order = sorted(shown, key=lambda m: (points[0][m][0], -points[0][m][1]))
    best = -np.inf
    frontier = set()
    for method in order:
        if method not in UNRANKED and points[0][method][1] > best:
            best = points[0][method][1]
            frontier.add(method)
    lines = [
        "",
        "## Cost and quality: utility against LLM draft calls per decision",
        "",
        "Every call a method causes counts, drafts made only to learn included (the credit baselines read the eight",
        "designed drafts; a method that uses the world's reference pays for its draws: "
        + (
            f"{reference_calls} here, the reference being the mean of {reference_calls} memory-free draws)."
            if reference_calls
            else "none here, the reference being given weights)."
        ),
        "`own + reference`: the method's own draft calls (its designed drafts, or a budget's trials and",
        "exploiting drafts, its own memory-free draft included), then the reference's draws.",
        f"`*`: on the frontier of {'' if groups[0][0].startswith('all') else 'the '}{groups[0][0]} (no method that costs at most as much does better).",
        "",
        "| method | calls per decision | own + reference | " + " | ".join(f"{name} (pp)" for name, _ in groups) + " |",
        "|---|---:|---:|" + "---:|" * len(groups),
    ]
    for method in order:
        mark = " *" if method in frontier else ""
        values = " | ".join(f"{p[method][1]:.4f}" for p in points)
        calls = points[0][method][0]
        breakdown = calls_breakdown(calls, reference_share(investors, groups[0][1], method, reference_calls))
        lines.append(f"| {DISPLAY.get(method, method)}{mark} | {calls:.2f} | {breakdown} | {values} |")
    return lines


@dataclass(frozen=True)
class FrontierLayout:
    """What a cost-quality plot shows, for checks: the legend's entries (each method's number and name, in
    the legend's order) and, per panel, each point label's text and its box in display pixels."""

    legend: list[str]
    labels: list[dict[str, tuple[float, float, float, float]]]


#: offsets (points) tried for a label, nearest first: beside, above, below, then further out on a leader line
_OFFSETS = [
    (radius * dx, radius * dy)
    for radius in (5, 12, 20, 30, 42, 56)
    for dx, dy in ((1, 0.2), (1, -1), (-1, 0.2), (-1, -1), (0, 1), (0, -1.6), (1, 1), (-1, 1))
]


def _clusters(pixels: dict[str, tuple[float, float]], radius: float) -> list[list[str]]:
    """Methods whose points lie within ``radius`` pixels of one another (single linkage), each in method order."""
    groups: list[list[str]] = []
    for method, (x, y) in pixels.items():
        near = [g for g in groups if any(np.hypot(x - pixels[m][0], y - pixels[m][1]) <= radius for m in g)]
        merged = [method] + [m for g in near for m in g]
        groups = [g for g in groups if g not in near] + [merged]
    return [sorted(g, key=list(pixels).index) for g in groups]


def _overlaps(box: Any, others: Sequence[Any]) -> bool:
    return any(box.overlaps(other) for other in others)


def _place_labels(
    axis: Any, figure: Any, pixels: dict[str, tuple[float, float]], numbers: dict[str, int]
) -> dict[str, tuple[float, float, float, float]]:
    """Number every point: points closer than a label's height share one label (``3,7,12``); each label
    takes the nearest offset where it overlaps no other label, no point and stays inside the axes (a leader
    line joins it to its point when it sits apart). Returns each label's text and box (display pixels)."""
    from matplotlib.transforms import Bbox

    renderer = figure.canvas.get_renderer()
    frame = axis.get_window_extent(renderer)
    dots = [Bbox.from_extents(x - 3.5, y - 3.5, x + 3.5, y + 3.5) for x, y in pixels.values()]
    placed: list[Any] = []
    boxes: dict[str, tuple[float, float, float, float]] = {}
    clusters = _clusters(pixels, radius=6.0)
    for cluster in sorted(clusters, key=lambda g: numbers[g[0]]):
        text = ",".join(str(numbers[m]) for m in cluster)
        x, y = np.mean([pixels[m] for m in cluster], axis=0)
        anchor = axis.transData.inverted().transform((x, y))
        chosen = None
        for dx, dy in _OFFSETS:
            label = axis.annotate(
                text,
                anchor,
                xytext=(dx, dy),
                textcoords="offset points",
                fontsize=6.5,
                ha="left" if dx >= 0 else "right",
                va="center",
            )
            box = label.get_window_extent(renderer).expanded(1.05, 1.1)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not _overlaps(box, placed) and not _overlaps(box, dots):
                chosen = (label, box, abs(dx) > 6 or abs(dy) > 6)
                break
            label.remove()
        if chosen is None:  # nowhere free: the nearest spot, still inside the axes, with a leader line
            label = axis.annotate(
                text, anchor, xytext=_OFFSETS[0], textcoords="offset points", fontsize=6.5, va="center"
            )
            chosen = (label, label.get_window_extent(renderer), False)
        label, box, far = chosen
        label.set_in_layout(False)
        if far:
            label.arrow_patch = None
            axis.annotate(
                "",
                anchor,
                xytext=label.xyann,
                textcoords="offset points",
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.4"},
            ).set_in_layout(False)
        placed.append(box)
        boxes[text] = (box.x0, box.y0, box.x1, box.y1)
    return boxes


def frontier_plot(
    investors: dict[str, Any],
    groups: Sequence[tuple[str, Sequence[str]]],
    methods: Sequence[str],
    path: Path,
    paths: list[Path],
    reference_calls: int = 0,
) -> FrontierLayout:
    """Utility against calls per decision, one panel per group of regimes: MemTrial's variants in red (its
    budgets joined by a line), the others in grey, the frontier (no method that costs at most as much does
    better) a dotted step. Every point carries its method's number, and the legend below the panels names
    each number (a method using the world's reference with its calls as own + reference draws). A method far
    below 1/N is left off the scale, its legend entry says so."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    every = [frontier_points(investors, regimes, methods) for _, regimes in groups]
    shown = [m for m in methods if any(m in p for p in every)]
    ordered = [m for m in shown if m.startswith("memtrial")] + [m for m in shown if not m.startswith("memtrial")]
    numbers = {method: i for i, method in enumerate(ordered, start=1)}
    width = max(6.5 * len(groups), 11.0)
    figure, axes = plt.subplots(1, len(groups), figsize=(width, 4.6 + 0.13 * len(ordered) / 3), squeeze=False)
    off_scale: set[str] = set()
    pixels_by_panel = []
    for axis, (name, _), points in zip(axes[0], groups, every, strict=True):
        floor = points["equal_weight"][1] - 0.1 if "equal_weight" in points else -np.inf
        off = [m for m, (_, v) in points.items() if v < floor]
        off_scale.update(off)
        kept = {m: p for m, p in points.items() if m not in off}
        best, frontier = -np.inf, []
        for method in sorted(kept, key=lambda m: (kept[m][0], -kept[m][1])):
            if method not in UNRANKED and kept[method][1] > best:
                best = kept[method][1]
                frontier.append(method)
        for method, (calls, value) in kept.items():
            ours = method.startswith("memtrial")
            axis.scatter([calls], [value], s=22 if ours else 14, color="tab:red" if ours else "tab:gray", zorder=3)
        axis.step(
            [kept[m][0] for m in frontier], [kept[m][1] for m in frontier], where="post", color="k", lw=0.7, ls=":"
        )
        budgets = sorted(
            (kept[m] for m in kept if m.startswith("memtrial_budget_") or m == "memtrial"), key=lambda p: p[0]
        )
        if len(budgets) > 1:
            axis.plot([b[0] for b in budgets], [b[1] for b in budgets], color="tab:red", linewidth=1)
        axis.margins(x=0.08, y=0.1)
        axis.set_xlabel(
            "LLM draft calls per decision"
            + (f" (a method using the reference pays its {reference_calls} draws)" if reference_calls else "")
        )
        axis.set_ylabel("mean utility (pp)")
        axis.set_title(name, fontsize=9)
        pixels_by_panel.append((axis, kept))
    legend = []
    for method in ordered:
        reference = reference_share(investors, groups[0][1], method, reference_calls) if method in every[0] else 0.0
        spent = every[0][method][0] if method in every[0] else None
        split = f" ({spent - reference:g} own + {reference:g} reference)" if reference and spent is not None else ""
        legend.append(
            f"{numbers[method]}  {DISPLAY.get(method, method)}{split}" + (" (off scale)" if method in off_scale else "")
        )
    handles = [
        Line2D([], [], marker="o", ls="", color="tab:red" if m.startswith("memtrial") else "tab:gray", markersize=4)
        for m in ordered
    ]
    handles.append(Line2D([], [], color="k", lw=0.7, ls=":"))
    names = [*legend, "frontier: no method that costs at most as much does better"]
    key = figure.legend(
        handles, names, loc="lower left", ncol=3, fontsize=6.5, frameon=False, bbox_to_anchor=(0.01, 0.0)
    )
    key.set_in_layout(False)
    renderer = cast(Any, figure.canvas).get_renderer()  # Agg's
    bottom = (key.get_window_extent(renderer).height + 6) / figure.bbox.height  # the panels sit above the legend
    figure.tight_layout(rect=(0, bottom, 1, 1))
    labels = []
    for axis, kept in pixels_by_panel:
        pixels = {m: tuple(axis.transData.transform(p)) for m, p in kept.items()}
        labels.append(_place_labels(axis, figure, pixels, numbers))
    save_figure(figure, path, paths, rect=(0, bottom, 1, 1))
    return FrontierLayout(legend=legend, labels=labels)


def _regime_mean(investors: dict[str, Any], regimes: Sequence[str], method: str) -> float:
    return float(np.mean([investors[i][r][method]["mean_utility_pp"] for i in investors for r in regimes]))


def _summary(investors: dict[str, Any], regimes: Sequence[str], methods: Sequence[str]) -> list[str]:
    """The headline averages (memory regimes, the paper's core five) and the paper's own view."""
    lines: list[str] = []
    memory = [r for r in MEMORY_REGIMES if r in regimes]
    core = [r for r in CORE_REGIMES if r in regimes]
    # a group of every regime of the run is the closing ranking already, and a group equal to an earlier one
    # would repeat its column: neither is shown
    groups: list[tuple[str, list[str]]] = []
    for name, rs in (("memory regimes", memory), ("core five", core)):
        if rs and set(rs) != set(regimes) and all(set(rs) != set(seen) for _, seen in groups):
            groups.append((name, rs))
    if groups:
        lines += ["", "## Memory regimes and the paper's core five, averaged over investors", ""]
        lines += [
            "| rank | method | " + " | ".join(f"{name} ({', '.join(rs)})" for name, rs in groups) + " |",
            "|---:|---|" + "---:|" * len(groups),
        ]
        means = {m: [_regime_mean(investors, rs, m) for _, rs in groups] for m in methods}
        rank = 0
        for method in sorted(methods, key=lambda m: -means[m][0]):
            label = "-" if method in UNRANKED else str(rank := rank + 1)
            lines.append(
                f"| {label} | {DISPLAY.get(method, method)} | " + " | ".join(f"{v:.4f}" for v in means[method]) + " |"
            )
    paper = [m for m in PAPER_METHODS if m in methods]
    if len(core) == len(CORE_REGIMES) and len(paper) == len(PAPER_METHODS):
        shown = paper + [m for m in ("memtrial", "oracle") if m in methods]
        lines += ["", "## The paper's view: its five core regimes and its fifteen methods", ""]
        lines += [
            "(MemTrial by the paper's rule; the trust dial and the oracle are shown beside it, outside the ranking.)",
            "",
        ]
        lines += ["| rank | method | " + " | ".join(core) + " | mean |", "|---:|---|" + "---:|" * (len(core) + 1)]
        means_core = {m: _regime_mean(investors, core, m) for m in shown}
        rank = 0
        for method in sorted(shown, key=lambda m: -means_core[m]):
            label = str(rank := rank + 1) if method in paper else "-"
            cells = " | ".join(
                f"{np.mean([investors[i][r][method]['mean_utility_pp'] for i in investors]):.3f}" for r in core
            )
            lines.append(f"| {label} | {DISPLAY.get(method, method)} | {cells} | {means_core[method]:.4f} |")
    return lines


def save_figure(
    figure: Any, path: Path, paths: list[Path], dpi: int = 110, rect: tuple[float, float, float, float] | None = None
) -> None:
    """Lay out (within ``rect`` of the figure, if given), write and close ``figure``; record its path."""
    import matplotlib.pyplot as plt

    figure.tight_layout(rect=rect)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    paths.append(path)


def plots(document: dict[str, Any], results: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    investors = document["investors"]
    regimes = list(next(iter(investors.values())))
    shown = [
        m
        for m in (
            "memtrial",
            "memtrial_paper",
            "counterfactual_argmax",
            "outcome_credit",
            "no_memory",
            "equal_weight",
            "draft_mean",
            "oracle",
        )
        if m in next(iter(investors.values()))[regimes[0]]
    ]
    paths: list[Path] = []
    figure, axes = plt.subplots(1, len(investors), figsize=(6 * len(investors), 4.5), squeeze=False)
    for axis, (investor, cells) in zip(axes[0], investors.items(), strict=True):
        for method in shown:
            axis.plot(
                range(len(regimes)),
                [cells[r][method]["mean_utility_pp"] for r in regimes],
                marker="o",
                label=DISPLAY.get(method, method),
            )
        axis.set_xticks(range(len(regimes)), regimes, rotation=35, ha="right")
        axis.set_title(f"{investor}: mean utility (pp)")
    handles, labels = axes[0][0].get_legend_handles_labels()  # below the panels: it never covers a point
    if labels:  # a run of none of the methods shown has an empty panel and no legend
        figure.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    save_figure(figure, folder / "utility_by_regime.png", paths, rect=(0, 0.12, 1, 1))

    figure, axis = plt.subplots(figsize=(7, 4.5))
    gated = [
        m
        for m in ("memtrial", "memtrial_paper", "memtrial_anytime", "memtrial_alpha_0.2", "memtrial_alpha_0.01")
        if m in investors[next(iter(investors))][regimes[0]]
    ]
    for method in gated:
        rates = [np.mean([investors[i][r][method]["open_rate"] for i in investors]) for r in regimes]
        axis.plot(range(len(regimes)), rates, marker="o", label=DISPLAY.get(method, method))
    axis.set_xticks(range(len(regimes)), regimes, rotation=35, ha="right")
    axis.set_ylabel("share of scored decisions with the gate open")
    if gated:
        axis.legend(fontsize=7)
    save_figure(figure, folder / "gate_open_rate_by_regime.png", paths)

    first = investors[next(iter(investors))][regimes[0]]
    if first.get("memtrial", {}).get("trust_weight_by_date") is not None:
        figure, axis = plt.subplots(figsize=(7, 4.5))
        for regime in regimes:
            paths_by_investor = [investors[i][regime]["memtrial"]["trust_weight_by_date"] for i in investors]
            if all(p is not None for p in paths_by_investor):
                axis.plot(np.mean(np.array(paths_by_investor), axis=0), label=regime)
        axis.set_xlabel("scored decision")
        axis.set_ylabel("trust weight (mean over worlds)")
        axis.set_ylim(0.0, 1.02)
        axis.set_title("MemTrial's trust dial over dates, per regime")
        axis.legend(fontsize=7)
        save_figure(figure, folder / "trust_weight_by_date.png", paths)

    figure, axis = plt.subplots(figsize=(6, 4.5))
    by_type: dict[int, list[float]] = {-1: [], 0: [], 1: []}
    for result in results:
        learned = result.get("learned_values")
        if learned and result["spec"]["regime"] in ("beta_0.5", "informative_content", "many_experiences", "beta_0.25"):
            for kind, value in zip(learned["types"], learned["values"], strict=True):
                by_type[int(kind)].append(100.0 * value)
    axis.boxplot([by_type[-1], by_type[0], by_type[1]], showfliers=False)
    axis.set_xticks([1, 2, 3], ["misleading", "neutral", "useful"])
    axis.set_ylabel("MemTrial learned value (pp)")
    axis.set_title("learned value vs true type (informative regimes)")
    save_figure(figure, folder / "learned_value_vs_type.png", paths)

    methods = list(first)
    groups = [
        (n, [r for r in rs if r in regimes])
        for n, rs in (("memory regimes", MEMORY_REGIMES), ("null regimes", NULL_REGIMES))
    ]
    groups = [(n, rs) for n, rs in groups if rs] or [("all regimes", regimes)]
    frontier_plot(
        investors, groups, methods, folder / "cost_quality_frontier.png", paths, PlantedMemWorld.reference_calls
    )
    return paths


#: every plot a PlantedMem run's page may hold (:func:`plots`: some only when their method or regime ran)
PLOTS = (
    "utility_by_regime.png",
    "gate_open_rate_by_regime.png",
    "trust_weight_by_date.png",
    "learned_value_vs_type.png",
    "cost_quality_frontier.png",
)


#: the data files a PlantedMem run on the price data reads
PLANTEDMEM_INPUTS = ("prices/etf_daily_close.csv.gz", "prices/asset_classes.csv")


def write_report(
    folder: Path,
    results: Sequence[dict[str, Any]],
    seeds: Sequence[int],
    wall_seconds: float,
    command: str,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A run's results.json, results.md and plots in ``folder``; a plot an earlier run left there that this
    run does not draw (its method or regime not run now) is removed, so none can pass for this run's.
    results.json says of the run itself its ``command`` (every option given) and the ``data`` files it read
    (:func:`backtest.data.prices.provenance`; None: not recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {**aggregate(results, seeds, wall_seconds), "command": command}
    if data is not None:
        document["data"] = data
    (folder / "results.json").write_text(json.dumps(document, indent=1) + "\n")
    (folder / "results.md").write_text(markdown(document, command))
    drawn = {path.name for path in plots(document, results, folder)}
    real = ("utility_by_method.png", "gate_open_rate.png", *(p.name for p in folder.glob("wealth_paths_*.png")))
    for name in (*PLOTS, *real):  # a real-data run's plots, left in the folder, would pass for this run's too
        if name not in drawn:
            (folder / name).unlink(missing_ok=True)
    return document


def render(folder: Path) -> list[Path]:
    """Re-render a PlantedMem run's ``results.md`` and cost-quality plot from its ``results.json``, running
    nothing; the command line is the one results.json records (or, for a run written before it did, the one
    the ``results.md`` it replaces shows). The plots that need every
    world's results (learned values against types) stay as they are."""
    import matplotlib

    matplotlib.use("Agg")
    document = json.loads((folder / "results.json").read_text())
    page = folder / "results.md"
    previous = page.read_text() if page.exists() else ""
    command = document.get("command") or (
        previous.split("Command: `", 1)[1].split("`", 1)[0] if "Command: `" in previous else "(unknown)"
    )
    page.write_text(markdown(document, command))
    investors = document["investors"]
    regimes = list(next(iter(investors.values())))
    methods = list(next(iter(investors.values()))[regimes[0]])
    groups = [
        (n, [r for r in rs if r in regimes])
        for n, rs in (("memory regimes", MEMORY_REGIMES), ("null regimes", NULL_REGIMES))
    ]
    groups = [(n, rs) for n, rs in groups if rs] or [("all regimes", regimes)]
    paths = [page]
    try:
        frontier_plot(
            investors, groups, methods, folder / "cost_quality_frontier.png", paths, PlantedMemWorld.reference_calls
        )
    except Exception:  # a figure the plot needs is missing: the page it replaced comes back
        page.write_text(previous) if previous else page.unlink()
        raise
    return paths
