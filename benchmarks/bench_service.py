"""Service overhead, throughput and retrieval latency, against a real server on 127.0.0.1.

Measured (LLM time excluded: drafts come from the client):
- ``overhead``: p50/p99 latency of plan (POST decisions), drafts and settle for a
  sequence of decisions of one agent with 50 experiences, 1 worker, SQLite;
- ``throughput``: requests per second of N concurrent agent loops (plan ->
  drafts -> settle), with 1 worker and with 2 workers, and their ratio, in the
  same run (SQLite; also PostgreSQL with ``--postgres URL``);
- ``retrieval``: an agent with 100,000 experiences (random unit vectors written
  straight into the database): time for a worker to build its FAISS index, then
  p50/p99 of the search endpoint (query embedding included).

    python benchmarks/bench_service.py --out benchmarks/results/service.json
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
import threading
import time
from collections.abc import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")

from live_server import Server  # noqa: E402

from service.client import MemtrialClient  # noqa: E402
from service.db import make_engine, make_session_factory, transaction  # noqa: E402
from service.migrations import upgrade  # noqa: E402
from service.tenancy import create_tenant_with_key  # noqa: E402

UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]
START = dt.datetime(2000, 1, 31, 21, 0, tzinfo=dt.UTC)
RETURNS = {"SPY": [0.01, -0.003], "TLT": [0.002, 0.001], "GLD": [-0.001, 0.002], "BIL": [0.0001, 0.0001]}


def percentiles(samples: list[float]) -> dict[str, float]:
    array = np.array(samples) * 1000.0
    return {"p50_ms": float(np.percentile(array, 50)), "p99_ms": float(np.percentile(array, 99)), "n": len(samples)}


def new_key(url: str, name: str) -> str:
    engine = make_engine(url)
    with transaction(make_session_factory(engine)) as session:
        _, key = create_tenant_with_key(session, name)
    engine.dispose()
    return key


def new_agent(client: MemtrialClient, n_experiences: int) -> str:
    agent = client.create_agent("bench", "balanced", UNIVERSE)
    client.add_experiences(agent["id"], [{"text": f"lesson {i}: regime {i % 7}, class {i % 4}, outcome {'good' if i % 3 else 'bad'}"} for i in range(n_experiences)])
    return str(agent["id"])


def decision_loop(client: MemtrialClient, agent_id: str, n_decisions: int, timings: dict[str, list[float]] | None, first: int = 0) -> int:
    """plan -> drafts -> settle for n monthly decisions from month ``first``; returns the number of requests."""
    for t in range(first, first + n_decisions):
        time_t = START + dt.timedelta(days=30 * t)
        start = time.perf_counter()
        plan = client.create_decision(agent_id, time_t, time_t + dt.timedelta(days=28), f"month {t}: markets {'up' if t % 2 else 'down'}")
        planned = time.perf_counter()
        drafts = [{"SPY": 0.2 + 0.05 * len(s["experience_ids"]), "TLT": 0.3, "GLD": 0.3 - 0.05 * len(s["experience_ids"]), "BIL": 0.2} for s in plan["subsets"]]
        client.submit_drafts(agent_id, plan["decision_id"], drafts)
        drafted = time.perf_counter()
        client.settle(agent_id, plan["decision_id"], returns=RETURNS)
        settled = time.perf_counter()
        if timings is not None:
            timings["plan"].append(planned - start)
            timings["drafts"].append(drafted - planned)
            timings["settle"].append(settled - drafted)
    return 3 * n_decisions


def overhead(url: str, n_decisions: int) -> dict[str, object]:
    server = Server(url, workers=1)
    try:
        with MemtrialClient(server.url, new_key(url, "overhead")) as client:
            agent_id = new_agent(client, 50)
            decision_loop(client, agent_id, 3, None)  # warm-up: model load, first compilation of paths
            timings: dict[str, list[float]] = {"plan": [], "drafts": [], "settle": []}
            decision_loop(client, agent_id, n_decisions, timings, first=3)
    finally:
        server.stop()
    return {name: percentiles(values) for name, values in timings.items()}


def run_concurrently(loop: Callable[[int], None], n_threads: int) -> float:
    """Run ``loop(0) .. loop(n - 1)`` in threads at once; the wall time in seconds."""
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(n_threads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def throughput(url: str, workers: int, n_agents: int, n_decisions: int) -> dict[str, float]:
    server = Server(url, workers=workers)
    try:
        key = new_key(url, f"throughput-{workers}")
        clients = [MemtrialClient(server.url, key) for _ in range(n_agents)]
        agents = [new_agent(client, 20) for client in clients]
        for client, agent_id in zip(clients, agents, strict=True):
            client.search_experiences(agent_id, "warm-up")
        counts = [0] * n_agents

        def loop(index: int) -> None:
            counts[index] = decision_loop(clients[index], agents[index], n_decisions, None)

        wall = run_concurrently(loop, n_agents)
        for client in clients:
            client.close()
    finally:
        server.stop()
    return {"workers": workers, "agents": n_agents, "requests": sum(counts), "seconds": wall, "requests_per_second": sum(counts) / wall}


def retrieval(url: str, n_experiences: int, n_queries: int) -> dict[str, object]:
    key = new_key(url, "retrieval")
    server = Server(url, workers=1)
    try:
        with MemtrialClient(server.url, key) as client:
            agent_id = client.create_agent("retrieval", "balanced", UNIVERSE)["id"]
            rng = np.random.default_rng(0)
            engine = make_engine(url)
            with engine.begin() as connection:
                vectors = rng.normal(size=(n_experiences, 384)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                now = dt.datetime.now(dt.UTC)
                rows = [
                    {"id": f"x{i:031d}", "agent_id": agent_id, "text": f"synthetic {i}", "metadata": "{}", "embedding": vectors[i].tobytes(), "active": True, "created_at": now, "updated_at": now}
                    for i in range(n_experiences)
                ]
                from sqlalchemy import insert

                from service.models import Experience

                connection.execute(insert(Experience.__table__), rows)
                connection.exec_driver_sql("UPDATE agents SET index_version = index_version + 1")
            engine.dispose()
            start = time.perf_counter()
            client.search_experiences(agent_id, "first query builds the index", k=4)
            build = time.perf_counter() - start
            samples = []
            for i in range(n_queries):
                start = time.perf_counter()
                client.search_experiences(agent_id, f"query {i} about bonds and rates", k=4)
                samples.append(time.perf_counter() - start)
    finally:
        server.stop()
    return {"experiences": n_experiences, "first_search_with_index_build_s": build, "search": percentiles(samples)}


def reset_postgres(url: str) -> str:
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA IF EXISTS public CASCADE")
        connection.exec_driver_sql("CREATE SCHEMA public")
    engine.dispose()
    upgrade(url)
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "service.json")
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--loop-decisions", type=int, default=25)
    parser.add_argument("--experiences", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--postgres", default=None, help="also measure throughput on this PostgreSQL URL (its public schema is reset)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        def database(name: str) -> str:
            url = f"sqlite:///{folder}/{name}.db"
            upgrade(url)
            return url

        result: dict[str, object] = {"benchmark": "service", "database": "sqlite", "machine": {"python": platform.python_version(), "cpus": os.cpu_count()}}
        result["overhead"] = overhead(database("overhead"), args.decisions)
        print("overhead", json.dumps(result["overhead"]), flush=True)
        one = throughput(database("one"), 1, args.agents, args.loop_decisions)
        two = throughput(database("two"), 2, args.agents, args.loop_decisions)
        result["throughput"] = {"one_worker": one, "two_workers": two, "two_over_one": two["requests_per_second"] / one["requests_per_second"]}
        print("throughput", json.dumps(result["throughput"]), flush=True)
        if args.postgres:
            one = throughput(reset_postgres(args.postgres), 1, args.agents, args.loop_decisions)
            two = throughput(reset_postgres(args.postgres), 2, args.agents, args.loop_decisions)
            result["throughput_postgresql"] = {"one_worker": one, "two_workers": two, "two_over_one": two["requests_per_second"] / one["requests_per_second"]}
            print("throughput_postgresql", json.dumps(result["throughput_postgresql"]), flush=True)
        result["retrieval"] = retrieval(database("retrieval"), args.experiences, args.queries)
        print("retrieval", json.dumps(result["retrieval"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    overhead_rows = "\n".join(f"| {name} | {v['p50_ms']:.1f} | {v['p99_ms']:.1f} |" for name, v in result["overhead"].items())  # type: ignore[union-attr]
    tp = result["throughput"]
    postgres_line = ""
    if "throughput_postgresql" in result:
        pg = result["throughput_postgresql"]
        postgres_line = f" PostgreSQL: {pg['one_worker']['requests_per_second']:.1f} requests/s with 1 worker, {pg['two_workers']['requests_per_second']:.1f} with 2 ({pg['two_over_one']:.2f}x)."  # type: ignore[index]
    rt = result["retrieval"]
    table = (
        "| request | p50 (ms) | p99 (ms) |\n|---|---:|---:|\n" + overhead_rows + "\n\n"
        f"| workers | requests/s |\n|---:|---:|\n| 1 | {tp['one_worker']['requests_per_second']:.1f} |\n| 2 | {tp['two_workers']['requests_per_second']:.1f} |\n\n"  # type: ignore[index]
        f"2 workers / 1 worker: {tp['two_over_one']:.2f}x (SQLite).{postgres_line} Search at {rt['experiences']} experiences: "  # type: ignore[index]
        f"p50 {rt['search']['p50_ms']:.1f} ms, p99 {rt['search']['p99_ms']:.1f} ms; first search with index build {rt['first_search_with_index_build_s']:.2f} s.\n"  # type: ignore[index]
    )
    args.out.with_suffix(".md").write_text(table)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
