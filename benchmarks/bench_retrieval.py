"""FAISS retrieval latency at 1k / 10k / 100k experiences: exact (flat) vs HNSW, and HNSW's recall.

Vectors are random unit vectors of the embedding width (384); queries are
perturbed copies of stored vectors, as a context close to some lessons would
be. Recall@4 is the share of the exact top 4 that HNSW also returns.

    python benchmarks/bench_retrieval.py --out benchmarks/results/retrieval.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "retrieval.json")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        vectors = rng.normal(size=(size, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = vectors[rng.integers(0, size, args.queries)] + 0.5 * rng.normal(size=(args.queries, 384)).astype(np.float32) / np.sqrt(384)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        flat = faiss.IndexFlatIP(384)
        start = time.perf_counter()
        flat.add(vectors)
        flat_build = time.perf_counter() - start
        hnsw = faiss.IndexHNSWFlat(384, 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efSearch = 64
        start = time.perf_counter()
        hnsw.add(vectors)
        hnsw_build = time.perf_counter() - start
        timings: dict[str, list[float]] = {"flat": [], "hnsw": []}
        found: dict[str, list[np.ndarray]] = {"flat": [], "hnsw": []}
        for query in queries:
            for name, index in (("flat", flat), ("hnsw", hnsw)):
                start = time.perf_counter()
                _, ids = index.search(query[None, :], 4)
                timings[name].append(time.perf_counter() - start)
                found[name].append(ids[0])
        recall = float(np.mean([len(set(a) & set(b)) / 4 for a, b in zip(found["flat"], found["hnsw"], strict=True)]))
        row = {
            "experiences": size,
            "flat_build_s": flat_build,
            "hnsw_build_s": hnsw_build,
            **{f"{name}_p50_ms": float(np.percentile(t, 50) * 1000) for name, t in timings.items()},
            **{f"{name}_p99_ms": float(np.percentile(t, 99) * 1000) for name, t in timings.items()},
            "hnsw_recall_at_4": recall,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "retrieval", "threads": 1, "rows": rows}, indent=2) + "\n")
    lines = ["| experiences | flat p50 (ms) | flat p99 (ms) | HNSW p50 (ms) | HNSW p99 (ms) | HNSW recall@4 | HNSW build (s) |", "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {r['experiences']} | {r['flat_p50_ms']:.3f} | {r['flat_p99_ms']:.3f} | {r['hnsw_p50_ms']:.3f} | {r['hnsw_p99_ms']:.3f} | {r['hnsw_recall_at_4']:.3f} | {r['hnsw_build_s']:.1f} |"
        for r in rows
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
