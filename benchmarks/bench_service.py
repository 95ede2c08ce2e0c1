"""Request cost over an agent's life: plan, drafts and settle after 20, 1,000 and 5,000 settled decisions.

One agent (4 assets, 12 experiences) loops plan -> drafts -> settle, one
decision a day, against a real server on 127.0.0.1 (1 worker, LLM excluded:
drafts come from the client), on SQLite and on PostgreSQL. Every request is
timed; the report gives p50/p99 of each request over the ``--window``
decisions that follow each checkpoint, the ratio of the last checkpoint to
the first, and:

- the query embedding's share of plan: p50 of encoding one context text with
  the same model in this process (1 thread), divided by plan's p50;
- bytes written per decision, read back from the rows each decision wrote
  (its decision row, log entries and contribution rows, plus the agent state
  written twice: at plan and at settle), averaged per window;
- the agent's state size at each checkpoint.

    python benchmarks/bench_service.py --postgres postgresql://postgres@127.0.0.1:5432/test --out benchmarks/results/service.json

``--postgres`` resets that database's public schema. ``--vacuum`` runs ``VACUUM ANALYZE`` on it before
each measured window: the upkeep autovacuum does on a default PostgreSQL (a server with autovacuum off,
as on the reference machine, otherwise keeps every dead row version of the updated decision rows).
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
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")

sys.path.insert(0, str(ROOT / "benchmarks"))

from common import UNIVERSE, new_key, percentiles, reset_postgres  # noqa: E402
from live_server import Server  # noqa: E402
from sqlalchemy import bindparam, text  # noqa: E402

from service.client import MemtrialClient  # noqa: E402
from service.db import make_engine  # noqa: E402
from service.migrations import upgrade  # noqa: E402

START = dt.datetime(2000, 1, 3, 21, 0, tzinfo=dt.UTC)
REQUESTS = ("plan", "drafts", "settle")


def context(t: int) -> str:
    return f"day {t}: equities {'rallied' if t % 3 else 'fell'}, rates {'rose' if t % 5 else 'eased'}, volatility {'high' if t % 2 else 'low'}"


def returns(t: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(t)
    return {a["asset"]: rng.normal(0.0003, 0.01, size=1).tolist() for a in UNIVERSE}


def bytes_written(url: str, agent_id: str, first: int, count: int, state_bytes: int) -> float:
    """Mean bytes of the rows each decision in [first, first + count) wrote, plus two state writes."""
    engine = make_engine(url)
    length = "length" if url.startswith("sqlite") else "octet_length"
    columns = ["request", "plan", "decision", "settlement", "engine_plan", "engine_decision", "engine_settlement"]
    total_row = " + ".join(f"coalesce({length}(CAST({c} AS TEXT)), 0)" for c in columns)
    with engine.connect() as connection:
        decisions = connection.execute(
            text(f"SELECT id, {total_row} FROM decisions WHERE agent_id = :a ORDER BY seq LIMIT :n OFFSET :o"),
            {"a": agent_id, "n": count, "o": first},
        ).all()
        ids = [row[0] for row in decisions]
        rows = sum(int(row[1]) for row in decisions)
        logs = connection.execute(
            text(
                f"SELECT coalesce(sum({length}(payload) + 2 * 64 + 40), 0) FROM log_entries WHERE agent_id = :a AND decision_id IN :ids"
            ).bindparams(bindparam("ids", expanding=True)),
            {"a": agent_id, "ids": ids},
        ).scalar_one()
        contributions = connection.execute(
            text("SELECT count(*) FROM contributions WHERE agent_id = :a AND decision_id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            ),
            {"a": agent_id, "ids": ids},
        ).scalar_one()
    engine.dispose()
    contribution_bytes = 32 + 32 + 32 + 8 + 8 + 8 + 8  # two ids, agent id, time, two floats, seq
    return (rows + int(logs) + int(contributions) * contribution_bytes) / len(ids) + 2 * state_bytes


def state_size(url: str, agent_id: str) -> int:
    engine = make_engine(url)
    with engine.connect() as connection:
        size = int(
            connection.execute(text("SELECT length(state) FROM agents WHERE id = :a"), {"a": agent_id}).scalar_one()
        )
    engine.dispose()
    return size


def vacuum(url: str) -> None:
    """VACUUM ANALYZE every table of a PostgreSQL database (what autovacuum would have done by now)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("VACUUM ANALYZE"))
    engine.dispose()


