"""Service reliability: concurrent settles and decisions, a lost database, a killed server."""

import datetime as dt
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from live_server import Server
from sqlalchemy import text
from sqlalchemy.engine import make_url
from support import POSTGRES_URL, UNIVERSE, make_tenant, reset_postgres

from service.client import MemtrialClient, ServiceError
from service.db import make_engine
from service.migrations import upgrade

pytestmark = pytest.mark.slow  # live servers killed and restarted: the slow tier

START = dt.datetime(2022, 1, 31, 21, 0, tzinfo=dt.UTC)
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}
RETURNS = {"SPY": [0.01, -0.004], "TLT": [0.002, 0.001], "GLD": [-0.001, 0.003], "BIL": [0.0001, 0.0001]}


@pytest.fixture
def live(database_url):
    """A live server with 2 workers on each kind of migrated database."""
    key = make_tenant(database_url, "reliability")
    server = Server(database_url, workers=2)
    yield database_url, key, server
    server.stop()


def planned_and_drafted(client, agent_id, t):
    time = START + dt.timedelta(days=30 * t)
    plan = client.create_decision(agent_id, time, time + dt.timedelta(days=28), f"month {t}", horizon=2)
    client.submit_drafts(agent_id, plan["decision_id"], [DRAFT] * len(plan["subsets"]))
    return plan["decision_id"]


def count(url, sql, **params):
    engine = make_engine(url)
    with engine.connect() as connection:
        value = connection.execute(text(sql), params).scalar_one()
    engine.dispose()
    return value


def test_fifty_concurrent_identical_settles_apply_exactly_once(live):
    url, key, server = live
    setup = MemtrialClient(server.url, key)
    agent = setup.create_agent("busy", "balanced", UNIVERSE)
    setup.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(6)])
    decision_id = planned_and_drafted(setup, agent["id"], 0)
    clients = [MemtrialClient(server.url, key) for _ in range(10)]

    def settle(i):
        return clients[i % 10].settle(agent["id"], decision_id, returns=RETURNS)

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(settle, range(50)))
    assert all(answer == answers[0] for answer in answers)
    assert count(url, "SELECT count(*) FROM contributions WHERE decision_id = :d", d=decision_id) == 4
    log = list(setup.iter_log(agent["id"]))
    assert [entry["kind"] for entry in log].count("score") == 1
    assert setup.verify(agent["id"])["ok"]
    for client in [setup, *clients]:
        client.close()


def test_fifty_concurrent_decisions_across_agents_lose_no_update(live):
    url, key, server = live
    setup = MemtrialClient(server.url, key)
    agents = [setup.create_agent(f"agent-{i}", "balanced", UNIVERSE)["id"] for i in range(5)]
    for agent_id in agents:
        setup.add_experiences(agent_id, [{"text": f"lesson {i} of {agent_id}"} for i in range(5)])
    clients = [MemtrialClient(server.url, key) for _ in range(5)]

    def loop(index):
        agent_id = agents[index]
        for t in range(10):
            decision_id = planned_and_drafted(clients[index], agent_id, t)
            clients[index].settle(agent_id, decision_id, returns=RETURNS)

    with ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(loop, range(5)))
    for agent_id in agents:
        assert count(url, "SELECT count(*) FROM decisions WHERE agent_id = :a AND status = 'settled'", a=agent_id) == 10
        log = list(setup.iter_log(agent_id))
        assert [entry["kind"] for entry in log].count("prediction") == 10
        assert setup.verify(agent_id)["ok"]
    for client in [setup, *clients]:
        client.close()


def test_a_server_killed_mid_burst_restarts_with_every_acknowledged_settle_applied_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    upgrade(url)
    key = make_tenant(url, "kill")
    server = Server(url, workers=1)
    client = MemtrialClient(server.url, key)
    agent = client.create_agent("fund", "balanced", UNIVERSE)
    client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(5)])
    decisions = [planned_and_drafted(client, agent["id"], t) for t in range(12)]
    acknowledged: list[str] = []
    lock = threading.Lock()

    def settle(decision_id):
        try:
            with MemtrialClient(server.url, key, timeout=10) as burst:
                burst.settle(agent["id"], decision_id, returns=RETURNS)
        except Exception:  # the server may die under it: only acknowledged settles count
            return
        with lock:
            acknowledged.append(decision_id)

    threads = [threading.Thread(target=settle, args=(d,)) for d in decisions]
    for thread in threads[:6]:
        thread.start()
    for thread in threads[:6]:
        thread.join()
    for thread in threads[6:]:
        thread.start()
    os.kill(server.process.pid, signal.SIGKILL)
    for thread in threads[6:]:
        thread.join()
    server.stop()
    client.close()
    restarted = Server(url, workers=1)
    try:
        again = MemtrialClient(restarted.url, key)
        for decision_id in decisions:
            body = again.get_decision(agent["id"], decision_id)
            rows = count(url, "SELECT count(*) FROM contributions WHERE decision_id = :d", d=decision_id)
            if body["status"] == "settled":
                assert rows == 4, decision_id
            else:
                assert rows == 0 and decision_id not in acknowledged, decision_id
        assert len(acknowledged) >= 6
        assert again.verify(agent["id"])["ok"]
        remaining = [d for d in decisions if again.get_decision(agent["id"], d)["status"] != "settled"]
        for decision_id in remaining:
            again.settle(agent["id"], decision_id, returns=RETURNS)
        assert count(url, "SELECT count(*) FROM contributions") == 4 * len(decisions)
        again.close()
    finally:
        restarted.stop()


