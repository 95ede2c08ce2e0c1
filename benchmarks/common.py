"""What the service benchmarks share: the universe, tenants and agents, concurrency, percentiles, a clean PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

import numpy as np

from service.client import MemtrialClient
from service.db import make_engine, make_session_factory, transaction
from service.migrations import upgrade
from service.tenancy import create_tenant_with_key

UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]
START = dt.datetime(2000, 1, 31, 21, 0, tzinfo=dt.UTC)
RETURNS = {"SPY": [0.01, -0.003], "TLT": [0.002, 0.001], "GLD": [-0.001, 0.002], "BIL": [0.0001, 0.0001]}


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 in milliseconds of samples in seconds."""
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
    client.add_experiences(
        agent["id"],
        [
            {"text": f"lesson {i}: regime {i % 7}, class {i % 4}, outcome {'good' if i % 3 else 'bad'}"}
            for i in range(n_experiences)
        ],
    )
    return str(agent["id"])


def run_concurrently(loop: Callable[[int], None], n_threads: int) -> float:
    """Run ``loop(0) .. loop(n - 1)`` in threads at once; the wall time in seconds."""
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(n_threads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def reset_postgres(url: str) -> str:
    """Drop and recreate the public schema of ``url``, then migrate it."""
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA IF EXISTS public CASCADE")
        connection.exec_driver_sql("CREATE SCHEMA public")
    engine.dispose()
    upgrade(url)
    return url
