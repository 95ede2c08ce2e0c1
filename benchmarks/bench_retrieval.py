"""Retrieval on real sentence embeddings: exact, HNSW and IVF at 10k and 100k experiences, and the service.

The experiences are generated varied sentences (market lessons assembled from
word lists: an event, a market, a move, a horizon, a book outcome, a year),
embedded with the project's own offline MiniLM model; the queries are 500
further sentences that are not in the index. For each size it reports, per
FAISS index: the time to build it, the p50/p99 latency of one query, and
recall@4 (the share of the exact top 4 it returns). Then the service itself:
an agent holding the largest set (rows written straight into its database),
and the p50/p99 of ``POST .../experiences/search`` through a real server,
query embedding included (the service searches with HNSW from 20,000
experiences on).

    python benchmarks/bench_retrieval.py --out benchmarks/results/retrieval.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

EVENTS = [
    "a surprise rate cut",
    "a hawkish central bank",
    "an inflation print above consensus",
    "a banking scare",
    "a weak jobs report",
    "strong earnings",
    "an oil supply shock",
    "a sovereign downgrade",
    "a tariff announcement",
    "a recession warning",
    "a currency intervention",
    "a tech selloff",
    "record buybacks",
    "a housing slowdown",
    "a commodity rally",
    "falling real yields",
    "a credit spread blowout",
    "an election result",
    "a dovish pivot",
    "a liquidity squeeze",
]
MARKETS = [
    "long bonds",
    "short bonds",
    "large-cap equities",
    "small caps",
    "emerging markets",
    "gold",
    "oil",
    "real estate",
    "cash",
    "investment grade credit",
    "high yield",
    "the dollar",
    "bitcoin",
    "utilities",
    "banks",
    "technology stocks",
    "value stocks",
    "TIPS",
    "copper",
    "Japanese equities",
]
MOVES = [
    "rallied",
    "fell sharply",
    "drifted lower",
    "held steady",
    "outperformed",
    "lagged",
    "whipsawed",
    "recovered quickly",
    "broke out",
    "collapsed",
]
HORIZONS = [
    "within a week",
    "over the next month",
    "over a quarter",
    "by the end of the year",
    "the same day",
    "after two sessions",
]
OUTCOMES = [
    "so the book gained",
    "so the book lost",
    "and the hedge paid off",
    "and the hedge failed",
    "and diversification helped",
    "and concentration hurt",
]


def sentences(count: int, seed: int) -> list[str]:
    """``count`` distinct generated lessons (a random sample of the template's combinations)."""
    rng = np.random.default_rng(seed)
    parts = [EVENTS, MARKETS, MOVES, HORIZONS, OUTCOMES]
    sizes = [len(p) for p in parts]
    total = int(np.prod(sizes)) * 30
    picks = rng.choice(total, size=count, replace=False)
    out = []
    for pick in picks:
        year, rest = 1995 + int(pick % 30), int(pick // 30)
        words = []
        for part, size in zip(parts, sizes, strict=True):
            words.append(part[rest % size])
            rest //= size
        out.append(f"After {words[0]} in {year}, {words[1]} {words[2]} {words[3]}, {words[4]}.")
    return out


def embed(texts: list[str], cache: pathlib.Path | None) -> np.ndarray:
    """The texts' embeddings, kept in ``cache`` by a hash of the texts (embedding 100,000 takes minutes)."""
    import hashlib

    from memtrial.drafting.embeddings import configure_offline, get_embedder

    configure_offline()

    path = None
    if cache is not None:
        path = cache / f"{hashlib.sha256(chr(0).join(texts).encode()).hexdigest()[:24]}.npy"
        if path.is_file():
            return np.load(path)
    vectors = get_embedder().encode(texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


def latency(search, queries: np.ndarray) -> tuple[list[np.ndarray], dict[str, float]]:
    found, timings = [], []
    for query in queries:
        start = time.perf_counter()
        _, ids = search(query[None, :])
        timings.append(time.perf_counter() - start)
        found.append(ids[0])
    array = np.array(timings) * 1000.0
    return found, {"p50_ms": float(np.percentile(array, 50)), "p99_ms": float(np.percentile(array, 99))}


def recall(found: list[np.ndarray], truth: list[np.ndarray]) -> float:
    return float(np.mean([len(set(f[:4]) & set(t[:4])) / 4.0 for f, t in zip(found, truth, strict=True)]))


def indexes(vectors: np.ndarray, queries: np.ndarray) -> dict[str, object]:
    import faiss

    size, dim = vectors.shape
    flat = faiss.IndexFlatIP(dim)
    start = time.perf_counter()
    flat.add(vectors)
    flat_build = time.perf_counter() - start
    truth, flat_latency = latency(lambda q: flat.search(q, 4), queries)
    rows: dict[str, object] = {"exact": {"build_s": flat_build, **flat_latency, "recall_at_4": 1.0}}
    hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 80
    start = time.perf_counter()
    hnsw.add(vectors)
    hnsw_build = time.perf_counter() - start
    for ef in (64, 128):
        hnsw.hnsw.efSearch = ef
        found, timing = latency(lambda q: hnsw.search(q, 4), queries)
        rows[f"hnsw_m32_ef{ef}"] = {"build_s": hnsw_build, **timing, "recall_at_4": recall(found, truth)}
    nlist = int(4 * np.sqrt(size))
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    start = time.perf_counter()
    ivf.train(vectors)
    ivf.add(vectors)
    ivf_build = time.perf_counter() - start
    for probes in (8, 32):
        ivf.nprobe = probes
        found, timing = latency(lambda q: ivf.search(q, 4), queries)
        rows[f"ivf{nlist}_nprobe{probes}"] = {"build_s": ivf_build, **timing, "recall_at_4": recall(found, truth)}
    return rows


def service_search(texts: list[str], vectors: np.ndarray, queries: list[str]) -> dict[str, float]:
    """p50/p99 of the search endpoint of a real server over an agent holding ``texts``."""
    from common import UNIVERSE, new_key
    from live_server import Server
    from sqlalchemy import insert

    from service.client import MemtrialClient
    from service.db import make_engine
    from service.migrations import upgrade
    from service.models import Experience

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/retrieval.db"
        upgrade(url)
        key = new_key(url, "retrieval")
        server = Server(url, workers=1)
        try:
            with MemtrialClient(server.url, key) as client:
                agent_id = client.create_agent("library", "balanced", UNIVERSE)["id"]
                engine = make_engine(url)
                now = dt.datetime.now(dt.UTC)
                with engine.begin() as connection:
                    for start in range(0, len(texts), 10_000):
                        connection.execute(
                            insert(Experience.__table__),
                            [
                                {
                                    "id": f"{i:032x}",
                                    "agent_id": agent_id,
                                    "text": texts[i],
                                    "metadata": "{}",
                                    "embedding": vectors[i].tobytes(),
                                    "active": True,
                                    "created_at": now,
                                    "updated_at": now,
                                }
                                for i in range(start, min(start + 10_000, len(texts)))
                            ],
                        )
                    connection.exec_driver_sql("UPDATE agents SET index_version = index_version + 1")
                engine.dispose()
                start_build = time.perf_counter()
                client.search_experiences(agent_id, "the first query builds the index", k=4)
                build = time.perf_counter() - start_build
                timings = []
                for query in queries:
                    start = time.perf_counter()
                    client.search_experiences(agent_id, query, k=4)
                    timings.append(time.perf_counter() - start)
        finally:
            server.stop()
    array = np.array(timings) * 1000.0
    return {
        "experiences": len(texts),
        "first_search_with_index_build_s": build,
        "p50_ms": float(np.percentile(array, 50)),
        "p99_ms": float(np.percentile(array, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "retrieval.json")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--service-queries", type=int, default=200)
    parser.add_argument(
        "--cache",
        type=pathlib.Path,
        default=pathlib.Path.home() / ".cache" / "memtrial" / "bench-embeddings",
        help="folder where embeddings are kept between runs ('' to always embed)",
    )
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(1)
    os.environ.setdefault("MEMTRIAL_TORCH_THREADS", str(os.cpu_count() or 1))
    sizes = [int(s) for s in args.sizes.split(",")]
    start = time.perf_counter()
    texts = sentences(max(sizes) + args.queries, seed=0)
    vectors = embed(texts, args.cache if str(args.cache) not in ("", ".") else None)
    embedding_seconds = time.perf_counter() - start
    corpus, corpus_texts = vectors[: max(sizes)], texts[: max(sizes)]
    queries, query_texts = vectors[max(sizes) :], texts[max(sizes) :]
    rows = []
    for size in sizes:
        measured = indexes(corpus[:size], queries)
        rows.append({"experiences": size, "indexes": measured})
        print(
            json.dumps(
                {
                    "experiences": size,
                    **{name: (round(v["p50_ms"], 3), round(v["recall_at_4"], 4)) for name, v in measured.items()},
                }
            ),
            flush=True,
        )  # type: ignore[index]
    service = service_search(corpus_texts, corpus, query_texts[: args.service_queries])
    print("service", json.dumps(service), flush=True)
    result = {
        "benchmark": "retrieval on MiniLM embeddings of generated lessons",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "queries": args.queries,
        "embedding_seconds": embedding_seconds,
        "rows": rows,
        "service": service,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = ["| experiences | index | build (s) | p50 (ms) | p99 (ms) | recall@4 |", "|---:|---|---:|---:|---:|---:|"]
    for row in rows:
        for name, value in row["indexes"].items():  # type: ignore[attr-defined]
            lines.append(
                f"| {row['experiences']} | {name} | {value['build_s']:.2f} | {value['p50_ms']:.3f} | {value['p99_ms']:.3f} | {value['recall_at_4']:.4f} |"
            )
    lines.append("")
    lines.append(
        f"Service search at {service['experiences']} experiences (query embedding included, HNSW): p50 {service['p50_ms']:.1f} ms, "
        f"p99 {service['p99_ms']:.1f} ms; first search with the index build {service['first_search_with_index_build_s']:.1f} s."
    )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
