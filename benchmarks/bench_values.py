"""Fit time of the value learner against a dense implementation of the same model.

For each size the script simulates contribution records (four experiences a
date, about ten records an experience, 384-d embeddings), then times

- ``learner``: ``EmpiricalBayesLearner("auto").fit(records)`` end to end
  (centring, noise scale, both modes' grid search and posteriors; PCA of the
  embeddings is computed once per feature set and cached, and is timed
  separately as ``pca``; the cache of identical earlier fits is cleared
  before each timed fit);
- ``low_rank``: the Fay–Herriot grid search and posterior alone, on the
  content mode's sufficient statistics;
- ``dense``: the same grid search and posterior with a dense H x H solve per
  grid point (the test oracle), only up to ``--dense-max-experiences``.

and writes the measured seconds and the ratio dense / low_rank, all from the
same run, to ``--out`` (JSON) and a Markdown table beside it.

    python benchmarks/bench_values.py --out benchmarks/results/values.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oracles import dense_oracle  # noqa: E402

from memtrial.fayherriot import fit_fay_herriot  # noqa: E402
from memtrial.values import _FIT_CACHE, EmpiricalBayesLearner, LearnerMode, content_features  # noqa: E402

SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)


def simulate(n_records: int, seed: int) -> tuple[list[tuple[int, int, float]], dict[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    n_experiences = max(n_records // 10, 8)
    truth = rng.normal(0, 0.01, size=n_experiences)
    n_dates = n_records // 4
    picks = np.argsort(rng.random((n_dates, n_experiences)), axis=1)[:, :4] if n_experiences <= 64 else rng.integers(0, n_experiences, size=(n_dates, 4))
    market = rng.normal(0, 0.05, size=(n_dates, 1))
    contributions = truth[picks] + market + rng.normal(0, 0.02, size=picks.shape)
    records = [(t, int(h), float(c)) for t in range(n_dates) for h, c in zip(picks[t], contributions[t], strict=True)]
    embeddings = {h: v for h, v in enumerate(rng.normal(size=(n_experiences, 384)))}
    return records, embeddings


def best_of(repeats: int, function) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return min(timings)


def measure(n_records: int, dense_max: int, repeats: int) -> dict[str, object]:
    records, embeddings = simulate(n_records, seed=n_records)
    learner = EmpiricalBayesLearner("auto", features=embeddings)
    pca = best_of(1, lambda: content_features(np.array(list(embeddings.values()))))
    learner.fit(records)  # warms the PCA cache

    def fresh_fit() -> None:
        _FIT_CACHE.clear()  # time the fit itself, not a lookup of an identical earlier fit
        learner.fit(records)

    learner_seconds = best_of(repeats, fresh_fit)
    fit = learner.fits_[LearnerMode.CONTENT]
    ids = sorted(fit.index, key=fit.index.get)
    vectors = learner.content_vectors()
    z = np.array([vectors[h] for h in ids])
    n = fit.counts.astype(float)
    m = np.random.default_rng(0).normal(size=len(ids))  # the work does not depend on the values of m
    low_rank_seconds = best_of(repeats, lambda: fit_fay_herriot(m, n, z))
    row: dict[str, object] = {
        "records": len(records),
        "experiences": len(ids),
        "features": int(z.shape[1]),
        "learner_fit_s": learner_seconds,
        "pca_s": pca,
        "low_rank_s": low_rank_seconds,
        "dense_s": None,
        "dense_over_low_rank": None,
    }
    if len(ids) <= dense_max:
        dense_seconds = best_of(1, lambda: dense_oracle(m, n, z))
        row["dense_s"] = dense_seconds
        row["dense_over_low_rank"] = dense_seconds / low_rank_seconds
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "values.json")
    parser.add_argument("--sizes", type=lambda text: tuple(int(x) for x in text.split(",")), default=SIZES)
    parser.add_argument("--dense-max-experiences", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        row = measure(size, args.dense_max_experiences, args.repeats)
        rows.append(row)
        dense = "-" if row["dense_s"] is None else f"{row['dense_s']:.4f}"
        print(f"{row['records']:>7} records {row['experiences']:>6} experiences  learner {row['learner_fit_s']:.4f} s  low-rank {row['low_rank_s']:.5f} s  dense {dense}", flush=True)
    result = {
        "benchmark": "value learner fit time",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "dense_max_experiences": args.dense_max_experiences,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| records | experiences | learner fit (s) | low-rank core (s) | dense core (s) | dense / low-rank |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        dense = "not run" if row["dense_s"] is None else f"{row['dense_s']:.4f}"
        ratio = "-" if row["dense_over_low_rank"] is None else f"{row['dense_over_low_rank']:.0f}x"
        lines.append(f"| {row['records']} | {row['experiences']} | {row['learner_fit_s']:.4f} | {row['low_rank_s']:.5f} | {dense} | {ratio} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
