"""PlantedMem runs as a user runs them, against a baseline version of the code measured in the same run.

Each arm runs the command line (``python -m memtrial.cli backtest plantedmem ...``) in a fresh process
whose ``PYTHONPATH`` is its tree: this checkout, and the baseline, a git ref exported to a temporary
folder (``git archive``). The arms alternate, ``--repeats`` times, so a busy machine slows both alike;
every repeat gives ratios (baseline / this checkout: the run's wall, the process's wall, CPU seconds), and
the spread of the ratios is reported. On a machine others load, CPU seconds move least.

- ``fixed``: the default method list, every regime and investor, seeds ``--fixed-seeds`` (0-9: 210 worlds),
  ``--workers`` local workers;
- ``frontier``: every method with ``--frontier`` on seeds ``--frontier-seeds`` (default 15-16, 42 worlds;
  the committed run's test seeds 15-114 are 2,100: scale by 50);
- ``curation``: the curation variants ``--curation-methods`` (method 4.12-4.14) for the balanced investor
  in the regimes ``--curation-regimes`` (default the two curation regimes) on seeds ``--curation-seeds``.

``--workloads`` picks which run (default ``fixed,frontier``).

Each run's wall is the process's (imports, the pool's start and the report included) and the run's own
("N worlds in X s"); CPU seconds are the process's and its workers'. ``identical_results``: both arms'
``results.json`` agree in every figure (not the wall time, the command line or the data record: see ``figures``).

    python benchmarks/bench_backtest_runs.py --baseline 06855a0 --out benchmarks/results/backtest_runs.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKLOADS = ("fixed", "frontier", "curation")
# no_memory: a method the report's regime plot shows (older code fails to write the report of a run without one)
CURATION_METHODS = (
    "memtrial_similarity",
    "memtrial_value_aware",
    "memtrial_quarantine",
    "memtrial_curated",
    "no_memory",
)


def export(ref: str, folder: pathlib.Path) -> pathlib.Path:
    """The tree of ``ref`` in ``folder`` (git archive: tracked files only)."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def run_once(tree: pathlib.Path, args: list[str], out: pathlib.Path) -> dict[str, Any]:
    """One command-line run with ``tree`` first on the path: walls, CPU seconds and the results document."""
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "memtrial.cli", "backtest", "plantedmem", *args, "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=environment, cwd=tree, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    match = re.search(r"(\d+) worlds in ([0-9.]+) s", done.stdout)
    if match is None:
        raise RuntimeError(f"no 'N worlds in X s' line in the run's output: {done.stdout[-500:]!r}")
    document = json.loads((out / "results.json").read_text())
    return {
        "worlds": int(match.group(1)),
        "run_s": float(match.group(2)),
        "process_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "document": document,
    }


def figures(document: dict[str, Any]) -> dict[str, Any]:
    """A results document's figures: not its wall time, its command line (which names each arm's own output
    folder) or the record of the data it read (a release before wrote neither; both arms read the same files)."""
    return {key: value for key, value in document.items() if key not in ("wall_seconds", "command", "data")}


