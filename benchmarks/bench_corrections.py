"""Correction cost against an agent's age: one of the last 100 decisions and the oldest, at 200, 1,000 and 5,000.

One agent (4 assets, 12 experiences, the default ``auto`` learner) plans a
decision a day and settles each five days later, so five plans always await
their score. At each age (settled decisions) a correction replaces the
outcome of the newest settled decision, the 50th and the 100th newest, and
the oldest; each is timed ``--repeats`` times (alternating two outcomes, so
every one is a real correction) and the median reported, with the log
entries the replay read (from the last state checkpoint before the corrected
score, or from the first entry).

- ``engine``: the core's :meth:`MemTrial.correct` on an in-memory history;
- ``service``: ``POST .../corrections`` against a real server on 127.0.0.1
  (1 worker; SQLite, and PostgreSQL with ``--postgres``), request round trip;
  then ``--concurrent`` corrections of one agent's newest decisions sent at
  once (no client retries): how many answered 200, ``agent_busy`` or
  ``database_unavailable``.

    python benchmarks/bench_corrections.py --postgres postgresql://postgres@127.0.0.1:5432/test --out benchmarks/results/corrections.json

``--postgres`` resets that database's public schema.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")

sys.path.insert(0, str(ROOT / "benchmarks"))

from common import UNIVERSE, new_key, reset_postgres  # noqa: E402
from live_server import Server  # noqa: E402

from memtrial import MemTrial  # noqa: E402
from memtrial.engine.history import InMemoryHistory  # noqa: E402
from service.client import MemtrialClient, ServiceError  # noqa: E402
from service.migrations import upgrade  # noqa: E402

LAG = 5  # a decision settles five days after its plan
N_EXPERIENCES = 12
START = dt.datetime(2000, 1, 3, 21, 0, tzinfo=dt.UTC)
TARGETS = {"newest": 1, "50th newest": 50, "100th newest": 100, "oldest": None}


class ReplayHistory(InMemoryHistory):
    """An in-memory history that remembers where the last replay started."""

    def __init__(self) -> None:
        super().__init__()
        self.replay_start = 0

    def log_events(self, start: int = 0) -> Iterable[tuple[int, str, str]]:
        self.replay_start = start
        return super().log_events(start)


def prices(t: int) -> np.ndarray:
    rng = np.random.default_rng(t)
    return np.cumprod(1 + rng.normal([0.0004, 0.0001, 0.0, 0.00005], 0.01, size=(1, 4)), axis=0)


def returns(t: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(t)
    return {a["asset"]: rng.normal(0.0003, 0.01, size=1).tolist() for a in UNIVERSE}


def retrieved(t: int, ids: list[str]) -> list[str]:
    return [ids[(t + j * 5) % len(ids)] for j in range(4)]


def drafts_for(subsets: Iterable[tuple[str, ...]], t: int) -> np.ndarray:
    rows = []
    for subset in subsets:
        lean = 0.04 * sum(1 for e in subset if int(e[1:]) % 3 == t % 3)
        rows.append([0.25 + lean, 0.25, 0.25 - lean, 0.25])
    return np.array(rows)


def median_ms(samples: list[float]) -> float:
    return 1000.0 * statistics.median(samples)


def target_index(age: int, back: int | None) -> int:
    return 0 if back is None else age - back


# -- the engine ------------------------------------------------------------------------------
def engine_rows(ages: list[int], repeats: int) -> list[dict[str, object]]:
    engine = MemTrial(gamma=2.0, history=ReplayHistory())
    rng = np.random.default_rng(0)
    ids = [f"e{i}" for i in range(N_EXPERIENCES)]
    for experience in ids:
        engine.add_experience(experience, rng.normal(size=16))
    history = engine.history
    assert isinstance(history, ReplayHistory)
    rows: list[dict[str, object]] = []
    planned = settled = 0
    for age in ages:
        while settled < age:
            while planned < settled + LAG + 1:
                plan = engine.plan(
                    f"d{planned}", 2 * planned, 2 * (planned + LAG), retrieved=retrieved(planned, ids), n_assets=4
                )
                engine.decide(plan.decision_id, drafts_for(plan.subsets, planned))  # type: ignore[arg-type]
                planned += 1
            engine.settle(f"d{settled}", prices(settled), at=2 * (settled + LAG))
            settled += 1
        for name, back in TARGETS.items():
            t = target_index(age, back)
            samples = []
            for repeat in range(repeats):
                factor = 1.01 if repeat % 2 == 0 else 1.0
                begin = time.perf_counter()
                engine.correct(f"d{t}", rel_prices=prices(t) * factor, reason="benchmark")
                samples.append(time.perf_counter() - begin)
            rows.append(
                {
                    "age": age,
                    "corrected": name,
                    "median_ms": median_ms(samples),
                    "max_ms": 1000.0 * max(samples),
                    "log_entries": engine.gate.log.length,
                    "replayed_entries": engine.gate.log.length - 1 - history.replay_start,
                    "checkpoints": len(history.checkpoints),
                }
            )
            if repeats % 2:  # leave the right outcome in place
                engine.correct(f"d{t}", rel_prices=prices(t), reason="benchmark")
        print(f"  engine: age {age} measured", flush=True)
    return rows


# -- the service -----------------------------------------------------------------------------
def timed(call: Callable[[], object]) -> float:
    begin = time.perf_counter()
    call()
    return time.perf_counter() - begin


def concurrent_corrections(
    client: MemtrialClient, agent_id: str, decision_ids: list[str], count: int
) -> dict[str, object]:
    """``count`` corrections of different decisions sent at once; the answers by code and the wall time."""
    answers: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(count)

    def one(decision_id: str, t: int) -> None:
        barrier.wait()
        try:
            client.correct(
                agent_id,
                decision_id,
                returns={a: [v * 1.5 for v in r] for a, r in returns(t).items()},
                reason="at once",
            )
            code = "200"
        except ServiceError as error:
            code = f"{error.status} {error.code}"
        with lock:
            answers.append(code)

    chosen = decision_ids[-count:]
    threads = [threading.Thread(target=one, args=(d, len(decision_ids) - count + i)) for i, d in enumerate(chosen)]
    begin = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - begin
    return {"sent": count, "answers": {code: answers.count(code) for code in sorted(set(answers))}, "wall_s": wall}


def service_rows(url: str, ages: list[int], repeats: int, concurrent: int) -> dict[str, object]:
    server = Server(url, workers=1)
    rows: list[dict[str, object]] = []
    try:
        key = new_key(url, "corrections")
        with MemtrialClient(server.url, key) as client, MemtrialClient(server.url, key, retries=0) as bare:
            agent_id = client.create_agent("corrected", "balanced", UNIVERSE, gate={"test": "anytime"})["id"]
            client.add_experiences(
                agent_id, [f"lesson {i}: class {i % 4} in regime {i % 5}" for i in range(N_EXPERIENCES)]
            )
            ids = [e["id"] for e in client.list_experiences(agent_id, limit=100)["items"]]
            decision_ids: list[str] = []
            planned = settled = 0
            started = time.perf_counter()
            for age in ages:
                while settled < age:
                    while planned < settled + LAG + 1:
                        when = START + dt.timedelta(days=planned)
                        plan = client.create_decision(
                            agent_id,
                            when,
                            when + dt.timedelta(days=LAG),
                            f"day {planned}",
                            horizon=1,
                            retrieved_ids=retrieved(planned, ids),
                        )
                        lean = [0.04 * (len(s["experience_ids"]) % 3) for s in plan["subsets"]]
                        client.submit_drafts(
                            agent_id,
                            plan["decision_id"],
                            [{"SPY": 0.25 + x, "TLT": 0.25, "GLD": 0.25 - x, "BIL": 0.25} for x in lean],
                        )
                        decision_ids.append(plan["decision_id"])
                        planned += 1
                    client.settle(agent_id, decision_ids[settled], returns=returns(settled))
                    settled += 1
                    if settled % 500 == 0:
                        print(
                            f"  {url.split(':')[0]}: {settled} settled in {time.perf_counter() - started:.0f} s",
                            flush=True,
                        )
                for name, back in TARGETS.items():
                    t = target_index(age, back)
                    samples = []
                    for repeat in range(repeats):
                        factor = 1.5 if repeat % 2 == 0 else 1.0
                        given = {a: [v * factor for v in r] for a, r in returns(t).items()}
                        samples.append(
                            timed(
                                lambda t=t, given=given: client.correct(
                                    agent_id, decision_ids[t], returns=given, reason="benchmark"
                                )
                            )
                        )
                    rows.append(
                        {
                            "age": age,
                            "corrected": name,
                            "median_ms": median_ms(samples),
                            "max_ms": 1000.0 * max(samples),
                        }
                    )
            at_once = concurrent_corrections(bare, agent_id, decision_ids[:settled], concurrent) if concurrent else None
            assert client.verify(agent_id)["ok"]
    finally:
        server.stop()
    return {"rows": rows, "concurrent": at_once}


def table(rows: list[dict[str, object]], extra: tuple[str, ...]) -> list[str]:
    header = "| age (settled decisions) | corrected | median (ms) | max (ms) |" + "".join(
        f" {name.replace('_', ' ')} |" for name in extra
    )
    lines = [header, "|---:|---|---:|---:|" + "---:|" * len(extra)]
    for row in rows:
        cells = "".join(f" {row[name]} |" for name in extra)
        lines.append(f"| {row['age']} | {row['corrected']} | {row['median_ms']:.1f} | {row['max_ms']:.1f} |{cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "corrections.json")
    parser.add_argument("--ages", default="200,1000,5000", help="settled decisions at each measurement")
    parser.add_argument("--service-ages", default="200,1000,5000", help="the same for the service ('' to skip)")
    parser.add_argument("--repeats", type=int, default=3, help="corrections timed per target")
    parser.add_argument("--concurrent", type=int, default=20, help="corrections sent at once at the last service age")
    parser.add_argument(
        "--postgres", default=None, help="also run the service on this PostgreSQL URL (its public schema is reset)"
    )
    args = parser.parse_args()
    ages = [int(x) for x in args.ages.split(",")]
    service_ages = [int(x) for x in args.service_ages.split(",") if x]
    if any(age <= 100 for age in ages + service_ages):
        parser.error("every age must exceed 100 (the 100th newest decision is corrected)")
    result: dict[str, object] = {
        "benchmark": "correction cost against an agent's age",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "repeats": args.repeats,
        "engine": engine_rows(ages, args.repeats),
        "service": {},
    }
    if service_ages:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{folder}/corrections.db"
            upgrade(url)
            result["service"]["sqlite"] = service_rows(url, service_ages, args.repeats, args.concurrent)  # type: ignore[index]
        if args.postgres:
            result["service"]["postgresql"] = service_rows(  # type: ignore[index]
                reset_postgres(args.postgres), service_ages, args.repeats, args.concurrent
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"Engine (in-memory history), median of {args.repeats} corrections; the replay starts at the last checkpoint before the corrected score.",
        "",
        *table(result["engine"], ("log_entries", "replayed_entries", "checkpoints")),  # type: ignore[arg-type]
    ]
    for name, block in result["service"].items():  # type: ignore[attr-defined]
        lines += [
            "",
            f"Service on {name}, request round trip, median of {args.repeats}.",
            "",
            *table(block["rows"], ()),
        ]
        if block["concurrent"] is not None:
            at_once = block["concurrent"]
            answers = ", ".join(f"{count} x {code}" for code, count in at_once["answers"].items())
            lines.append("")
            lines.append(
                f"{at_once['sent']} corrections of one agent sent at once: {answers}; all answered in {at_once['wall_s']:.2f} s."
            )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