def agent_life(url: str, checkpoints: list[int], window: int, upkeep: bool = False) -> dict[str, object]:
    server = Server(url, workers=1)
    timings: dict[str, list[float]] = {name: [] for name in REQUESTS}
    result: dict[str, object] = {}
    try:
        with MemtrialClient(server.url, new_key(url, "life")) as client:
            agent_id = client.create_agent("long-lived", "balanced", UNIVERSE, gate={"test": "anytime"})["id"]
            client.add_experiences(
                agent_id,
                [
                    {"text": f"lesson {i}: class {i % 4} did {'well' if i % 3 else 'badly'} in regime {i % 5}"}
                    for i in range(12)
                ],
            )
            total = checkpoints[-1] + window
            sizes = {}
            started = time.perf_counter()
            for t in range(total):
                if t in checkpoints:
                    sizes[t] = state_size(url, agent_id)
                    if upkeep:
                        vacuum(url)
                time_t = START + dt.timedelta(days=t)
                begin = time.perf_counter()
                plan = client.create_decision(agent_id, time_t, time_t + dt.timedelta(hours=20), context(t), horizon=1)
                planned = time.perf_counter()
                drafts = [
                    {
                        "SPY": 0.2 + 0.05 * len(s["experience_ids"]),
                        "TLT": 0.3,
                        "GLD": 0.3 - 0.05 * len(s["experience_ids"]),
                        "BIL": 0.2,
                    }
                    for s in plan["subsets"]
                ]
                client.submit_drafts(agent_id, plan["decision_id"], drafts)
                drafted = time.perf_counter()
                client.settle(agent_id, plan["decision_id"], returns=returns(t))
                settled = time.perf_counter()
                for name, value in zip(REQUESTS, (planned - begin, drafted - planned, settled - drafted), strict=True):
                    timings[name].append(value)
                if t % 500 == 0:
                    print(f"  {url.split(':')[0]}: {t} decisions in {time.perf_counter() - started:.0f} s", flush=True)
            assert client.verify(agent_id)["ok"]
    finally:
        server.stop()
    windows = {}
    for checkpoint in checkpoints:
        windows[str(checkpoint)] = {
            **{name: percentiles(timings[name][checkpoint : checkpoint + window]) for name in REQUESTS},
            "state_bytes": sizes[checkpoint],
            "bytes_written_per_decision": bytes_written(url, agent_id, checkpoint, window, sizes[checkpoint]),
        }
    first, last = str(checkpoints[0]), str(checkpoints[-1])
    result["checkpoints"] = windows
    result["last_over_first_p50"] = {
        name: windows[last][name]["p50_ms"] / windows[first][name]["p50_ms"] for name in REQUESTS
    }  # type: ignore[index]
    result["last_over_first_p99"] = {
        name: windows[last][name]["p99_ms"] / windows[first][name]["p99_ms"] for name in REQUESTS
    }  # type: ignore[index]
    return result


def embedding_cost(samples: int) -> dict[str, float]:
    from memtrial.drafting.embeddings import configure_offline, get_embedder

    configure_offline()

    embedder = get_embedder()
    embedder.encode(["warm-up"])
    timings = []
    for t in range(samples):
        start = time.perf_counter()
        embedder.encode([context(t)])
        timings.append(time.perf_counter() - start)
    return percentiles(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "service.json")
    parser.add_argument("--checkpoints", default="20,1000,5000", help="settled decisions before each measured window")
    parser.add_argument("--window", type=int, default=200, help="decisions measured after each checkpoint")
    parser.add_argument("--postgres", default=None, help="also run on this PostgreSQL URL (its public schema is reset)")
    parser.add_argument(
        "--vacuum",
        action="store_true",
        help="VACUUM ANALYZE the PostgreSQL database before each window (autovacuum's upkeep)",
    )
    args = parser.parse_args()
    checkpoints = [int(x) for x in args.checkpoints.split(",")]
    result: dict[str, object] = {
        "benchmark": "request cost over an agent's life",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "window": args.window,
        "databases": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/life.db"
        upgrade(url)
        result["databases"]["sqlite"] = agent_life(url, checkpoints, args.window)  # type: ignore[index]
    if args.postgres:
        result["databases"]["postgresql"] = agent_life(
            reset_postgres(args.postgres), checkpoints, args.window, upkeep=args.vacuum
        )  # type: ignore[index]
        result["postgresql_vacuum_before_each_window"] = args.vacuum
    embedding = embedding_cost(args.window)
    result["query_embedding"] = embedding
    for life in result["databases"].values():  # type: ignore[attr-defined]
        plan_p50 = life["checkpoints"][str(checkpoints[-1])]["plan"]["p50_ms"]
        life["embedding_share_of_plan_p50"] = embedding["p50_ms"] / plan_p50
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"Window: {args.window} decisions after each checkpoint; one agent, 4 assets, 12 experiences, 1 worker. "
        f"Query embedding alone: p50 {embedding['p50_ms']:.1f} ms."
        + (
            " PostgreSQL: VACUUM ANALYZE before each window (autovacuum's upkeep; the reference machine's server runs with autovacuum off)."
            if args.vacuum and args.postgres
            else ""
        ),
        "",
        "| database | settled before | plan p50 / p99 (ms) | drafts p50 / p99 (ms) | settle p50 / p99 (ms) | bytes written per decision | state bytes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, life in result["databases"].items():  # type: ignore[attr-defined]
        for checkpoint, row in life["checkpoints"].items():
            cells = " | ".join(f"{row[r]['p50_ms']:.1f} / {row[r]['p99_ms']:.1f}" for r in REQUESTS)
            lines.append(
                f"| {name} | {checkpoint} | {cells} | {row['bytes_written_per_decision']:.0f} | {row['state_bytes']} |"
            )
    lines.append("")
    lines.append(
        f"| database | ratio {checkpoints[-1]} / {checkpoints[0]} (p50) | plan | drafts | settle | embedding share of plan p50 |"
    )
    lines.append("|---|---|---:|---:|---:|---:|")
    for name, life in result["databases"].items():  # type: ignore[attr-defined]
        ratio = life["last_over_first_p50"]
        lines.append(
            f"| {name} | | {ratio['plan']:.2f} | {ratio['drafts']:.2f} | {ratio['settle']:.2f} | {life['embedding_share_of_plan_p50']:.0%} |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
