"""Load: concurrent agent loops against a real server on 127.0.0.1, and server-side drafting overlap.

For each database (SQLite, PostgreSQL) and worker count (1, 2): ``--agents``
concurrent loops of plan -> drafts -> settle for ``--decisions`` decisions
each (bounded in count), measuring throughput, p50/p95/p99 latency per
endpoint, errors, and the peak resident memory of the server's processes.
Then one agent with a fake LLM that answers in 200 ms: the wall time of a
server-drafted decision against one LLM call (the eight drafts must overlap).

    python benchmarks/bench_load.py --out benchmarks/results/load.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np
import psutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")

sys.path.insert(0, str(ROOT / "benchmarks"))

from common import RETURNS, START, UNIVERSE, new_agent, new_key, reset_postgres, run_concurrently  # noqa: E402
from fake_llm import FakeLLM  # noqa: E402
from live_server import Server  # noqa: E402

from service.client import MemtrialClient, ServiceError  # noqa: E402
from service.migrations import upgrade  # noqa: E402


class MemoryWatch(threading.Thread):
    """Samples the resident memory of a process and its children every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process, self.peak, self.running = psutil.Process(pid), 0, True

    def run(self) -> None:
        while self.running:
            try:
                total = self.process.memory_info().rss + sum(
                    c.memory_info().rss for c in self.process.children(recursive=True)
                )
                self.peak = max(self.peak, total)
            except psutil.Error:
                pass
            time.sleep(0.2)


def load(url: str, workers: int, n_agents: int, n_decisions: int) -> dict[str, object]:
    server = Server(url, workers=workers)
    watch = MemoryWatch(server.process.pid)
    watch.start()
    timings: dict[str, list[float]] = {"plan": [], "drafts": [], "settle": []}
    errors = [0]
    lock = threading.Lock()
    try:
        key = new_key(url, f"load-{workers}-{time.time_ns()}")
        clients = [MemtrialClient(server.url, key) for _ in range(n_agents)]
        agents = [new_agent(client, 20) for client in clients]

        def loop(index: int) -> None:
            client, agent_id = clients[index], agents[index]
            for t in range(n_decisions):
                time_t = START + dt.timedelta(days=30 * t)
                try:
                    start = time.perf_counter()
                    plan = client.create_decision(
                        agent_id, time_t, time_t + dt.timedelta(days=28), f"month {t}", horizon=len(RETURNS["SPY"])
                    )
                    planned = time.perf_counter()
                    client.submit_drafts(
                        agent_id,
                        plan["decision_id"],
                        [{"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}] * len(plan["subsets"]),
                    )
                    drafted = time.perf_counter()
                    client.settle(agent_id, plan["decision_id"], returns=RETURNS)
                    settled = time.perf_counter()
                except ServiceError:
                    with lock:
                        errors[0] += 1
                    continue
                with lock:
                    timings["plan"].append(planned - start)
                    timings["drafts"].append(drafted - planned)
                    timings["settle"].append(settled - drafted)

        wall = run_concurrently(loop, n_agents)
        for client in clients:
            client.close()
    finally:
        watch.running = False
        server.stop()
    requests = 3 * sum(len(v) for v in timings.values()) // 3
    return {
        "workers": workers,
        "agents": n_agents,
        "requests": requests,
        "errors": errors[0],
        "seconds": wall,
        "requests_per_second": requests / wall,
        "peak_rss_mb": watch.peak / 2**20,
        "latency_ms": {
            name: {q: float(np.percentile(np.array(values) * 1000, int(q[1:]))) for q in ("p50", "p95", "p99")}
            for name, values in timings.items()
        },
    }


def server_drafting(url: str, n_decisions: int, folder: str) -> dict[str, float]:
    with FakeLLM(delay=0.2) as llm:
        config = pathlib.Path(folder) / "llm.json"
        config.write_text(json.dumps({"providers": {"fake": {"models": ["openai/fake"], "api_base": llm.api_base}}}))
        server = Server(url, workers=1, env={"MEMTRIAL_LLM_CONFIG": str(config)})
        try:
            return drafting_loop(server, llm, url, n_decisions)
        finally:
            server.stop()


def drafting_loop(server: Server, llm: FakeLLM, url: str, n_decisions: int) -> dict[str, float]:
    with MemtrialClient(server.url, new_key(url, "drafting")) as client:
        agent = client.create_agent("llm", "balanced", UNIVERSE, drafter={"provider": "fake", "model": "openai/fake"})
        client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(8)])
        walls = []
        for t in range(n_decisions + 1):
            time_t = START + dt.timedelta(days=30 * t)
            start = time.perf_counter()
            client.create_decision(agent["id"], time_t, time_t + dt.timedelta(days=28), f"month {t}", drafting="server")
            if t:  # the first call warms litellm up
                walls.append(time.perf_counter() - start)
        return {
            "llm_delay_s": 0.2,
            "drafts_per_decision": 8,
            "decision_p50_s": float(np.median(walls)),
            "max_in_flight": llm.max_in_flight,
            "calls": llm.calls,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "load.json")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="PostgreSQL URL (its public schema is reset); '' skips it",
    )
    args = parser.parse_args()
    result: dict[str, object] = {"benchmark": "load", "cpus": os.cpu_count(), "runs": []}
    with tempfile.TemporaryDirectory() as folder:
        for database in ("sqlite", "postgresql"):
            if database == "postgresql" and not args.postgres:
                continue
            for workers in (1, 2):
                if database == "sqlite":
                    url = f"sqlite:///{folder}/load-{workers}.db"
                    upgrade(url)
                else:
                    url = reset_postgres(args.postgres)
                run = {"database": database, **load(url, workers, args.agents, args.decisions)}
                result["runs"].append(run)  # type: ignore[attr-defined]
                print(json.dumps(run), flush=True)
        url = f"sqlite:///{folder}/drafting.db"
        upgrade(url)
        result["server_drafting"] = server_drafting(url, 5, folder)
        print(json.dumps(result["server_drafting"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| database | workers | requests/s | errors | peak RSS (MB) | plan p50/p95/p99 (ms) | drafts p50/p95/p99 | settle p50/p95/p99 |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for run in result["runs"]:  # type: ignore[attr-defined]
        cells = [
            " / ".join(f"{run['latency_ms'][name][q]:.0f}" for q in ("p50", "p95", "p99"))
            for name in ("plan", "drafts", "settle")
        ]
        lines.append(
            f"| {run['database']} | {run['workers']} | {run['requests_per_second']:.1f} | {run['errors']} | {run['peak_rss_mb']:.0f} | "
            + " | ".join(cells)
            + " |"
        )
    drafting = result["server_drafting"]
    lines.append(
        f"\nServer drafting with an LLM answering in 200 ms: a decision with 8 drafts takes {drafting['decision_p50_s']:.2f} s (median), "  # type: ignore[index]
        f"{drafting['max_in_flight']} drafts in flight at once."  # type: ignore[index]
    )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
