"""Honest draft accounting and the cost-quality frontier (method 4.11): every call a method causes counts."""

import json

import numpy as np
import pytest

from backtest.report import aggregate, frontier_lines, frontier_points, render, write_report
from backtest.runner import WorldSpec, drafted_masks, run_many, run_world

COUNTED = (
    "equal_weight", "no_memory", "reference", "counterfactual_argmax", "uplift_credit", "similarity_top2_anchored",
    "draft_mean", "memtrial", "memtrial_full", "memtrial_memory_free", "memtrial_budget_3", "oracle",
)  # fmt: skip


@pytest.fixture(scope="module")
def world():
    return run_world(WorldSpec("beta_0.5", "balanced", 3, methods=COUNTED))


def test_every_call_a_method_causes_counts_in_plantedmem(world):
    calls = {m: cell["draft_calls_per_decision"] for m, cell in world["methods"].items()}
    assert calls["equal_weight"] == 0 and calls["no_memory"] == 1
    assert calls["counterfactual_argmax"] == 8  # it learns from the eight designed drafts
    assert calls["reference"] == 8  # the mean of eight memory-free draws
    assert calls["uplift_credit"] == 9 and calls["similarity_top2_anchored"] == 9 and calls["oracle"] == 9
    assert calls["memtrial"] == 16 and calls["memtrial_full"] == 24  # its design, and the world's reference
    assert calls["memtrial_memory_free"] == 9  # the odd half and its own memory-free draft, no reference draws
    assert 2.5 < calls["memtrial_budget_3"] <= 3.0  # the budget, its reference included


def test_the_default_memtrials_budget_is_set_from_the_run(world):
    budgeted = run_world(WorldSpec("beta_0.5", "balanced", 3, methods=("memtrial",), draft_budget=2.0))
    assert 1.5 < budgeted["methods"]["memtrial"]["draft_calls_per_decision"] <= 2.0
    assert budgeted["methods"]["memtrial"]["mean_utility_pp"] != world["methods"]["memtrial"]["mean_utility_pp"]


def test_the_default_at_a_frontier_budget_walks_as_that_budgets_variant():
    # --frontier with --draft-budget 3: the default and memtrial_budget_3 are one setting (a budgeted walk serves
    # one, and the second id was left without weights)
    both = ("memtrial", "memtrial_budget_3", "no_memory")
    together = run_many([WorldSpec("beta_0.5", "balanced", 3, methods=both, draft_budget=3.0)])[0]["methods"]
    alone = run_many([WorldSpec("beta_0.5", "balanced", 3, methods=("memtrial_budget_3",), draft_budget=3.0)])[0]
    assert together["memtrial"] == together["memtrial_budget_3"] == alone["methods"]["memtrial_budget_3"]


def test_a_real_data_world_drafts_the_subsets_its_methods_need():
    assert drafted_masks(["equal_weight", "memtrial_paper"]) == [0, 3, 5, 6, 9, 10, 12, 15]
    assert drafted_masks(["memtrial"]) == list(range(16))  # the odd half beside the even one
    assert drafted_masks(["memtrial_dial_half"], draft_budget=3.0) == [0, 3, 5, 6, 9, 10, 12, 15]
    assert drafted_masks(["memtrial_budget_3"]) == list(range(16))  # an exploiting plan may act on any subset


