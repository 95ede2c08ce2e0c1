"""Every benchmark script runs at tiny size and writes its results file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memtrial.errors import install_command, install_hint

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # benchmark smoke runs belong to the slow tier


def run_bench(tmp_path, name, *args, timeout=600):
    """Run ``benchmarks/bench_<name>.py`` with ``args`` at tiny size; its JSON results and their path."""
    out = tmp_path / f"{name}.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"bench_{name}.py"), *args, "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return json.loads(out.read_text()), out


def test_bench_values_writes_timings_and_ratios(tmp_path):
    result, out = run_bench(tmp_path, "values", "--sizes", "100,400", "--dense-max-experiences", "10", "--repeats", "1")
    first, second = result["rows"]
    assert (first["records"], first["experiences"]) == (100, 10)
    assert first["dense_over_core"] == first["dense_s"] / first["core_s"]
    assert first["dense_max_abs_difference"] <= 1e-9
    assert first["grid_max_abs_difference"] <= 1e-8 and first["grid_speedup"] == first["grid_solve_s"] / first["grid_s"]
    assert first["incremental_vs_batch_max_rel_difference"] <= 1e-9
    assert second["dense_s"] is None and second["update_s"] > 0
    assert out.with_suffix(".md").read_text().startswith("| records | experiences |")


def test_bench_service_reports_latency_at_each_checkpoint_and_bytes_per_decision(tmp_path):
    result, out = run_bench(tmp_path, "service", "--checkpoints", "2,6", "--window", "3")
    life = result["databases"]["sqlite"]
    assert set(life["checkpoints"]) == {"2", "6"}
    for row in life["checkpoints"].values():
        assert {"plan", "drafts", "settle"} <= set(row) and row["plan"]["n"] == 3
        assert row["bytes_written_per_decision"] > 0 and row["state_bytes"] > 0
    assert set(life["last_over_first_p50"]) == {"plan", "drafts", "settle"}
    # a ratio of two medians timed apart: on a loaded machine it can pass 1, so only its sense is checked
    assert life["embedding_share_of_plan_p50"] > 0
    assert out.with_suffix(".md").read_text().startswith("Window: 3 decisions")


def test_bench_backtest_reports_replay_against_online_and_both_worker_counts(tmp_path):
    result, _ = run_bench(tmp_path, "backtest", "--worlds", "1", "--worker-seeds", "1", "--worker-regimes", "beta_0.1")
    for name in ("memtrial", "all_methods"):
        block = result[name]
        assert block["online"]["worlds"] == block["replay"]["worlds"] == 1
        assert block["identical_results"] is True
        assert (
            block["replay_over_online"] == block["replay"]["worlds_per_second"] / block["online"]["worlds_per_second"]
        )
    workers = result["workers"]
    assert workers["regimes"] == ["beta_0.1"] and workers["identical_results"] is True
    assert workers["one_worker"]["worlds"] == workers["two_workers"]["worlds"] == 3  # one regime x 3 investors


def test_bench_bayes_reports_batched_and_sequential_times(tmp_path):
    # two worlds: one batched (vmapped) call and a loop of single-world calls, each kernel compiled once
    result, _ = run_bench(tmp_path, "bayes", "--counts", "2", "--steps", "50")
    assert [row["worlds"] for row in result["rows"]] == [2]
    assert all(row["batched_s"] > 0 and row["one_at_a_time_s"] > 0 for row in result["rows"])
    assert result["device"] and result["single_world_compile_s"] >= 0


def test_bench_retrieval_reports_exact_hnsw_ivf_with_recall_and_the_service(tmp_path):
    result, _ = run_bench(
        tmp_path, "retrieval", "--sizes", "300", "--queries", "20", "--service-queries", "3", "--cache", ""
    )
    row = result["rows"][0]
    assert row["experiences"] == 300 and row["indexes"]["exact"]["recall_at_4"] == 1.0
    assert {"hnsw_m32_ef64", "hnsw_m32_ef128"} <= set(row["indexes"]) and any(
        name.startswith("ivf") for name in row["indexes"]
    )
    assert all(0.0 <= value["recall_at_4"] <= 1.0 and value["p50_ms"] > 0 for value in row["indexes"].values())
    assert result["service"]["experiences"] == 300 and result["service"]["p50_ms"] > 0


def test_bench_load_reports_latency_errors_memory_and_drafting_overlap(tmp_path):
    result, _ = run_bench(tmp_path, "load", "--agents", "1", "--decisions", "2", "--postgres", "")
    assert [(r["database"], r["workers"]) for r in result["runs"]] == [("sqlite", 1), ("sqlite", 2)]
    assert all(
        r["errors"] == 0 and r["peak_rss_mb"] > 0 and set(r["latency_ms"]) == {"plan", "drafts", "settle"}
        for r in result["runs"]
    )
    assert result["server_drafting"]["max_in_flight"] == 8


def test_bench_start_reports_health_readiness_memory_and_the_busy_port(tmp_path):
    result, out = run_bench(tmp_path, "start", "--runs", "1", "--idle", "0.2")
    summary = result["summary"]
    assert 0 < summary["port_open_s_median"] <= summary["healthz_s_median"] <= summary["readyz_s_median"]
    assert summary["idle_rss_mb_before_model_load"] < summary["idle_rss_mb_model_loaded_median"]
    assert summary["busy_port_exit_code"] == 2 and summary["busy_port_banner_printed"] is False
    assert summary["readyz_s_first_start_exporting_onnx"] > summary["healthz_s_median"]
    conditions = result["conditions"]  # what a reader needs to compare a figure with their own
    assert conditions["cores"] >= 1 and conditions["load_average_1m_before"] >= 0
    assert isinstance(conditions["onnx_model_cached"], bool) and conditions["embedder"] in ("auto", "onnx", "torch")
    table = out.with_suffix(".md").read_text()
    assert "| readyz_s_median |" in table and "load_average_1m_before" in table


def test_bench_install_base_gives_the_pure_core_and_names_the_missing_extra(tmp_path):
    result, out = run_bench(tmp_path, "install", "--targets", "base", timeout=900)
    assert list(result["results"]) == ["base"]
    assert f"--targets base --out {out}" in out.with_suffix(".md").read_text()  # each row names its command
    base = result["results"]["base"]
    assert base["packages"] <= 5 and base["size_mb"] < 200
    # the hint names the interpreter of the environment that lacks the extra (not this test's), then the install
    says = base["memtrial_command_says"]
    assert (
        base["memtrial_command_exit_code"] == 2
        and f"/bin/python -m {install_command('service')} in the memtrial checkout" in says
    )
    assert install_hint("service") not in says  # this test's own interpreter would install into another environment


def test_bench_cache_reports_memory_against_the_budget_and_hot_and_cold_plans(tmp_path):
    result, out = run_bench(
        tmp_path,
        "cache",
        "--agents",
        "60",
        "--experiences",
        "20",
        "--cache-mb",
        "0.5",
        "--baseline-agents",
        "20",
        "--every",
        "20",
        "--plans",
        "20",
    )
    bounded = result["bounded"]
    assert bounded["evictions"] > 0 and sum(bounded["cache_bytes_held"].values()) <= 2**19
    assert [point["agents"] for point in bounded["rss_curve"]] == [20, 40, 60]
    assert result["unbounded"]["evictions"] == 0 and result["unbounded_mb_per_agent"] > 0
    assert bounded["hot_plan"]["n"] == 20 and bounded["cold_plan"]["n"] == 20
    assert result["unbounded"]["cold_plan"]["n"] == 17  # agents 3..19 of the twenty
    assert "| bounded | 60 |" in out.with_suffix(".md").read_text()


def test_bench_embedding_compares_the_torch_and_onnx_paths_on_one_thread(tmp_path):
    pytest.importorskip("onnxruntime", reason="ONNX PATH NOT BENCHMARKED: onnxruntime is not installed")
    result, out = run_bench(tmp_path, "embedding", "--queries", "20", "--texts", "50", "--batch", "8")
    assert set(result["runs"]) == {"torch", "onnx"} and result["worst_one_minus_cosine"] < 1e-5
    assert result["runs"]["onnx"]["single_query"]["n"] == 20 and result["onnx_model_mb"] > 10
    assert result["batch"] == 8 and all(run["batch_ms"] > 0 for run in result["runs"].values())
    assert result["installed_mb"]["onnxruntime"] > 0
    table = out.with_suffix(".md").read_text()
    assert "| onnx |" in table and "| 8 lessons (ms) |" in table


def test_bench_corrections_reports_each_age_and_target_and_the_concurrent_answers(tmp_path):
    result, out = run_bench(
        tmp_path, "corrections", "--ages", "101,140", "--service-ages", "101", "--repeats", "1", "--concurrent", "3"
    )
    engine = result["engine"]
    assert [(row["age"], row["corrected"]) for row in engine] == [
        (age, name) for age in (101, 140) for name in ("newest", "50th newest", "100th newest", "oldest")
    ]
    assert all(row["median_ms"] > 0 and 0 < row["replayed_entries"] < row["log_entries"] for row in engine)
    newest, oldest = engine[4], engine[7]
    assert newest["replayed_entries"] < oldest["replayed_entries"] == oldest["log_entries"] - 1  # a checkpoint vs none
    assert all(row["checkpoints"] <= 8 for row in engine)
    service = result["service"]["sqlite"]
    assert len(service["rows"]) == 4 and all(row["median_ms"] > 0 for row in service["rows"])
    assert service["concurrent"]["sent"] == 3 and sum(service["concurrent"]["answers"].values()) == 3
    assert "database_unavailable" not in " ".join(service["concurrent"]["answers"])
    assert out.with_suffix(".md").read_text().startswith("Engine (in-memory history)")


def test_bench_backtest_runs_times_both_arms_and_compares_their_results(tmp_path):
    result, out = run_bench(
        tmp_path,
        "backtest_runs",
        "--baseline",
        "HEAD",
        "--fixed-seeds",
        "0",
        "--frontier-seeds",
        "15",
        "--regimes",
        "beta_0.25",
        "--repeats",
        "1",
        "--workloads",
        "fixed,frontier,curation",
        "--curation-seeds",
        "0",
        "--curation-regimes",
        "drift",
    )
    for name, worlds in (("fixed", 3), ("frontier", 3), ("curation", 1)):  # x 3 investors, or the balanced one
        block = result[name]
        assert block["worlds"] == worlds
        baseline, current = block["runs"]["baseline"][0], block["runs"]["current"][0]
        assert block["baseline_over_current"] == [baseline["run_s"] / current["run_s"]]
        assert block["identical_results"] is True  # the same code twice: every figure agrees
    assert "--frontier" in result["frontier"]["args"] and "--frontier" not in result["fixed"]["args"]
    assert "memtrial_curated" in result["curation"]["args"][result["curation"]["args"].index("--methods") + 1]
    assert out.with_suffix(".md").read_text().startswith("Baseline `HEAD`")


def test_bench_cohort_compares_a_cohort_with_online_engines_on_the_same_worlds(tmp_path):
    result, out = run_bench(tmp_path, "cohort", "--worlds", "2", "--regimes", "poisoned", "--methods", "memtrial")
    (row,) = result["rows"]
    assert (row["regime"], row["method"], row["worlds"]) == ("poisoned", "memtrial", 2)
    assert row["identical_results"] is True
    assert row["online_over_cohort"] == row["online_cpu_s"] / row["cohort_cpu_s"]
    assert out.with_suffix(".md").read_text().startswith("| regime | method | worlds |")