def compare(
    name: str, args: list[str], trees: dict[str, pathlib.Path], repeats: int, scratch: pathlib.Path
) -> dict[str, Any]:
    """The two arms of one workload, alternated ``repeats`` times."""
    runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in trees}
    for repeat in range(repeats):
        for arm, tree in trees.items():
            result = run_once(tree, args, scratch / f"{name}_{arm}_{repeat}")
            runs[arm].append(result)
            print(name, arm, repeat, f"run {result['run_s']:.1f} s, process {result['process_s']:.1f} s", flush=True)
    ratios = [b["run_s"] / c["run_s"] for b, c in zip(runs["baseline"], runs["current"], strict=True)]
    process_ratios = [b["process_s"] / c["process_s"] for b, c in zip(runs["baseline"], runs["current"], strict=True)]
    cpu_ratios = [b["cpu_s"] / c["cpu_s"] for b, c in zip(runs["baseline"], runs["current"], strict=True)]
    documents = [figures(r.pop("document")) for arm in runs for r in runs[arm]]
    return {
        "args": args,
        "worlds": runs["current"][0]["worlds"],
        "runs": runs,
        "baseline_over_current": ratios,
        "baseline_over_current_process": process_ratios,
        "baseline_over_current_cpu": cpu_ratios,
        "ratio_median": statistics.median(ratios),
        "ratio_spread": [min(ratios), max(ratios)],
        "identical_results": all(document == documents[0] for document in documents),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Baseline `{result['baseline']}` against this checkout (`{result['current']}`), arms alternated, "
        f"{result['repeats']} repeats; load average before {result['load_before']:.1f}, after {result['load_after']:.1f}.",
        "",
        "| workload | worlds | arm | run s (each repeat) | process s | CPU s |",
        "|---|---:|---|---|---|---|",
    ]
    names = [name for name in WORKLOADS if name in result]
    for name in names:
        block = result[name]
        for arm in ("baseline", "current"):
            runs = block["runs"][arm]
            lines.append(
                f"| {name} | {block['worlds']} | {arm} | "
                + ", ".join(f"{r['run_s']:.1f}" for r in runs)
                + " | "
                + ", ".join(f"{r['process_s']:.1f}" for r in runs)
                + " | "
                + ", ".join(f"{r['cpu_s']:.1f}" for r in runs)
                + " |"
            )
    lines.append("")
    for name in names:
        block = result[name]
        lines.append(
            f"{name}: baseline / current {block['ratio_median']:.2f}x (median; each repeat "
            + ", ".join(f"{r:.2f}" for r in block["baseline_over_current"])
            + "; process "
            + ", ".join(f"{r:.2f}" for r in block["baseline_over_current_process"])
            + "; CPU seconds "
            + ", ".join(f"{r:.2f}" for r in block["baseline_over_current_cpu"])
            + f"), identical results: {block['identical_results']}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "backtest_runs.json")
    parser.add_argument("--baseline", default="06855a0", help="git ref of the baseline code")
    parser.add_argument("--fixed-seeds", default="0-9")
    parser.add_argument("--frontier-seeds", default="15-16")
    parser.add_argument("--regimes", default="all")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workloads", default="fixed,frontier", help=f"some of {', '.join(WORKLOADS)}")
    parser.add_argument("--curation-seeds", default="0-1")
    parser.add_argument("--curation-regimes", default="curation")
    parser.add_argument("--curation-methods", default=",".join(CURATION_METHODS))
    args = parser.parse_args()
    chosen = args.workloads.split(",")
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        parser.error(f"--workloads: unknown {unknown}; choose from {list(WORKLOADS)}")
    common = ["--investor", "all", "--regimes", args.regimes, "--workers", str(args.workers)]
    every = {
        "fixed": [*common, "--seeds", args.fixed_seeds],
        "frontier": [*common, "--seeds", args.frontier_seeds, "--frontier"],
        "curation": [
            *("--investor", "balanced", "--regimes", args.curation_regimes, "--workers", str(args.workers)),
            *("--seeds", args.curation_seeds, "--methods", args.curation_methods),
        ],
    }
    workloads = {name: every[name] for name in chosen}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    result: dict[str, Any] = {
        "benchmark": "plantedmem command-line runs: a baseline version against this checkout, arms alternated",
        "baseline": args.baseline,
        "current": head.stdout.strip() + ("+changes" if _dirty() else ""),
        "repeats": args.repeats,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_before": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = pathlib.Path(scratch_name)
        baseline = export(args.baseline, scratch / "baseline")
        trees = {"baseline": baseline, "current": ROOT}
        for name, workload in workloads.items():
            result[name] = compare(name, workload, trees, args.repeats, scratch)
    result["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    print(f"wrote {args.out}")


def _dirty() -> bool:
    status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True)
    return bool(status.stdout.strip())


if __name__ == "__main__":
    main()