def test_the_report_tables_and_plots_utility_against_calls(tmp_path, world):
    other = run_world(WorldSpec("noise_only", "balanced", 3, methods=COUNTED))
    document = write_report(tmp_path, [world, other], [3], 1.0, "memtrial backtest plantedmem")
    text = (tmp_path / "results.md").read_text()
    assert "## Cost and quality: utility against LLM draft calls per decision" in text
    assert (tmp_path / "cost_quality_frontier.png").stat().st_size > 10_000
    points = frontier_points(document["investors"], ["beta_0.5"], list(COUNTED))
    assert points["counterfactual_argmax"][0] == 8.0
    assert points["memtrial"][1] == pytest.approx(world["methods"]["memtrial"]["mean_utility_pp"])
    lines = frontier_lines(document["investors"], [("memory", ["beta_0.5"]), ("null", ["noise_only"])], list(COUNTED))
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| method")]
    calls = [float(row.split("|")[2]) for row in rows]
    assert calls == sorted(calls) and len(rows) == len(COUNTED)  # cheapest first, every method
    frontier = [row for row in rows if "* |" in row]
    values = [float(row.split("|")[4]) for row in frontier]
    assert values == sorted(values) and "Oracle" not in " ".join(frontier)  # a frontier rises; the oracle is off it
    assert (
        json.loads((tmp_path / "results.json").read_text())["investors"]["balanced"]["beta_0.5"]["memtrial"][
            "draft_calls_per_decision"
        ]
        == 16
    )
    assert np.isfinite(values).all()


def test_the_report_breaks_each_methods_calls_into_its_own_and_the_references(tmp_path, world):
    document = write_report(tmp_path, [world], [3], 1.0, "memtrial backtest plantedmem")
    lines = frontier_lines(document["investors"], [("memory", ["beta_0.5"])], list(COUNTED), reference_calls=8)
    breakdown = {
        row.split("|")[1].strip().removesuffix(" *"): row.split("|")[3].strip() for row in lines if row.startswith("| ")
    }
    assert (
        breakdown["MemTrial (trust dial, odd half)"] == "8.00 + 8"
    )  # its eight designed drafts, the reference's eight
    assert breakdown["MemTrial: a memory-free ninth draft as reference"] == "9.00 + 0"
    assert breakdown["Counterfactual argmax top-2 (no gate)"] == "8.00 + 0"
    assert breakdown["No-memory 8-draw reference"] == "0.00 + 8"
    assert breakdown["Oracle (knows the types; not ranked)"] == "1.00 + 8"
    budget = breakdown["MemTrial at a budget of 3 calls"]
    assert budget.endswith(" + 0") and 2.5 < float(budget.split(" + ")[0]) <= 3.0  # its own memory-free draft


def test_the_calls_of_a_cell_are_the_mean_over_its_seeds(world):
    seeds = []
    for seed, calls in ((3, 2.5), (4, 3.0)):
        copy = json.loads(json.dumps(world))
        copy["spec"]["seed"] = seed
        copy["methods"]["memtrial_budget_3"]["draft_calls_per_decision"] = calls
        seeds.append(copy)
    cell = aggregate(seeds, [3, 4], 1.0)["investors"]["balanced"]["beta_0.5"]["memtrial_budget_3"]
    assert cell["draft_calls_per_decision"] == 2.75
    assert cell["reference_calls_per_decision"] == 0


def test_render_rewrites_the_page_from_results_json_as_the_run_wrote_it(tmp_path, world):
    other = run_world(WorldSpec("noise_only", "balanced", 3, methods=COUNTED))
    write_report(tmp_path, [world, other], [3], 1.0, "memtrial backtest plantedmem --seeds 3")
    written = (tmp_path / "results.md").read_text()
    (tmp_path / "results.md").write_text(written.replace("| 16.00 |", "| 8.00 |"))  # a page out of date
    (tmp_path / "cost_quality_frontier.png").unlink()
    render(tmp_path)
    assert (tmp_path / "results.md").read_text() == written
    assert (tmp_path / "cost_quality_frontier.png").stat().st_size > 10_000


