"""Two ``memtrial serve`` replicas on one PostgreSQL: whatever is written through one is read the same through
the other, concurrent settles spread over both apply once, idempotency keys and rate limits hold across them."""

import datetime as dt
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from live_server import Server
from sqlalchemy import func, select
from support import POSTGRES_URL, UNIVERSE, make_tenant, reset_postgres

from service.client import MemtrialClient
from service.db import make_engine, make_session_factory, transaction
from service.migrations import upgrade
from service.models import Contribution, LogRow

pytestmark = pytest.mark.slow  # two live servers on PostgreSQL

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = [
    "Long bonds rallied when the central bank cut rates.",
    "Equities fell after a surprise inflation print.",
    "Gold held up during a banking scare.",
    "Cash protected the book in a volatile month.",
    "Momentum in equities persisted for a quarter.",
]
RETURNS = {"SPY": [0.01, -0.004], "TLT": [-0.002, 0.003], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}


def draft(subset):
    tilt = 0.04 * len(subset.texts)
    return {"SPY": 0.3, "TLT": 0.3 + tilt, "GLD": 0.1, "BIL": 0.3 - tilt}


@pytest.fixture(scope="module")
def replicas():
    reset_postgres(POSTGRES_URL)
    upgrade(POSTGRES_URL)
    key = make_tenant(POSTGRES_URL, "replicas")
    first = Server(POSTGRES_URL)
    second = Server(POSTGRES_URL, migrate=False)
    try:
        yield key, first, second
    finally:
        first.stop()
        second.stop()


def count(model, agent_id):
    engine = make_engine(POSTGRES_URL)
    with transaction(make_session_factory(engine)) as session:
        found = session.scalar(select(func.count()).select_from(model).where(model.agent_id == agent_id))
    engine.dispose()
    return found


def test_what_one_replica_writes_the_other_reads_and_settles_spread_over_both_apply_once(replicas):
    key, first, second = replicas
    with MemtrialClient(first.url, key) as a, MemtrialClient(second.url, key) as b:
        agent = a.create_agent("fund", "balanced", UNIVERSE, action="dial", credit="raw", gate={"test": "anytime"})
        a.add_experiences(agent.id, LESSONS[:3])
        b.add_experiences(agent.id, LESSONS[3:])
        for client in (a, b):  # each replica finds what the other wrote
            hits = client.search_experiences(agent.id, "interest rate cuts and the bond market", k=5).hits
            assert {h.text for h in hits} == set(LESSONS)
        decisions = []
        for t in range(8):
            client = (a, b)[t % 2]
            when = START + dt.timedelta(days=30 * t)
            plan = client.create_decision(agent.id, when, when + dt.timedelta(days=7), "rates were cut", horizon=2)
            other = (b, a)[t % 2]
            other.submit_drafts(agent.id, plan.decision_id, [draft(s) for s in plan.subsets])
            decisions.append(plan.decision_id)

        def settle(job):
            client, decision_id = job
            return client.settle(agent.id, decision_id, returns=RETURNS).model_dump(mode="json")

        with ThreadPoolExecutor(16) as pool:  # every decision settled through both replicas at once
            answers = list(pool.map(settle, [(c, d) for d in decisions for c in (a, b)]))
        for i in range(0, len(answers), 2):
            assert answers[i] == answers[i + 1]
        assert count(Contribution, agent.id) == 8 * 4
        assert count(LogRow, agent.id) == 16  # a prediction and a score per decision, no more
        for read in ("values", "trust", "verify"):
            assert getattr(a, read)(agent.id) == getattr(b, read)(agent.id), read
        assert a.verify(agent.id).ok and a.verify(agent.id).n_entries == 16
        assert [d.decision_id for d in a.iter_decisions(agent.id)] == [
            d.decision_id for d in b.iter_decisions(agent.id)
        ]


def test_an_idempotency_key_holds_across_replicas(replicas):
    key, first, second = replicas
    body = {"name": "once", "investor": "balanced", "universe": UNIVERSE}
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "create-once-across-replicas"}
    made = httpx.post(f"{first.url}/v1/agents", json=body, headers=headers, timeout=30)
    again = httpx.post(f"{second.url}/v1/agents", json=body, headers=headers, timeout=30)
    assert made.status_code == again.status_code == 201 and made.json() == again.json()
    with MemtrialClient(second.url, key) as client:
        assert [x.id for x in client.iter_agents(name="once")] == [made.json()["id"]]


def test_rate_limits_count_the_requests_of_both_replicas_together(tmp_path):
    url = f"sqlite:///{tmp_path / 'limits.db'}"
    env = {"MEMTRIAL_RATE_LIMIT_PER_MINUTE": "20", "MEMTRIAL_PRELOAD_MODEL": "0"}
    first = Server(url, env=env, ready_path="/healthz")
    second = Server(url, env=env, ready_path="/healthz", migrate=False)
    try:
        key = make_tenant(url, "limited")
        headers = {"Authorization": f"Bearer {key}"}
        statuses = [
            httpx.get(f"{server.url}/v1/agents", headers=headers, timeout=30).status_code
            for _ in range(10)
            for server in (first, second)
        ]
        assert statuses == [200] * 20
        for server in (first, second):  # the 21st, through either, is over the key's limit
            over = httpx.get(f"{server.url}/v1/agents", headers=headers, timeout=30)
            assert over.status_code == 429 and int(over.headers["Retry-After"]) >= 1
    finally:
        first.stop()
        second.stop()
