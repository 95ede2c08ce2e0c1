"""PlantedMem speed: the batch replay against the online engines, and 1 against 2 worker processes.

In one run, on the same worlds (one regime, one investor, seeds 0..N-1):

- ``memtrial``: the eleven MemTrial variants (plus equal weight, which every
  run keeps) once with one online :class:`~memtrial.engine.lifecycle.MemTrial` per
  variant and once with the batch replay (:mod:`backtest.methods.replay`); worlds per
  second of each, their ratio, and whether every result is identical;
- ``all_methods``: every method, online and replayed, the same way;
- ``workers``: every method, replayed, with 1 and with 2 local worker
  processes (pool start-up included in the wall, as it is for a user) on
  every regime (``--worker-regimes``) and investor of seeds 0..W-1 (``--worker-seeds``).

    python benchmarks/bench_backtest.py --out benchmarks/results/backtest.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time
from dataclasses import replace

from backtest.methods.registry import MEMTRIAL_VARIANTS
from backtest.plantedmem import REGIMES
from backtest.runner import WorldSpec, market_for, run_many, run_world
from memtrial.outcomes.mandates import INVESTORS

ROOT = pathlib.Path(__file__).resolve().parent.parent


def engines(specs: list[WorldSpec]) -> dict[str, object]:
    """Online engines against the batch replay on the same worlds, in this process."""
    timed = {}
    outputs = {}
    for engine in ("online", "replay"):
        start = time.perf_counter()
        outputs[engine] = [run_world(replace(spec, engine=engine), keep_choices=True) for spec in specs]
        wall = time.perf_counter() - start
        timed[engine] = {"worlds": len(specs), "seconds": wall, "worlds_per_second": len(specs) / wall}
    identical = all(
        all(online[key] == replayed[key] for key in ("choices", "trust_states", "values", "methods"))
        for online, replayed in zip(outputs["online"], outputs["replay"], strict=True)
    )
    return {
        **timed,
        "replay_over_online": timed["replay"]["worlds_per_second"] / timed["online"]["worlds_per_second"],
        "identical_results": identical,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "backtest.json")
    parser.add_argument("--worlds", type=int, default=8)
    parser.add_argument("--regime", default="beta_0.25")
    parser.add_argument("--investor", default="balanced")
    parser.add_argument(
        "--worker-seeds", type=int, default=4, help="seeds of the workers comparison (x 7 regimes x 3 investors)"
    )
    parser.add_argument(
        "--worker-regimes",
        default=",".join(REGIMES),
        help="regimes of the workers comparison, comma-separated (default: the seven of the paper)",
    )
    args = parser.parse_args()
    worker_regimes = args.worker_regimes.split(",")
    unknown = sorted(set(worker_regimes) - set(REGIMES))
    if unknown:
        parser.error(f"--worker-regimes must name regimes among {', '.join(REGIMES)}, got {', '.join(unknown)}")
    market_for(False)
    seeds = range(args.worlds)
    variants = [
        WorldSpec(args.regime, args.investor, seed, methods=("equal_weight", *MEMTRIAL_VARIANTS)) for seed in seeds
    ]
    everything = [WorldSpec(args.regime, args.investor, seed) for seed in seeds]
    run_world(everything[0])  # imports and the market are loaded once, outside the timings
    result: dict[str, object] = {
        "benchmark": "plantedmem: batch replay against online engines, and worker processes",
        "regime": args.regime,
        "investor": args.investor,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "memtrial": engines(variants),
    }
    print("memtrial", json.dumps(result["memtrial"]), flush=True)
    result["all_methods"] = engines(everything)
    print("all_methods", json.dumps(result["all_methods"]), flush=True)
    rows, outputs = {}, {}
    pool_specs = [
        WorldSpec(regime, investor, seed)
        for investor in INVESTORS
        for regime in worker_regimes
        for seed in range(args.worker_seeds)
    ]
    for workers in (1, 2):
        start = time.perf_counter()
        outputs[workers] = run_many(pool_specs, workers=workers)
        wall = time.perf_counter() - start
        rows[workers] = {
            "workers": workers,
            "worlds": len(pool_specs),
            "seconds": wall,
            "worlds_per_second": len(pool_specs) / wall,
        }
    result["workers"] = {
        "regimes": worker_regimes,
        "one_worker": rows[1],
        "two_workers": rows[2],
        "two_over_one": rows[2]["worlds_per_second"] / rows[1]["worlds_per_second"],
        "identical_results": json.dumps(outputs[1], sort_keys=True) == json.dumps(outputs[2], sort_keys=True),
    }
    print("workers", json.dumps(result["workers"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = ["| methods | engine | worlds | seconds | worlds/s |", "|---|---|---:|---:|---:|"]
    for name in ("memtrial", "all_methods"):
        block = result[name]
        for engine in ("online", "replay"):
            row = block[engine]  # type: ignore[index]
            lines.append(
                f"| {name} | {engine} | {row['worlds']} | {row['seconds']:.2f} | {row['worlds_per_second']:.2f} |"
            )
    lines.append("")
    for name in ("memtrial", "all_methods"):
        block = result[name]
        lines.append(
            f"{name}: replay / online {block['replay_over_online']:.1f}x, identical results: {block['identical_results']}."
        )  # type: ignore[index]
    workers = result["workers"]
    lines.append(
        f"Every method, replayed, {workers['one_worker']['worlds']} worlds: 1 worker {workers['one_worker']['seconds']:.1f} s, "  # type: ignore[index]
        f"2 workers {workers['two_workers']['seconds']:.1f} s ({workers['two_over_one']:.2f}x), identical results: {workers['identical_results']}."  # type: ignore[index]
    )
    # the table beside the JSON (backtest.md is the profile of where a run spends its time)
    args.out.with_name(args.out.stem + "_engines.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