@pytest.mark.parametrize("run", ["plantedmem", "classalloc"])
def test_the_frontier_plot_names_every_point_with_no_label_over_another(tmp_path, run):
    """Every method plotted carries its number beside its point, the legend names every number, and no two
    labels overlap (the committed runs, re-rendered from their results.json)."""
    import matplotlib

    matplotlib.use("Agg")
    from pathlib import Path

    from backtest.plantedmem import PlantedMemWorld
    from backtest.report import MEMORY_REGIMES, NULL_REGIMES, frontier_plot

    document = json.loads((Path(__file__).resolve().parents[2] / "docs" / "results" / run / "results.json").read_text())
    investors = document["investors"]
    if run == "plantedmem":
        groups = [("memory regimes", MEMORY_REGIMES), ("null regimes", NULL_REGIMES)]
        methods = list(investors["balanced"]["beta_0.5"])
    else:
        groups = [("utility against calls", [run])]
        methods = list(investors["balanced"][run])
    layout = frontier_plot(investors, groups, methods, tmp_path / "frontier.png", [], PlantedMemWorld.reference_calls)
    assert (tmp_path / "frontier.png").stat().st_size > 10_000
    numbered = {int(entry.split()[0]): entry for entry in layout.legend}
    assert sorted(numbered) == list(range(1, len(methods) + 1))  # every method in the legend, once
    assert "MemTrial (trust dial, odd half)" in numbered[1]
    for panel in layout.labels:
        on_panel = [int(n) for text in panel for n in text.split(",")]
        assert len(on_panel) == len(set(on_panel))  # each point named once
        off = {n for n, entry in numbered.items() if entry.endswith("(off scale)")}
        assert set(on_panel) | off == set(numbered)  # a point not labelled is off the scale, and the legend says so
        boxes = list(panel.values())
        for i, (x0, y0, x1, y1) in enumerate(boxes):
            for a0, b0, a1, b1 in boxes[i + 1 :]:
                assert x1 <= a0 or a1 <= x0 or y1 <= b0 or b1 <= y0, "two labels overlap"


def test_each_per_seed_list_follows_the_seeds_results_json_names_whatever_order_they_were_given_in(world):
    """``--seeds 4,3``: results.json names its seeds in the order of every per-seed list (each world's figure
    beside its own seed), not in the order given."""
    worlds = []
    for seed, utility in ((4, 0.4), (3, 0.3)):  # run, and returned, in the order given
        copy = json.loads(json.dumps(world))
        copy["spec"]["seed"] = seed
        copy["methods"]["memtrial_budget_3"]["mean_utility_pp"] = utility
        worlds.append(copy)
    document = aggregate(worlds, [4, 3], 1.0)
    per_seed = document["investors"]["balanced"]["beta_0.5"]["memtrial_budget_3"]["per_seed"]
    assert dict(zip(document["seeds"], per_seed, strict=True)) == {3: 0.3, 4: 0.4}


def test_a_run_into_an_earlier_run_s_folder_leaves_none_of_its_plots_behind(tmp_path, world):
    """A run without MemTrial draws no trust-dial plot: the one an earlier run left in the folder goes, so no
    plot on the page can pass for this run's."""
    write_report(tmp_path, [world], [3], 1.0, "memtrial backtest plantedmem --seeds 3")
    assert (tmp_path / "trust_weight_by_date.png").exists()
    alone = run_world(WorldSpec("beta_0.5", "balanced", 3, methods=("no_memory",)))
    write_report(tmp_path, [alone], [3], 1.0, "memtrial backtest plantedmem --seeds 3 --methods no_memory")
    assert not (tmp_path / "trust_weight_by_date.png").exists()
    assert (tmp_path / "utility_by_regime.png").exists() and "no_memory" in (tmp_path / "results.json").read_text()


def test_a_render_whose_plot_fails_puts_the_page_it_replaced_back(tmp_path, world, monkeypatch):
    import backtest.report as report

    write_report(tmp_path, [world], [3], 1.0, "memtrial backtest plantedmem --seeds 3")
    page = (tmp_path / "results.md").read_text()
    (tmp_path / "results.md").write_text(page + "\nthe page as it stood\n")

    def broken(*_, **__):
        raise KeyError("draft_calls_per_decision")

    monkeypatch.setattr(report, "frontier_plot", broken)
    with pytest.raises(KeyError):
        render(tmp_path)
    assert (tmp_path / "results.md").read_text() == page + "\nthe page as it stood\n"
