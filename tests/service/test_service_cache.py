"""A worker's engines and indexes live within one byte budget (MEMTRIAL_CACHE_MB), least recently used
evicted first, and an evicted agent is reloaded from the database as it was."""

import datetime as dt

import pytest
from support import UNIVERSE, make_tenant

from service.cache import ByteBudget, engine_bytes, index_bytes
from service.client import MemtrialClient

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}
RETURNS = {"SPY": [0.01, -0.004], "TLT": [-0.002, 0.003], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}


def test_the_budget_evicts_the_least_recently_used_first():
    budget = ByteBudget(100)
    budget.put("engine", "a", "A", 40)
    budget.put("index", "a", "a-index", 30)
    budget.put("engine", "b", "B", 20)
    assert budget.get("engine", "a") == "A"  # a is now the most recently used engine
    budget.put("engine", "c", "C", 30)  # 120 > 100: the oldest, a's index, goes
    assert ("index", "a") not in budget and budget.bytes == 90
    assert [budget.peek("engine", k) for k in "abc"] == ["A", "B", "C"]
    budget.put("engine", "huge", "H", 101)  # larger than the whole budget: not kept, nothing else lost
    assert ("engine", "huge") not in budget and budget.bytes == 90
    budget.resize("engine", "b", 50)  # b grows: the least recently used (a) goes to make room
    assert ("engine", "a") not in budget and budget.bytes == 80
    assert budget.pop("engine", "b") == "B" and budget.bytes == 30 and budget.pop("engine", "b") is None


def test_estimates_grow_with_what_is_held():
    assert engine_bytes(100) - engine_bytes(0) == 100 * 3_500
    assert index_bytes(100, True) > index_bytes(100, False) > index_bytes(0, False)


@pytest.fixture
def small(database_url):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    budget_mb = 3 * (engine_bytes(40) + index_bytes(40, False)) / 2**20  # room for about three agents
    app = create_app(Settings(database_url=database_url, cache_mb=budget_mb))
    with TestClient(app) as http:
        yield app, MemtrialClient(api_key=make_tenant(database_url, "cache"), http=http)


def test_a_small_budget_holds_few_agents_and_an_evicted_one_plans_as_before(small):
    app, client = small
    services = app.state.services
    agents = []
    for a in range(8):
        agent = client.create_agent(f"agent-{a}", "balanced", UNIVERSE)
        client.add_experiences(agent.id, [f"lesson {i} of agent {a}: bonds after cut {i}" for i in range(40)])
        plan = client.create_decision(agent.id, START, START + dt.timedelta(days=7), "bonds after a cut", horizon=2)
        client.submit_drafts(agent.id, plan.decision_id, [DRAFT] * len(plan.subsets))
        client.settle(agent.id, plan.decision_id, returns=RETURNS)
        agents.append((agent, plan, client.values(agent.id)))
        assert services.engines.budget.bytes <= services.engines.budget.budget
    budget = services.engines.budget
    first = agents[0][0].id
    assert ("engine", first) not in budget and ("index", first) not in budget  # evicted long ago
    agent, plan, values = agents[0]
    assert client.values(agent.id) == values  # reloaded from the database as it was
    later = START + dt.timedelta(days=30)
    again = client.create_decision(agent.id, later, later + dt.timedelta(days=7), "bonds after a cut", horizon=2)
    assert [r.id for r in again.retrieved] == [r.id for r in plan.retrieved]  # the rebuilt index finds the same
    assert ("engine", first) in budget and ("index", first) in budget
    metrics = client.metrics()
    for series in ("memtrial_cache_hits_total", "memtrial_cache_misses_total", "memtrial_cache_evictions_total"):
        assert f'{series}{{cache="engine"}}' in metrics and f'{series}{{cache="index"}}' in metrics
    assert 'memtrial_cache_bytes{cache="engine"}' in metrics and "memtrial_cache_budget_bytes" in metrics
