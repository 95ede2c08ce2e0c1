"""A worker serving many agents within its cache budget: resident memory, hot and cold plans, a reload.

The agents and their experiences are written straight into a SQLite database (random unit vectors
stand in for embeddings: the cache holds the same bytes whatever the vectors say, and embedding a
million lessons would take hours); each agent's engine state is what ``POST /v1/agents`` and adding its
experiences would have stored. Then ``memtrial serve`` (one worker) runs with ``MEMTRIAL_CACHE_MB`` and:

1. plans once on every agent, in order (each plan a cold one: the agent's engine and index are loaded
   from the database), reading the worker's resident memory every ``--every`` agents;
2. plans ``--plans`` times (200) on the agent served last (hot: both are in the cache);
3. plans once on each of ``--plans`` agents served at the start and evicted since (cold again).

The same sweep over ``--baseline-agents`` agents with a budget too large to evict anything, in the same
run, gives the memory an unbounded worker grows by per agent. Results: JSON and a Markdown table.

    python benchmarks/bench_cache.py --out benchmarks/results/cache.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import UNIVERSE, new_key, percentiles  # noqa: E402
from live_server import Server  # noqa: E402

from memtrial.engine.lifecycle import MemTrial  # noqa: E402
from service.client import MemtrialClient  # noqa: E402
from service.models import Agent, Experience, new_id  # noqa: E402
from service.schemas import AgentCreate  # noqa: E402

START = dt.datetime(2001, 1, 31, 21, 0, tzinfo=dt.UTC)


def populate(url: str, tenant_key: str, n_agents: int, n_experiences: int, seed: int = 0) -> list[str]:
    """Agents with ``n_experiences`` each, written directly (the rows the API would have written)."""
    from sqlalchemy import insert, select

    from service.db import make_engine
    from service.models import ApiKey
    from service.security import hash_key
    from service.usecases.agents import engine_config

    rng = np.random.default_rng(seed)
    body = AgentCreate(name="bench", investor="balanced", universe=UNIVERSE)  # type: ignore[arg-type]
    config, gate = engine_config(body)
    settings = body.model_dump(mode="json")
    settings["gate"] = gate.to_dict()
    engine = make_engine(url)
    with engine.begin() as connection:
        tenant_id = connection.execute(
            select(ApiKey.tenant_id).where(ApiKey.key_hash == hash_key(tenant_key))
        ).scalar_one()
    ids = []
    for start in range(0, n_agents, 200):
        agents, experiences = [], []
        for _ in range(start, min(n_agents, start + 200)):
            agent_id = new_id()
            memory = MemTrial(config)
            for _ in range(n_experiences):
                experience_id = new_id()
                vector = rng.normal(size=384).astype(np.float32)
                vector /= np.linalg.norm(vector)
                memory.add_experience(experience_id)
                experiences.append(
                    {
                        "id": experience_id,
                        "agent_id": agent_id,
                        "text": f"lesson {experience_id[-6:]}",
                        "metadata": {},
                        "embedding": vector.tobytes(),
                        "active": True,
                    }
                )
            agents.append(
                {
                    "id": agent_id,
                    "tenant_id": tenant_id,
                    "name": "bench",
                    "settings": settings,
                    "gate_hash": memory.gate_hash,
                    "state": memory.to_json(embeddings=False, history=False),
                    "state_version": 0,
                    "index_version": 1,
                }
            )
            ids.append(agent_id)
        with engine.begin() as connection:
            connection.execute(insert(Agent), agents)
            connection.execute(insert(Experience), experiences)
    engine.dispose()
    return ids


def rss_mb(pid: int) -> float:
    process = psutil.Process(pid)
    return (process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))) / 2**20


def plan(client: MemtrialClient, agent_id: str, step: int) -> float:
    when = START + dt.timedelta(days=step)
    began = time.perf_counter()
    client.create_decision(agent_id, when, when + dt.timedelta(days=7), "bonds after a rate cut", horizon=2)
    return time.perf_counter() - began


def sweep(
    folder: Path, n_agents: int, n_experiences: int, cache_mb: float, every: int, n_plans: int
) -> dict[str, object]:
    url = f"sqlite:///{folder / f'cache-{n_agents}-{cache_mb:g}.db'}"
    from service.migrations import upgrade

    upgrade(url)
    key = new_key(url, "bench")
    began = time.perf_counter()
    agents = populate(url, key, n_agents, n_experiences)
    setup = time.perf_counter() - began
    server = Server(url, env={"MEMTRIAL_CACHE_MB": str(cache_mb), "MEMTRIAL_LOG_LEVEL": "WARNING"})
    try:
        pid = server.process.pid
        with MemtrialClient(server.url, key, timeout=60) as client:
            for warm in range(3):  # the model's first calls, the routes' first use
                plan(client, agents[warm], 0)
            base = rss_mb(pid)
            curve, cold_sweep = [], []
            for i, agent_id in enumerate(agents):
                cold_sweep.append(plan(client, agent_id, 1))
                if (i + 1) % every == 0 or i + 1 == len(agents):
                    curve.append({"agents": i + 1, "rss_mb": rss_mb(pid)})
            hot = [plan(client, agents[-1], 2 + step) for step in range(n_plans)]
            cold = [plan(client, agent_id, 1000) for agent_id in agents[3 : 3 + n_plans]]
            metrics = client.metrics()
        final = rss_mb(pid)
    finally:
        server.stop()
    held = {
        line.split("{")[1].split('"')[1]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("memtrial_cache_bytes{")
    }
    evictions = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("memtrial_cache_evictions_total{")
    )
    hot_p, cold_p = percentiles(hot), percentiles(cold)
    return {
        "agents": n_agents,
        "experiences_per_agent": n_experiences,
        "cache_mb": cache_mb,
        "setup_seconds": setup,
        "rss_after_warm_up_mb": base,
        "rss_final_mb": final,
        "rss_growth_mb": final - base,
        "rss_growth_over_budget": (final - base) / cache_mb,
        "rss_curve": curve,
        "cache_bytes_held": held,
        "evictions": evictions,
        "sweep_plan": percentiles(cold_sweep),
        "hot_plan": hot_p,
        "cold_plan": cold_p,
        "reload_ms_p50": cold_p["p50_ms"] - hot_p["p50_ms"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--experiences", type=int, default=100)
    parser.add_argument("--cache-mb", type=float, default=64.0)
    parser.add_argument("--baseline-agents", type=int, default=1_000, help="agents of the unbounded sweep")
    parser.add_argument("--every", type=int, default=500, help="read the memory every this many agents")
    parser.add_argument("--plans", type=int, default=200, help="hot plans, and cold plans on agents evicted since")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cache.json")
    args = parser.parse_args()
    if not 1 <= args.plans <= args.agents - 3:  # the cold plans go to agents 3.. (the first three warm it up)
        parser.error(f"--plans must be in [1, agents - 3 = {args.agents - 3}], got {args.plans}")
    os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is not None:  # the service's embedder: exported before, not mid-run
        from memtrial.drafting.embeddings import OnnxEmbedder, configure_offline

        configure_offline()

        OnnxEmbedder().encode(["export"])
    with tempfile.TemporaryDirectory() as folder:
        bounded = sweep(Path(folder), args.agents, args.experiences, args.cache_mb, args.every, args.plans)
        unbounded = sweep(
            Path(folder), args.baseline_agents, args.experiences, 100_000.0, max(1, args.every // 5), args.plans
        )
    per_agent = unbounded["rss_growth_mb"] / args.baseline_agents  # type: ignore[operator]
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "embedder": "onnx" if importlib.util.find_spec("onnxruntime") is not None else "torch",
        "bounded": bounded,
        "unbounded": unbounded,
        "unbounded_mb_per_agent": per_agent,
        "unbounded_projection_mb": per_agent * args.agents,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    rows = [
        "| worker | agents | RSS growth (MB) | budget (MB) | cache holds (MB) | evictions | hot plan p50 / p99 (ms) | cold plan p50 / p99 (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, run in (("bounded", bounded), ("unbounded", unbounded)):
        held = sum(run["cache_bytes_held"].values()) / 2**20  # type: ignore[attr-defined]
        rows.append(
            f"| {name} | {run['agents']} | {run['rss_growth_mb']:.0f} | {run['cache_mb']:g} | {held:.1f} | {run['evictions']:.0f} | "
            f"{run['hot_plan']['p50_ms']:.1f} / {run['hot_plan']['p99_ms']:.1f} | {run['cold_plan']['p50_ms']:.1f} / {run['cold_plan']['p99_ms']:.1f} |"  # type: ignore[index]
        )
    rows.append("")
    rows.append(
        f"Unbounded, a worker grows by {per_agent:.2f} MB per agent of {args.experiences} experiences: "
        f"{per_agent * args.agents:.0f} MB for {args.agents} agents. Bounded at {args.cache_mb:g} MB, it grew by "
        f"{bounded['rss_growth_mb']:.0f} MB over {args.agents} agents; a reload (cold minus hot plan, p50) costs "
        f"{bounded['reload_ms_p50']:.1f} ms."
    )
    args.out.with_suffix(".md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