def test_a_lost_database_answers_503_and_the_service_recovers(tmp_path):
    from fastapi.testclient import TestClient
    from tcp_proxy import TcpProxy

    from service.app import create_app
    from service.settings import Settings

    reset_postgres(POSTGRES_URL)
    upgrade(POSTGRES_URL)
    key = make_tenant(POSTGRES_URL, "outage")
    target = make_url(POSTGRES_URL)  # the test database MEMTRIAL_TEST_POSTGRES_URL names, reached through a proxy
    proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432)
    url = target.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    try:
        with TestClient(create_app(Settings(database_url=url))) as http:
            client = MemtrialClient(api_key=key, http=http)
            agent = client.create_agent("fund", "balanced", UNIVERSE)
            proxy.cut()
            with pytest.raises(ServiceError) as error:
                client.get_agent(agent["id"])
            assert (error.value.status, error.value.code) == (503, "database_unavailable")
            assert http.get("/readyz").status_code == 503
            proxy.restore()
            assert client.get_agent(agent["id"])["id"] == agent["id"]
            assert http.get("/readyz").status_code == 200
    finally:
        proxy.close()


VALID_BODIES = {
    ("patch", "/v1/agents/{agent_id}"): {"name": "renamed"},
    ("post", "/v1/agents/{agent_id}/experiences"): {"text": "x"},
    ("post", "/v1/agents/{agent_id}/experiences/search"): {"query": "x"},
    ("patch", "/v1/agents/{agent_id}/experiences/{experience_id}"): {"metadata": {}},
    ("post", "/v1/agents/{agent_id}/decisions"): {
        "decision_time": "2022-01-31T21:00:00Z",
        "maturity": "2022-02-28T21:00:00Z",
        "context_text": "x",
    },
    ("post", "/v1/agents/{agent_id}/decisions/{decision_id}/drafts"): {"drafts": [DRAFT]},
    ("post", "/v1/agents/{agent_id}/decisions/{decision_id}/settle"): {"returns": RETURNS},
    ("post", "/v1/agents/{agent_id}/decisions/{decision_id}/corrections"): {
        "returns": RETURNS,
        "reason": "the feed was wrong",
    },
    ("post", "/v1/agents/{agent_id}/refit"): {"method": "svi"},
    ("post", "/v1/agents/{agent_id}/experiences/rank"): {"candidate_external_ids": ["x"], "k": 1},
    ("post", "/v1/agents/{agent_id}/experiences/{experience_id}/release"): {"reason": "reviewed"},
}


def test_no_endpoint_reads_or_writes_another_tenants_agent(app, http, client, database_url):
    """Every operation of the OpenAPI schema under an agent answers 404 to another tenant."""
    agent = client.create_agent("private", "balanced", UNIVERSE)
    experience = client.add_experience(agent["id"], "a private lesson")
    decision_id = planned_and_drafted(client, agent["id"], 0)
    other = {"Authorization": f"Bearer {make_tenant(database_url, 'intruder')}"}
    ids = {"agent_id": agent["id"], "experience_id": experience["id"], "decision_id": decision_id, "job_id": "none"}
    checked = 0
    for path, operations in app.openapi()["paths"].items():
        if "{agent_id}" not in path:
            continue
        for method in operations:
            body = VALID_BODIES.get((method, path))
            response = http.request(method.upper(), path.format(**ids), json=body, headers=other)
            assert response.status_code == 404, (method, path, response.status_code, response.text)
            assert response.json()["error"]["message"] == f"agent {agent['id']!r} not found", (method, path)
            checked += 1
    assert checked >= 15
    assert client.get_experience(agent["id"], experience["id"])["text"] == "a private lesson"
    assert client.get_agent(agent["id"])["name"] == "private"
    assert client.get_decision(agent["id"], decision_id)["status"] == "decided"


@pytest.mark.slow  # loads the torch model
def test_a_service_whose_onnx_path_falls_back_to_torch_says_so_once_at_start(caplog):
    """Ready all the same, on torch: it said nothing, so an operator could not tell why embedding was slower."""
    pytest.importorskip("onnxruntime", reason="the embedding extra is not installed")
    import logging
    from pathlib import Path

    from memtrial.drafting.embeddings import OnnxEmbedder, get_embedder
    from service.app import _preload

    embedder = OnnxEmbedder(cache_dir=Path("/proc/memtrial-no-such-folder"), fallback=get_embedder("torch"))
    with caplog.at_level(logging.WARNING, logger="memtrial.service"):
        _preload(embedder)
    assert embedder.load_error is None and embedder.loaded and embedder.fell_back is not None
    warned = [r for r in caplog.records if "the ONNX Runtime path could not load" in r.getMessage()]
    assert len(warned) == 1 and warned[0].error == embedder.fell_back
