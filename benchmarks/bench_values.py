"""The value learner: full fit, incremental update, and the Fay–Herriot core against two baselines.

For each size the script simulates contribution records (four experiences a
date, about ten records an experience, 384-d embeddings) and measures, in one
run:

- ``full_fit``: ``EmpiricalBayesLearner("auto").fit_arrays(...)`` from all
  records (vectorised centring and statistics, both modes' grid search and
  posteriors; PCA of the embeddings is cached and timed apart as ``pca``);
- ``update``: what a settlement costs: one new date's records added to the
  running statistics, then the refit of both modes (median over the last 30
  dates, each added in turn);
- ``grid``: the (sigma_b2, tau2) likelihood table alone, vectorised (one batched
  eigendecomposition), against ``grid_solve``, the previous implementation
  (a p x p solve per grid point), with the largest difference between them;
- ``dense``: grid search and posterior with a dense H x H solve per grid point
  (the test oracle), up to ``--dense-max-experiences``, with the largest
  difference of the posterior means (checked <= 1e-9);
- that the incremental statistics equal the batch ones (relative difference of
  the values).

Writes JSON to ``--out`` and a Markdown table beside it.

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
from collections.abc import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oracles import dense_oracle, solve_likelihood_table  # noqa: E402

from memtrial.values import EmpiricalBayesLearner, LearnerMode, content_features  # noqa: E402
from memtrial.values.fayherriot import VARIANCE_GRID, fit_fay_herriot, log_likelihood_table  # noqa: E402

SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
DENSE_TOLERANCE = 1e-9
HELD_OUT = 30  # dates added one at a time to time the incremental update


def simulate(n_records: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    n_experiences = max(n_records // 10, 8)
    truth = rng.normal(0, 0.01, size=n_experiences)
    n_dates = n_records // 4
    picks = (
        np.argsort(rng.random((n_dates, n_experiences)), axis=1)[:, :4]
        if n_experiences <= 64
        else np.array([rng.choice(n_experiences, 4, replace=False) for _ in range(n_dates)])
    )
    market = rng.normal(0, 0.05, size=(n_dates, 1))
    contributions = truth[picks] + market + rng.normal(0, 0.02, size=picks.shape)
    dates = np.repeat(np.arange(n_dates), 4)
    embeddings = dict(enumerate(rng.normal(size=(n_experiences, 384))))
    return dates, picks.reshape(-1), contributions.reshape(-1), embeddings


def best_of(repeats: int, function: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return min(timings)


def measure(n_records: int, dense_max: int, repeats: int) -> dict[str, object]:
    dates, experiences, contributions, embeddings = simulate(n_records, seed=n_records)
    pca = best_of(1, lambda: content_features(np.array(list(embeddings.values()))))
    batch = EmpiricalBayesLearner("auto", features=embeddings).fit_arrays(dates, experiences, contributions)
    full_fit = best_of(repeats, lambda: batch.fit_arrays(dates, experiences, contributions))

    online = EmpiricalBayesLearner("auto", features=embeddings)
    n_dates = int(dates[-1]) + 1
    timed = min(HELD_OUT, n_dates - 1)
    day = [
        dict(zip(experiences[4 * t : 4 * t + 4].tolist(), contributions[4 * t : 4 * t + 4].tolist(), strict=True))
        for t in range(n_dates)
    ]
    for t in range(n_dates - timed):
        online.update(t, day[t])
    online.fits_  # noqa: B018 - fitted before the timed updates
    timings = []
    for t in range(n_dates - timed, n_dates):  # each settlement: one new date, then the refit both modes need
        start = time.perf_counter()
        online.update(t, day[t])
        online.fits_  # noqa: B018
        timings.append(time.perf_counter() - start)
    update = float(np.median(timings))
    ids = list(online.statistics.ids)
    incremental = np.array([online.predict(h) for h in ids])
    batch_values = np.array([batch.predict(h) for h in ids])
    incremental_gap = float(
        np.max(np.abs(incremental - batch_values)) / max(float(np.max(np.abs(batch_values))), 1e-300)
    )

    fit = online.fits_[LearnerMode.CONTENT]
    vectors = online.content_vectors()
    z = np.array([vectors[h] for h in ids])
    n = fit.counts.astype(float)
    stats = online.statistics.snapshot()
    assert stats is not None
    m = stats.means / stats.scale
    grid = best_of(repeats, lambda: log_likelihood_table(m, n, z, VARIANCE_GRID, VARIANCE_GRID))
    grid_solve = best_of(repeats, lambda: solve_likelihood_table(m, n, z, VARIANCE_GRID, VARIANCE_GRID))
    grid_gap = float(
        np.max(
            np.abs(
                log_likelihood_table(m, n, z, VARIANCE_GRID, VARIANCE_GRID)
                - solve_likelihood_table(m, n, z, VARIANCE_GRID, VARIANCE_GRID)
            )
        )
    )
    core = best_of(repeats, lambda: fit_fay_herriot(m, n, z))
    row: dict[str, object] = {
        "records": int(contributions.size),
        "experiences": len(ids),
        "features": int(z.shape[1]),
        "full_fit_s": full_fit,
        "update_s": update,
        "pca_s": pca,
        "core_s": core,
        "grid_s": grid,
        "grid_solve_s": grid_solve,
        "grid_speedup": grid_solve / grid,
        "grid_max_abs_difference": grid_gap,
        "incremental_vs_batch_max_rel_difference": incremental_gap,
        "dense_s": None,
        "dense_over_core": None,
        "dense_max_abs_difference": None,
    }
    if len(ids) <= dense_max:
        dense_seconds = best_of(1, lambda: dense_oracle(m, n, z))
        _, _, _, mean, _, _ = dense_oracle(m, n, z)
        gap = float(np.max(np.abs(fit_fay_herriot(m, n, z).mean - mean)))
        if gap > DENSE_TOLERANCE:
            raise SystemExit(f"the low-rank posterior differs from the dense oracle by {gap:.3g} > {DENSE_TOLERANCE}")
        row.update(dense_s=dense_seconds, dense_over_core=dense_seconds / core, dense_max_abs_difference=gap)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "values.json")
    parser.add_argument("--sizes", type=lambda text: tuple(int(x) for x in text.split(",")), default=SIZES)
    parser.add_argument("--dense-max-experiences", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        row = measure(size, args.dense_max_experiences, args.repeats)
        rows.append(row)
        print(
            f"{row['records']:>7} records {row['experiences']:>6} experiences  full fit {1000 * row['full_fit_s']:.2f} ms"  # type: ignore[operator]
            f"  update {1000 * row['update_s']:.2f} ms  grid {row['grid_speedup']:.1f}x faster",  # type: ignore[operator]
            flush=True,
        )
    result = {
        "benchmark": "value learner: full fit, incremental update, likelihood grid",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "dense_max_experiences": args.dense_max_experiences,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| records | experiences | full fit (ms) | update + refit (ms) | grid (ms) | grid, previous (ms) | grid speed-up | dense / core | dense max diff |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        dense = "not run" if row["dense_over_core"] is None else f"{row['dense_over_core']:.0f}x"
        gap = "-" if row["dense_max_abs_difference"] is None else f"{row['dense_max_abs_difference']:.1e}"
        lines.append(
            f"| {row['records']} | {row['experiences']} | {1000 * row['full_fit_s']:.2f} | {1000 * row['update_s']:.2f} | "  # type: ignore[operator]
            f"{1000 * row['grid_s']:.2f} | {1000 * row['grid_solve_s']:.2f} | {row['grid_speedup']:.1f}x | {dense} | {gap} |"  # type: ignore[operator]
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
