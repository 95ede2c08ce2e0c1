"""Service: an unexpected error is logged once, without content, and counted; statement parameters never reach a message."""

import logging

import pytest


def test_an_unhandled_error_is_logged_once_without_content_and_counted(app, client, agent, caplog, monkeypatch):
    from fastapi.testclient import TestClient

    import service.usecases.experiences as experiences  # where listing renders each experience

    client.add_experience(agent["id"], "a private lesson text")

    def explode(row, engine, evidence=None):
        raise RuntimeError(f"leaking {row.text}")

    monkeypatch.setattr(experiences, "experience_public", explode)
    with (
        TestClient(app, raise_server_exceptions=False) as http,
        caplog.at_level(logging.INFO, logger="memtrial.service"),
    ):
        response = http.get(
            f"/v1/agents/{agent['id']}/experiences",
            headers={"Authorization": client._headers["Authorization"], "X-Request-ID": "probe-500"},
        )
        metrics = http.get("/metrics").text
    assert response.status_code == 500
    assert response.json()["error"] == {
        "code": "internal",
        "message": "internal error (request probe-500)",
        "field": None,
        "errors": [{"field": None, "message": "internal error (request probe-500)"}],
    }
    assert response.headers.get("x-request-id") == "probe-500"
    records = [r for r in caplog.records if getattr(r, "request_id", None) == "probe-500"]
    assert [r.getMessage() for r in records].count("unhandled error") == 1
    assert [(r.getMessage(), r.status) for r in records if r.getMessage() == "request"] == [("request", 500)]
    from service.logs import JsonFormatter

    logged = "\n".join(JsonFormatter().format(r) for r in records)
    assert (
        "a private lesson text" not in logged
        and "RuntimeError" in logged
        and "/v1/agents/{agent_id}/experiences" in logged
    )
    assert 'memtrial_unhandled_errors_total{route="/v1/agents/{agent_id}/experiences"}' in metrics
    assert 'memtrial_requests_total{method="GET",route="/v1/agents/{agent_id}/experiences",status="500"}' in metrics


def test_statement_parameters_never_reach_error_messages(database_url):
    from service.db import make_engine

    engine = make_engine(database_url)
    assert engine.hide_parameters is True
    engine.dispose()


