"""Full-Bayes fits of many worlds: one batched (vmapped, padded) SVI call vs one world at a time.

Worlds have 48 experiences and 120 dates of four retrieved experiences (the
PlantedMem shape). For each count the script reports the wall time of the
batched call and of the loop, each after its kernel was compiled once (the
compile time, first call minus a warm call, is reported separately), and the
ratio. Results go to ``--out`` (JSON) and a Markdown table beside it.

    python benchmarks/bench_bayes.py --out benchmarks/results/bayes.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def worlds(count: int, seed: int = 0) -> list[object]:
    from memtrial.values import sufficient_statistics
    from memtrial.values.bayes import Problem

    rng = np.random.default_rng(seed)
    problems = []
    for _ in range(count):
        truth = rng.normal(0, 0.01, size=48)
        dates = np.repeat(np.arange(120), 4)
        picks = np.argsort(rng.random((120, 48)), axis=1)[:, :4].ravel()
        values = truth[picks] + np.repeat(rng.normal(0, 0.05, size=120), 4) + rng.normal(0, 0.02, size=480)
        stats = sufficient_statistics(zip(dates.tolist(), picks.tolist(), values.tolist(), strict=True))
        assert stats is not None
        features = rng.normal(size=(len(stats.experience_ids), 8))
        problems.append(
            Problem(
                stats.means / stats.scale,
                stats.counts.astype(float),
                features,
                stats.residual_ss / stats.scale**2,
                stats.dof,
            )
        )
    return problems


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "bayes.json")
    parser.add_argument("--counts", default="1,10,100,1000")
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    import jax

    from memtrial.values.bayes import enable_compile_cache, fit_many

    cache = enable_compile_cache()
    counts = [int(c) for c in args.counts.split(",")]
    problems = worlds(max(counts))
    first_single = timed(lambda: fit_many(problems[:1], num_steps=args.steps))
    warm_single = timed(lambda: fit_many(problems[:1], num_steps=args.steps))
    rows = []
    for count in counts:
        batch = problems[:count]
        first = timed(lambda batch=batch: fit_many(batch, num_steps=args.steps))
        batched = timed(lambda batch=batch: fit_many(batch, num_steps=args.steps))
        loop = timed(lambda batch=batch: [fit_many([p], num_steps=args.steps) for p in batch])
        row = {
            "worlds": count,
            "batched_s": batched,
            "batched_compile_s": max(first - batched, 0.0),
            "one_at_a_time_s": loop,
            "loop_over_batched": loop / batched,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {
        "benchmark": "full-Bayes value model, SVI, batched vs one at a time",
        "device": str(jax.devices()[0]),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "svi_steps": args.steps,
        "single_world_compile_s": max(first_single - warm_single, 0.0),
        "compile_cache": str(cache),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| worlds | batched (s) | compile of the batch (s) | one at a time (s) | loop / batched |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['worlds']} | {r['batched_s']:.3f} | {r['batched_compile_s']:.2f} | {r['one_at_a_time_s']:.2f} | {r['loop_over_batched']:.1f}x |"
        for r in rows
    ]
    lines.append(
        f"\nDevice: {result['device']}; compile of the single-world kernel: {result['single_world_compile_s']:.2f} s."
    )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
