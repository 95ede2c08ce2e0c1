"""PlantedMem worlds per second with 1 and with 2 local worker processes, in the same run.

    python benchmarks/bench_backtest.py --out benchmarks/results/backtest.json

Each pass runs the same worlds (one regime, one investor, seeds 0..N-1, every
method unless --methods narrows it); the pool start-up is part of the timed
wall, as it is for a user.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time

from backtest.runner import WorldSpec, market_for, run_many

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "backtest.json")
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--regime", default="beta_0.25")
    parser.add_argument("--investor", default="balanced")
    parser.add_argument("--methods", default=None, help="comma-separated method ids (default: all)")
    args = parser.parse_args()
    methods = None if args.methods is None else tuple(args.methods.split(","))
    specs = [WorldSpec(args.regime, args.investor, seed, methods=methods) for seed in range(args.worlds)]
    market_for(False)
    rows = {}
    outputs = {}
    for workers in (1, 2):
        start = time.perf_counter()
        outputs[workers] = run_many(specs, workers=workers)
        wall = time.perf_counter() - start
        rows[workers] = {"workers": workers, "worlds": len(specs), "seconds": wall, "worlds_per_second": len(specs) / wall}
        print(json.dumps(rows[workers]), flush=True)
    identical = json.dumps(outputs[1], sort_keys=True) == json.dumps(outputs[2], sort_keys=True)
    result = {
        "benchmark": "plantedmem worlds per second",
        "regime": args.regime,
        "investor": args.investor,
        "methods": "all" if methods is None else list(methods),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "one_worker": rows[1],
        "two_workers": rows[2],
        "two_over_one": rows[2]["worlds_per_second"] / rows[1]["worlds_per_second"],
        "identical_results": identical,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(
        "| workers | worlds | seconds | worlds/s |\n|---:|---:|---:|---:|\n"
        + "".join(f"| {r['workers']} | {r['worlds']} | {r['seconds']:.1f} | {r['worlds_per_second']:.2f} |\n" for r in rows.values())
        + f"\n2 workers / 1 worker: {result['two_over_one']:.2f}x; identical results: {identical}.\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