def test_a_request_cancelled_before_its_answer_gets_json_503_and_one_cancelled_mid_answer_is_cut():
    """The ASGI server cancels what is still running when its grace period ends: a request with no answer
    started gets 503 server_stopping in JSON (its request id kept); one whose answer had started is left to end."""
    import asyncio
    import json

    from service.stopping import StoppingMiddleware

    async def served(answer_first: bool) -> tuple[list[dict], BaseException | None]:
        reached = asyncio.Event()

        async def app(scope, receive, send):
            scope.setdefault("state", {})["request_id"] = "probe-stop"
            if answer_first:
                await send({"type": "http.response.start", "status": 200, "headers": []})
            reached.set()
            await asyncio.Event().wait()  # a model that never answers

        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b""}

        task = asyncio.ensure_future(StoppingMiddleware(app)({"type": "http"}, receive, send))
        await reached.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as error:
            return sent, error
        return sent, None

    sent, raised = asyncio.run(served(answer_first=False))
    assert raised is None and [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    headers = dict(sent[0]["headers"])
    assert sent[0]["status"] == 503 and headers[b"retry-after"] == b"1" and headers[b"x-request-id"] == b"probe-stop"
    assert headers[b"content-type"] == b"application/json" and headers[b"connection"] == b"close"
    assert json.loads(sent[1]["body"])["error"]["code"] == "server_stopping"
    sent, raised = asyncio.run(served(answer_first=True))
    assert isinstance(raised, asyncio.CancelledError) and [m["status"] for m in sent] == [200]


def test_a_session_the_database_ended_is_an_outage_and_another_internal_error_is_counted(
    app, client, agent, monkeypatch
):
    """PostgreSQL's errors of the 'internal' class: a session it ended (idle in a transaction past the timeout the
    service sets, after the process stalled) was a 500; any other was a 500 missing from the unhandled count."""
    import psycopg
    from fastapi.testclient import TestClient
    from sqlalchemy.exc import InternalError

    import service.usecases.experiences as experiences

    client.add_experience(agent["id"], "a lesson")
    path, headers = f"/v1/agents/{agent['id']}/experiences", {"Authorization": client._headers["Authorization"]}
    answers = {}
    counted = 'memtrial_unhandled_errors_total{route="/v1/agents/{agent_id}/experiences"} '

    def unhandled(metrics: str) -> float:  # the process's count so far (other tests' errors included)
        return next((float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(counted)), 0.0)

    with TestClient(app, raise_server_exceptions=False) as http:
        before = unhandled(http.get("/metrics").text)
        for name, cause in (
            ("ended", psycopg.errors.IdleInTransactionSessionTimeout("terminating connection")),
            ("other", psycopg.errors.InternalError_("something else")),
        ):

            def fail(row, engine, evidence=None, cause=cause):
                raise InternalError("SELECT 1", {}, cause)

            monkeypatch.setattr(experiences, "experience_public", fail)
            answers[name] = http.get(path, headers={**headers, "X-Request-ID": f"probe-{name}"})
        metrics = http.get("/metrics").text
    assert answers["ended"].status_code == 503 and answers["ended"].json()["error"]["code"] == "database_unavailable"
    assert answers["other"].status_code == 500 and answers["other"].json()["error"]["code"] == "internal"
    assert [answers[name].headers.get("x-request-id") for name in ("ended", "other")] == ["probe-ended", "probe-other"]
    assert unhandled(metrics) == before + 1.0


def test_a_schema_older_than_the_release_is_a_503_saying_so_and_another_statement_error_a_500(
    app, client, agent, monkeypatch
):
    """A replica serving a database migrated down (a table or column missing) answered 500 'internal error'."""
    import psycopg
    from fastapi.testclient import TestClient
    from sqlalchemy.exc import ProgrammingError

    import service.usecases.experiences as experiences

    client.add_experience(agent["id"], "a lesson")
    path, headers = f"/v1/agents/{agent['id']}/experiences", {"Authorization": client._headers["Authorization"]}
    answers = {}
    with TestClient(app, raise_server_exceptions=False) as http:
        for name, cause in (
            ("table", psycopg.errors.UndefinedTable('relation "checkpoints" does not exist')),
            ("column", psycopg.errors.UndefinedColumn('column "external_id" does not exist')),
            ("other", psycopg.errors.SyntaxError("syntax error")),
        ):

            def fail(row, engine, evidence=None, cause=cause):
                raise ProgrammingError("SELECT 1", {}, cause)

            monkeypatch.setattr(experiences, "experience_public", fail)
            answers[name] = http.get(path, headers=headers)
    for name in ("table", "column"):
        error = answers[name].json()["error"]
        assert answers[name].status_code == 503 and error["code"] == "database_unavailable"
        assert f"the database's schema lacks a {name} this release needs" in error["message"]
    assert answers["other"].status_code == 500 and answers["other"].json()["error"]["code"] == "internal"


def test_a_path_or_method_the_service_lacks_is_named_in_the_refusal(http, client):
    headers = {"Authorization": client._headers["Authorization"]}
    missing = http.get("/v1/v1/agents", headers=headers)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert missing.json()["error"]["message"] == (
        "nothing at GET /v1/v1/agents on this service (its API: /docs and /openapi.json; "
        "an agent's dashboard: /dashboard/{agent_id})"
    )
    wrong = http.put("/v1/agents", headers=headers, json={})
    assert wrong.status_code == 405
    assert wrong.json()["error"]["message"] == "/v1/agents does not take PUT; it takes GET, HEAD, POST"
    # Allow names every method of the path (the router named the first matching route's alone: POST), HEAD with GET
    assert wrong.headers["Allow"] == "GET, HEAD, POST"
    one = http.put("/v1/agents/0123456789abcdef0123456789abcdef", headers=headers, json={})
    assert (one.status_code, one.headers["Allow"]) == (405, "DELETE, GET, HEAD, PATCH")
    # a path without GET takes no HEAD either
    settle = http.head("/v1/agents/0123456789abcdef0123456789abcdef/decisions/x/settle", headers=headers)
    assert (settle.status_code, settle.headers["Allow"], settle.content) == (405, "POST", b"")
    # a missing agent keeps its own words
    unknown = http.get("/v1/agents/no-such-agent", headers=headers)
    assert unknown.status_code == 404 and "nothing at" not in unknown.json()["error"]["message"]


def _as_sent(app, method, path, headers):
    """What the app sends the server for one request (status, headers, body bytes): the test client drops a
    HEAD's body itself, so a body the app sent would not show there."""
    import asyncio

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


def test_head_is_answered_wherever_get_is_with_the_gets_status_and_headers_and_no_body(
    app, http, client, agent, caplog
):
    """A load balancer's or an uptime monitor's ``HEAD /healthz`` was answered 405: HEAD is GET without the body."""
    from test_service_metrics import _sample

    key = {"Authorization": client._headers["Authorization"]}
    for path, headers in [
        ("/healthz", {}),
        ("/v1/agents", key),
        (f"/v1/agents/{agent['id']}", key),
        (f"/v1/agents/{agent['id']}/values", key),
        ("/v1/agents", {}),  # refused alike: 401, and its challenge
        ("/v1/agents/ag_0000000000000000000000000000000", key),  # 404
        ("/v1/agents/x/decisions/y/settle", key),  # a path without GET: 405, Allow: POST
        ("/openapi.json", {}),
        ("/docs", {}),
        ("/dashboard/x", {}),
    ]:
        status, sent, body = _as_sent(app, "GET", path, headers)
        head_status, head_sent, head_body = _as_sent(app, "HEAD", path, headers)
        assert head_status == status and head_body == b"" and len(body) > 0, path
        for name in ("content-type", "content-length", "www-authenticate", "allow"):
            assert head_sent.get(name) == sent.get(name), (path, name)
    assert http.head("/v1/agents", headers={}).status_code == 401
    # the request keeps its method in the log and in /metrics, its route with it
    caplog.set_level(logging.INFO, logger="memtrial.service")
    before = _sample(
        http.get("/metrics").text, "memtrial_requests_total", method="HEAD", route="/healthz", status="200"
    )
    http.head("/healthz", headers={"X-Request-ID": "head-check-1"})
    after = _sample(http.get("/metrics").text, "memtrial_requests_total", method="HEAD", route="/healthz", status="200")
    assert after == before + 1
    logged = [r for r in caplog.records if getattr(r, "request_id", None) == "head-check-1"]
    assert [(r.method, r.path, r.status) for r in logged if r.getMessage() == "request"] == [("HEAD", "/healthz", 200)]
    # a method the path lacks: Allow lists HEAD beside GET
    refused = http.delete("/healthz")
    assert (refused.status_code, refused.headers["Allow"]) == (405, "GET, HEAD")
    assert refused.json()["error"]["message"] == "/healthz does not take DELETE; it takes GET, HEAD"


@pytest.mark.slow  # a server in this process, its failure logged
def test_a_head_whose_get_fails_is_answered_500_without_a_body_on_the_wire(tmp_path, monkeypatch, caplog):
    """A HEAD whose GET raised went out as the error layer's 500 with its body: the request's scope still read
    GET there, so the server sent the body, which HTTP/1.1 allows no HEAD answer (h11 refused it mid-answer)."""
    import http.client
    import socket
    import threading

    import uvicorn
    from support import make_tenant, wait_until

    import service.usecases.agents as agents
    from service.app import create_app
    from service.migrations import upgrade
    from service.server import GuardedH11Protocol
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'fails.db'}"
    upgrade(url)
    key = make_tenant(url, "acme")

    def fails(*args, **kwargs):
        raise RuntimeError("a defect in reading the agent")

    monkeypatch.setattr(agents, "read", fails)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(Settings(database_url=url, preload_model=False))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, http=GuardedH11Protocol, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    caplog.set_level(logging.ERROR)
    thread.start()
    try:
        wait_until(lambda: server.started, 30, "the server's start")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("HEAD", "/v1/agents/ag_1", headers={"Authorization": f"Bearer {key}"})
            answer = connection.getresponse()
            assert answer.status == 500 and answer.read() == b""
        finally:
            connection.close()
    finally:
        server.should_exit = True
        thread.join(10)
    failures = [r for r in caplog.records if r.exc_info]
    chained = []
    for record in failures:
        error = record.exc_info[1]
        while error is not None:
            chained.append(type(error).__name__)
            error = error.__context__ or error.__cause__
    assert "RuntimeError" in chained and "LocalProtocolError" not in chained, chained


@pytest.mark.slow  # a server process
def test_head_through_a_real_server_sends_no_body_and_the_connection_serves_the_next_request(tmp_path):
    """On the wire: uvicorn's HTTP/1.1 takes no body after a HEAD's headers; a body there would break the
    connection (or be read as the next answer) where the test client cannot tell."""
    import http.client

    from live_server import Server

    server = Server(f"sqlite:///{tmp_path / 'head.db'}", ready_path="/healthz")
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("HEAD", "/healthz")
        head = connection.getresponse()
        assert head.status == 200 and head.read() == b""
        length = int(head.getheader("content-length"))
        connection.request("GET", "/healthz")  # the same connection
        got = connection.getresponse()
        body = got.read()
        assert got.status == 200 and len(body) == length > 0
    finally:
        connection.close()
        server.stop()
