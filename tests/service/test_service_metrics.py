"""Service: ``/metrics`` labels come from fixed sets, and one scrape adds up every worker of a server."""

import pytest


def test_made_up_methods_and_paths_do_not_grow_metrics(http):
    before = len(http.get("/metrics").text)
    for i in range(50):
        http.request(f"FAKE{i}", f"/nowhere/{i}")
        http.get(f"/no/such/path/{i}")
    text = http.get("/metrics").text
    assert "FAKE" not in text and "/no/such" not in text
    assert len(text) < before + 5_000


def _sample(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0  # a counter's labelled child appears at its first count


def test_the_database_pool_shows_its_connections_and_a_checkout_timeout_is_counted(database_url):
    """An operator sees the pool fill before requests fail: /metrics showed no database figure at all, so a
    worker whose every connection was held answered 503s with nothing to say why."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    app = create_app(Settings(database_url=database_url, db_pool_timeout=1, preload_model=False))
    with TestClient(app) as http:
        engine = app.state.services.sessions.kw["bind"]
        before = http.get("/metrics").text
        assert _sample(before, "memtrial_db_pool_size") == engine.pool.size() > 0
        held = [engine.connect() for _ in range(engine.pool.size() + engine.pool._max_overflow)]
        try:
            full = http.get("/metrics").text
            assert _sample(full, "memtrial_db_pool_connections", state="in_use") == len(held)
            assert _sample(full, "memtrial_db_pool_overflow") == engine.pool._max_overflow
            timeouts = _sample(full, "memtrial_database_errors_total", kind="pool_timeout")
            answer = http.get("/v1/agents", headers={"Authorization": "Bearer mt_nobody"})
            assert (answer.status_code, answer.json()["error"]["code"]) == (503, "database_unavailable")
            after = http.get("/metrics").text
            assert _sample(after, "memtrial_database_errors_total", kind="pool_timeout") == timeouts + 1
        finally:
            for connection in held:
                connection.close()
        idle = http.get("/metrics").text
        assert _sample(idle, "memtrial_db_pool_connections", state="in_use") == 0
        assert _sample(idle, "memtrial_db_pool_connections", state="idle") >= engine.pool.size()


@pytest.mark.slow  # a live server with two workers
def test_one_scrape_adds_up_every_worker_of_a_server(tmp_path):
    """With --workers 2 each scrape was answered by one worker with its own counters (19, then 2, 2, 2 for twenty
    requests): every scrape adds them up, and the folder the workers kept them in goes with the server."""
    import re

    import httpx
    from live_server import Server

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"MEMTRIAL_PRELOAD_MODEL": "0", "TMPDIR": str(temporary)}
    server = Server(f"sqlite:///{tmp_path / 'two.db'}", workers=2, env=env)
    try:
        assert len(list(temporary.glob("memtrial-metrics-*"))) == 1
        for _ in range(20):  # a connection each: the two workers take them as they come
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        counts = []
        for _ in range(6):
            text = httpx.get(f"{server.url}/metrics", timeout=10).text
            found = re.search(r'memtrial_requests_total\{method="GET",route="/healthz",status="200"\} (\S+)', text)
            counts.append(float(found.group(1)) if found else None)
        assert counts == [20.0] * 6, counts
        assert "memtrial_db_pool_size" in text
    finally:
        output = server.stop()
    assert "Traceback" not in output, output[-2000:]
    assert not list(temporary.glob("memtrial-metrics-*"))
