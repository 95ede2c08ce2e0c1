"""Faults: a database that never answers, a busy database, a killed supervisor, limits shared by workers, refit jobs."""

import contextlib
import datetime as dt
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from live_server import Server, free_port
from support import POSTGRES_URL, UNIVERSE, make_tenant, migrated_postgres, wait_until

from service.client import MemtrialClient, ServiceError
from service.migrations import upgrade

pytestmark = pytest.mark.slow  # fault injection belongs to the slow tier


class BlackHole:
    """A TCP server on 127.0.0.1 that accepts connections and never says a word."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.closed = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/test"

    def holds(self) -> int:
        """How many connections it holds (each one a database call stuck waiting for an answer)."""
        with self.lock:
            return len(self.held)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:  # a connection accepted while closing is closed at once, never left to the collector
                if self.closed:
                    connection.close()
                    return
                self.held.append(connection)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for connection in self.held:
                connection.close()
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def black_hole():
    hole = BlackHole()
    yield hole
    hole.close()


def test_a_database_that_never_answers_gives_503_in_bounded_time_and_healthz_still_answers(black_hole):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    settings = Settings(database_url=black_hole.url, db_connect_timeout=2, db_pool_timeout=1, preload_model=False)
    with TestClient(create_app(settings)) as http:
        headers = {"Authorization": "Bearer mt_anything"}

        def call(_):
            start = time.monotonic()
            response = http.get("/v1/agents", headers=headers)
            return response, time.monotonic() - start

        with ThreadPoolExecutor(max_workers=40) as pool:
            pending = [pool.submit(call, i) for i in range(40)]
            wait_until(black_hole.holds, 10, "a request reaching the silent database")
            health_start = time.monotonic()
            health = http.get("/healthz")
            health_seconds = time.monotonic() - health_start
            answers = [future.result() for future in pending]
        ready = http.get("/readyz")
    assert health.status_code == 200 and health_seconds < 1.0
    assert {response.status_code for response, _ in answers} == {503}
    assert all(response.headers["Retry-After"] == "5" for response, _ in answers)
    assert max(seconds for _, seconds in answers) < 2 + 1 + 10  # connect timeout, pool timeout, scheduling slack
    assert ready.status_code == 503


def test_a_server_on_a_silent_database_shuts_down_within_its_grace_period(black_hole):
    env = {"MEMTRIAL_DB_CONNECT_TIMEOUT": "2", "MEMTRIAL_SHUTDOWN_SECONDS": "3", "MEMTRIAL_PRELOAD_MODEL": "0"}
    server = Server(black_hole.url, env=env, ready_path="/healthz", migrate=False)
    try:
        before = black_hole.holds()

        def request() -> None:
            try:
                httpx.get(f"{server.url}/v1/agents", headers={"Authorization": "Bearer mt_x"}, timeout=30)
            except httpx.ConnectError:  # sent after the server stopped listening: only the shutdown's time is tested
                pass

        threads = [threading.Thread(target=request) for _ in range(5)]
        for thread in threads:
            thread.start()
        wait_until(lambda: black_hole.holds() > before, 10, "a request reaching the silent database")
        start = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=30)
        assert time.monotonic() - start < 3 + 2 + 5
        for thread in threads:
            thread.join()
    finally:
        server.stop()


def test_a_server_stopped_while_drafting_answers_json_503_and_a_retry_with_the_key_decides_after_restart(tmp_path):
    """SIGTERM while a server-drafted decision waits on its model: past the grace period the request is cancelled.
    Its client gets JSON (503 server_stopping, Retry-After, its request id), not the ASGI server's plain-text 500;
    the request is logged with that status; before the process ends the key is released and the plan withdrawn,
    so the same request with the same Idempotency-Key decides at once on the restarted server."""
    import json

    from fake_llm import FakeLLM

    url = f"sqlite:///{tmp_path / 'stopping.db'}"
    hold = threading.Event()  # the model answers nothing until the server has stopped
    with FakeLLM(hold=hold) as llm:
        config = tmp_path / "llm.json"
        config.write_text(json.dumps({"providers": {"fake": {"models": ["openai/fake"], "api_base": llm.api_base}}}))
        env = {"MEMTRIAL_LLM_CONFIG": str(config), "MEMTRIAL_SHUTDOWN_SECONDS": "1", "MEMTRIAL_PRELOAD_MODEL": "0"}
        server = Server(url, env=env, ready_path="/healthz")
        try:
            key = make_tenant(url, "stopping")
            with MemtrialClient(base_url=server.url, api_key=key) as client:
                drafter = {"provider": "fake", "model": "openai/fake"}
                agent = client.create_agent("llm", "balanced", UNIVERSE, drafter=drafter)
            start = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
            body = {
                "decision_time": start.isoformat(),
                "maturity": (start + dt.timedelta(days=28)).isoformat(),
                "context_text": "rates fell",
                "drafting": "server",
            }
            headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "stopped-once"}
            path = f"/v1/agents/{agent['id']}/decisions"
            with ThreadPoolExecutor(1) as pool:
                pending = pool.submit(httpx.post, f"{server.url}{path}", headers=headers, json=body, timeout=60)
                wait_until(lambda: llm.in_flight > 0, 60, "the server's first call to the model")
                server.process.send_signal(signal.SIGTERM)
                answer = pending.result(timeout=60)
            server.process.wait(timeout=30)
        finally:
            log = server.stop()
        assert answer.status_code == 503, answer.text
        assert answer.headers["content-type"] == "application/json" and answer.headers["Retry-After"] == "1"
        assert answer.json()["error"]["code"] == "server_stopping"
        request_id = answer.headers["X-Request-ID"]
        logged = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        assert any(r.get("request_id") == request_id and r.get("status") == 503 for r in logged), log[-2000:]
        hold.set()
        restarted = Server(url, env=env, ready_path="/healthz")
        try:
            retried = httpx.post(f"{restarted.url}{path}", headers=headers, json=body, timeout=60)
            listed = httpx.get(f"{restarted.url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()
        finally:
            restarted.stop()
    assert retried.status_code == 201 and retried.json()["status"] == "decided", retried.text
    statuses = {item["status"]: item for item in listed["items"]}
    assert set(statuses) == {"failed", "decided"}
    assert statuses["failed"]["failure"] == "the server stopped before deciding"


def test_a_sqlite_database_locked_by_another_writer_answers_agent_busy_after_the_busy_timeout(tmp_path):
    import sqlite3

    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    path = tmp_path / "busy.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    key = make_tenant(url, "busy")
    with TestClient(create_app(Settings(database_url=url, db_busy_timeout=0.5, auth_cache_seconds=5))) as http:
        client = MemtrialClient(api_key=key, http=http, retries=0)
        client.list_agents()  # the key is cached: the lock below only blocks the write
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            start = time.monotonic()
            with pytest.raises(ServiceError) as error:
                client.create_agent("blocked", "balanced", UNIVERSE)
            waited = time.monotonic() - start
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert client.create_agent("free again", "balanced", UNIVERSE)["name"] == "free again"
    assert (error.value.status, error.value.code) == (503, "agent_busy")
    assert waited < 0.5 + 5


def test_a_write_waiting_on_a_locked_agent_answers_agent_busy_with_retry_after_and_writes_nothing(database_url):
    import sqlite3

    from fastapi.testclient import TestClient
    from sqlalchemy import create_engine, text

    from service.app import create_app
    from service.db import normalise_url
    from service.settings import Settings

    key = make_tenant(database_url, "locked")
    settings = Settings(database_url=database_url, db_busy_timeout=0.5, db_lock_timeout=0.5, auth_cache_seconds=5)
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=key, http=http, retries=0)
        agent = client.create_agent("held", "balanced", UNIVERSE)
        headers = {"Authorization": client._headers["Authorization"]}
        body = {"text": "Bonds rallied on a rate cut."}
        if database_url.startswith("sqlite"):  # one writer at a time: another writer holds the database
            holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            release = lambda: (holder.execute("ROLLBACK"), holder.close())  # noqa: E731
        else:  # another transaction holds the agent's row, as a long correction does
            database = create_engine(normalise_url(database_url))
            connection = database.connect()
            connection.execute(text("SELECT id FROM agents WHERE id = :id FOR UPDATE"), {"id": agent["id"]})
            release = lambda: (connection.rollback(), connection.close(), database.dispose())  # noqa: E731
        try:
            answer = http.post(f"/v1/agents/{agent['id']}/experiences", json=body, headers=headers)
        finally:
            release()
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
        assert answer.json()["error"]["code"] == "agent_busy"
        assert "held this agent's write lock" in answer.json()["error"]["message"]
        assert client.list_experiences(agent["id"])["items"] == []  # nothing was written
        assert http.post(f"/v1/agents/{agent['id']}/experiences", json=body, headers=headers).status_code == 201
        paths = http.get("/openapi.json").json()["paths"]
        declared = paths["/v1/agents/{agent_id}/decisions/{decision_id}/corrections"]["post"]["responses"]["503"]
        assert "agent_busy" in declared["description"] and "database_unavailable" in declared["description"]


def test_workers_die_with_a_killed_supervisor_and_the_port_can_be_served_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'supervised.db'}"
    upgrade(url)
    port = free_port()
    server = Server(url, workers=2, port=port)
    try:
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{server.url}/healthz", timeout=0.5)
            except httpx.HTTPError:
                break
            time.sleep(0.3)
        else:
            pytest.fail("the workers went on serving after their supervisor was killed")
    finally:
        server.stop()
    again = Server(url, workers=1, port=port)
    try:
        assert httpx.get(f"{again.url}/healthz", timeout=5).json() == {"status": "ok"}
    finally:
        again.stop()


def test_rate_limits_count_across_workers_and_say_when_to_retry(tmp_path):
    url = f"sqlite:///{tmp_path / 'limited.db'}"
    upgrade(url)
    key = make_tenant(url, "limited")
    server = Server(
        url, workers=2, env={"MEMTRIAL_RATE_LIMIT_PER_MINUTE": "10", "MEMTRIAL_AUTH_FAILURES_PER_MINUTE": "5"}
    )
    try:
        statuses = []
        for _ in range(14):  # a new connection each time, so both workers take requests
            response = httpx.get(
                f"{server.url}/v1/agents", headers={"Authorization": f"Bearer {key}", "Connection": "close"}, timeout=10
            )
            statuses.append(response.status_code)
            last = response
        assert statuses.count(200) == 10 and statuses[10:] == [429] * 4
        # the exact wait: up to two minutes when the requests straddle a minute boundary (the sliding window)
        assert 1 <= int(last.headers["Retry-After"]) <= 121
        failures = [
            httpx.get(
                f"{server.url}/v1/agents",
                headers={"Authorization": "Bearer mt_wrong", "Connection": "close"},
                timeout=10,
            )
            for _ in range(7)
        ]
        assert [r.status_code for r in failures] == [401] * 5 + [429] * 2
        assert "Retry-After" in failures[-1].headers
    finally:
        server.stop()


def test_refit_jobs_are_bounded_queued_and_taken_up_again_when_their_server_stops(database_url, monkeypatch):
    from fastapi.testclient import TestClient

    import service.refits as refits
    from service.app import create_app
    from service.settings import Settings

    release = threading.Event()

    def blocked_fit(*_):
        release.wait(30)
        return "done", {"from": {"mean": 0.0}}, None

    monkeypatch.setattr(refits, "fit_records", blocked_fit)
    settings = Settings(database_url=database_url, refit_queue_size=1, refit_engine="threads")
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "refits"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        keyed = {"Authorization": client._headers["Authorization"], "Idempotency-Key": "refit-1"}
        sent = http.post(f"/v1/agents/{agent['id']}/refit", json={"method": "svi"}, headers=keyed)
        first = sent.json()
        assert sent.status_code == 202 and first["status"] == "queued"
        with pytest.raises(ServiceError) as error:
            client.start_refit(agent["id"], method="svi")
        assert (error.value.status, error.value.code) == (429, "queue_full")
        # a retry of the first (its answer lost) gets that answer, full queue or not
        again = http.post(f"/v1/agents/{agent['id']}/refit", json={"method": "svi"}, headers=keyed)
        assert again.status_code == 202 and again.json()["job_id"] == first["job_id"], again.text
        deadline = time.monotonic() + 10
        while client.get_refit(agent["id"], first["job_id"])["status"] != "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.get_refit(agent["id"], first["job_id"])["status"] == "running"
    # the server shut down while the job ran: it released the job, and the next server takes it up at once
    release.set()
    with TestClient(create_app(Settings(database_url=database_url, refit_engine="threads"))) as http:
        later = MemtrialClient(api_key=client._headers["Authorization"].split()[1], http=http)
        deadline = time.monotonic() + 20
        while later.get_refit(agent["id"], first["job_id"])["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.1)
        job = later.get_refit(agent["id"], first["job_id"])
    assert job["status"] == "done" and job["posterior"] == {"from": {"mean": 0.0}}


def test_a_refit_waiting_behind_another_is_kept_alive_by_its_server_and_runs(database_url, monkeypatch):
    """A job queued behind a running fit is not taken for one whose process died: the server that sent it
    refreshes its heartbeat while it waits, so it is neither sent again nor failed as 'interrupted'."""
    from fastapi.testclient import TestClient

    import service.refits as refits
    from service.app import create_app
    from service.settings import Settings

    release = threading.Event()

    def blocked_fit(*_):
        release.wait(30)
        return "done", {}, None

    monkeypatch.setattr(refits, "fit_records", blocked_fit)
    settings = Settings(database_url=database_url, refit_engine="threads", refit_stale_seconds=1.0)
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "waiting"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        first, second = (client.start_refit(agent["id"], method="svi") for _ in range(2))
        time.sleep(4.0)  # four stale periods: the waiting job would have been sent again three times and failed
        assert client.get_refit(agent["id"], second["job_id"])["status"] == "queued"
        release.set()

        def statuses():
            return [client.get_refit(agent["id"], job["job_id"])["status"] for job in (first, second)]

        wait_until(lambda: statuses() == ["done", "done"], 20, "both refits finishing")
        assert client.get_refit(agent["id"], second["job_id"])["error"] is None


def test_a_running_refit_whose_own_heartbeats_stop_is_kept_alive_by_its_server_while_its_run_lasts(
    database_url, monkeypatch
):
    """A run whose own heartbeats stopped reaching the database (its process starved of CPU, its writes refused)
    was taken for a dead one while it ran: sent again, each run superseding the last, until the job failed
    'interrupted'. The server that sent it knows its run is still held by its engine and keeps it alive; the job
    runs once and is done."""
    from fastapi.testclient import TestClient
    from sqlalchemy import select

    import service.jobs as jobs
    import service.refits as refits
    from service.app import create_app
    from service.db import make_engine, make_session_factory
    from service.models import RefitJob
    from service.settings import Settings

    runs = []

    def slow_fit(*_):
        runs.append(1)
        time.sleep(4.0)  # four stale periods
        return "done", {"e": {"mean": 0.0}}, None

    def silent(database_url, job_id, heartbeat, where):  # the run's own heartbeat: once an hour
        return refits.fit_job(database_url, job_id, 3600.0, where)

    monkeypatch.setattr(refits, "fit_records", slow_fit)
    monkeypatch.setattr(jobs, "fit_job", silent)
    settings = Settings(database_url=database_url, refit_engine="threads", refit_stale_seconds=1.0)
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "starved"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        job = client.start_refit(agent["id"], method="svi")
        wait_until(
            lambda: client.get_refit(agent["id"], job["job_id"])["status"] not in ("queued", "running"), 30, "the refit"
        )
        done = client.get_refit(agent["id"], job["job_id"])
    assert done["status"] == "done", done["error"]
    engine = make_engine(database_url)
    with make_session_factory(engine)() as session:
        attempts = session.execute(select(RefitJob.attempts).where(RefitJob.id == job["job_id"])).scalar_one()
    engine.dispose()
    assert (attempts, len(runs)) == (0, 1)  # never sent again


def test_a_refit_reaches_its_cluster_before_it_opens_the_write_transaction(database_url, monkeypatch):
    """Connecting to a scheduler takes up to 10 s; inside the write transaction (SQLite: the whole database's
    write lock) it held every other write of every tenant that long."""
    from fastapi.testclient import TestClient

    import service.refits as refits
    import service.usecases.refit as refit
    from service.app import create_app
    from service.jobs import ThreadEngine
    from service.settings import Settings

    writing, asked = [], []
    opened = refit.agent_write

    @contextlib.contextmanager
    def watched(*args, **kwargs):
        writing.append(True)
        try:
            with opened(*args, **kwargs) as unit:
                yield unit
        finally:
            writing.pop()

    def ready(self):
        asked.append(bool(writing))
        return None

    monkeypatch.setattr(refit, "agent_write", watched)
    monkeypatch.setattr(ThreadEngine, "ready", ready)
    monkeypatch.setattr(refits, "fit_records", lambda *_: ("done", {}, None))
    with TestClient(create_app(Settings(database_url=database_url, refit_engine="threads"))) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "connect"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        job = client.start_refit(agent["id"], method="svi")
        wait_until(lambda: client.get_refit(agent["id"], job["job_id"])["status"] == "done", 20, "the refit finishing")
    assert asked and asked[0] is False  # the first, slow, call: outside the transaction


def test_a_refit_whose_worker_cannot_run_it_fails_saying_why(database_url, monkeypatch):
    """A run that raises before it can write the job's row (a worker that cannot read the database) counts as a
    run: the job runs again at once, and fails after its last run naming what it raised, instead of waiting out
    three stale periods to read 'interrupted: the workers running the job stopped 3 times'."""
    from fastapi.testclient import TestClient

    import service.jobs as jobs
    from service.app import create_app
    from service.settings import Settings

    def unreadable(*_):
        raise RuntimeError("no such table: refit_jobs")

    monkeypatch.setattr(jobs, "fit_job", unreadable)
    settings = Settings(database_url=database_url, refit_engine="threads", refit_stale_seconds=1.0)
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "unrunnable"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        job = client.start_refit(agent["id"], method="svi")
        wait_until(lambda: client.get_refit(agent["id"], job["job_id"])["status"] == "failed", 20, "the refit failing")
        failed = client.get_refit(agent["id"], job["job_id"])
    assert failed["status"] == "failed"
    assert failed["error"] == (  # each run counted; the message (which may name the database) only in the log
        "the refit worker could not run the job: 3 runs raised RuntimeError before the fit (the worker's log has "
        "its message)"
    )


def test_a_relative_sqlite_path_is_sent_to_refit_workers_as_an_absolute_one(tmp_path, monkeypatch):
    from service.jobs import sendable_url

    monkeypatch.chdir(tmp_path)
    assert sendable_url("sqlite:///./memtrial.db") == f"sqlite:///{tmp_path / 'memtrial.db'}"
    assert sendable_url("sqlite:///data/m.db") == f"sqlite:///{tmp_path / 'data' / 'm.db'}"
    for kept in ("sqlite:////srv/m.db", "sqlite://", "sqlite:///:memory:", "postgresql+psycopg://u:p@h/db"):
        assert sendable_url(kept) == kept


def test_a_refit_that_cannot_be_sent_to_its_cluster_fails_at_once_saying_why(database_url, monkeypatch):
    """The scheduler was reachable when the job was queued, then went: the job fails at once, naming the
    cluster, instead of waiting out three reaper rounds as 'interrupted'."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.jobs import ThreadEngine
    from service.settings import Settings

    def gone(self, *_):
        raise OSError("Timed out trying to connect to tcp://10.0.0.9:8786 after 10 s")

    monkeypatch.setattr(ThreadEngine, "submit", gone)
    with TestClient(create_app(Settings(database_url=database_url, refit_engine="threads"))) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "refits"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        job = client.start_refit(agent["id"], method="svi")
        failed = client.get_refit(agent["id"], job["job_id"])
        assert failed["status"] == "failed"
        assert failed["error"] == (
            "could not be sent to the refit cluster (OSError: Timed out trying to connect to tcp://10.0.0.9:8786 after 10 s)"
        )
        assert client.start_refit(agent["id"], method="svi")["status"] == "queued"  # its place was given back


def test_a_job_left_running_by_a_dead_worker_runs_again_and_one_out_of_attempts_is_failed(database_url, monkeypatch):
    from fastapi.testclient import TestClient

    import service.refits as refits
    from service.app import create_app
    from service.db import make_engine, make_session_factory, transaction
    from service.models import RefitJob
    from service.settings import Settings

    monkeypatch.setattr(refits, "fit_records", lambda *_: ("done", {}, None))
    settings = Settings(database_url=database_url, refit_engine="threads")
    with TestClient(create_app(settings)) as http:
        key = make_tenant(database_url, "orphans")
        agent = MemtrialClient(api_key=key, http=http).create_agent("fund", "balanced", UNIVERSE)
    engine = make_engine(database_url)
    stale = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    with transaction(make_session_factory(engine)) as session:
        for job_id, attempts in (("0" * 32, 0), ("1" * 32, refits.MAX_ATTEMPTS - 1)):
            session.add(
                RefitJob(
                    id=job_id,
                    agent_id=agent["id"],
                    status="running",
                    method="nuts",
                    state_version=0,
                    heartbeat_at=stale,
                    worker="gone:1:x",
                    attempts=attempts,
                )
            )
    engine.dispose()
    with TestClient(create_app(settings)) as http:
        client = MemtrialClient(api_key=key, http=http)
        deadline = time.monotonic() + 20
        while client.get_refit(agent["id"], "0" * 32)["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.1)
        again, spent = client.get_refit(agent["id"], "0" * 32), client.get_refit(agent["id"], "1" * 32)
    assert again["status"] == "done" and again["error"] is None
    assert spent["status"] == "failed"
    assert spent["error"] == f"interrupted: the workers running the job stopped {refits.MAX_ATTEMPTS} times"


def _runner_holding_a_job(database_url, stand_in, job_id, *, capacity, heartbeat_at, attempts):
    """A refit runner whose engine is ``stand_in``, and a queued job of a new agent that names it as its worker:
    (runner, sessions, engine to dispose)."""
    from fastapi.testclient import TestClient

    import service.jobs as jobs
    from service.app import create_app
    from service.db import make_engine, make_session_factory, transaction
    from service.models import RefitJob
    from service.settings import Settings

    key = make_tenant(database_url, "runner")
    with TestClient(create_app(Settings(database_url=database_url, refit_engine="threads"))) as http:
        agent = MemtrialClient(api_key=key, http=http).create_agent("fund", "balanced", UNIVERSE)
    engine = make_engine(database_url)
    sessions = make_session_factory(engine)
    runner = jobs.RefitRunner(sessions, capacity=capacity, stale=30.0)
    runner.engine = stand_in
    with transaction(sessions) as session:
        session.add(
            RefitJob(
                id=job_id,
                agent_id=agent["id"],
                status="queued",
                method="svi",
                state_version=0,
                heartbeat_at=heartbeat_at,
                worker=runner.worker,
                attempts=attempts,
            )
        )
    return runner, sessions, engine


def test_a_job_sent_again_while_its_former_run_lasts_stays_held_until_its_last_run_ends(database_url):
    """The first run's end let go of a job whose later run was still pending (a set of jobs, not of runs): the
    later run, waiting in the engine's queue, was no longer kept alive, and a failure it raised was charged to the
    attempt number of whichever run was sent last."""
    from service.db import transaction
    from service.models import RefitJob

    class HeldRuns:  # an engine that holds each run until the test ends it
        local = True

        def __init__(self):
            self.runs = []

        def submit(self, database_url, job_id, heartbeat, where, done):
            self.runs.append(done)

        def close(self):
            pass

    job_id = "2" * 32
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    runner, sessions, engine = _runner_holding_a_job(
        database_url, HeldRuns(), job_id, capacity=2, heartbeat_at=long_ago, attempts=1
    )
    runner._send(job_id, 0)  # the first run, still running
    runner._send(job_id, 1)  # sent again (taken up), waiting behind it
    first, second = runner.engine.runs
    first(job_id, None)  # the first run ends (superseded)
    assert list(runner._held[job_id]) == [1]
    runner.stamp_waiting()
    with sessions() as session:
        beat = session.get(RefitJob, job_id).heartbeat_at
    assert beat is not None and beat.replace(tzinfo=dt.UTC) > long_ago + dt.timedelta(minutes=4)  # kept alive
    second(job_id, None)
    assert job_id not in runner._held
    # two runs of one job that both raise before the fit: each failure is kept, under its own run's attempt
    runner._send(job_id, 0)
    runner._send(job_id, 1)
    newer, older = runner.engine.runs[-1], runner.engine.runs[-2]
    newer(job_id, "OperationalError")
    assert list(runner._held[job_id]) == [0]  # the older run is still pending
    runner.record_failures()  # the job's row is at attempt 1, the failed run's
    runner.stamp_waiting()
    with sessions() as session:
        row = session.get(RefitJob, job_id)
        assert (row.status, row.heartbeat_at) == ("queued", None)
    older(job_id, "KilledWorker")
    assert runner._failed == {(job_id, 0): "KilledWorker"} and job_id not in runner._held
    # stopping hands on the jobs this worker still holds, never one another worker has taken up since
    runner._send(job_id, 2)
    with transaction(sessions) as session:
        row = session.get(RefitJob, job_id)
        row.status, row.worker, row.heartbeat_at = "running", "another:1:x", dt.datetime.now(dt.UTC)
    runner.stop()
    with sessions() as session:
        row = session.get(RefitJob, job_id)
        assert (row.status, row.worker) == ("running", "another:1:x") and row.heartbeat_at is not None
    engine.dispose()


def test_a_refit_its_engine_refuses_for_any_reason_fails_saying_why_and_gives_its_place_back(database_url):
    """A closed Dask client raises its own error, not an OSError: the job stayed held, queued and stamped for
    ever, its place taken, and the request that queued it gave its reserved place back twice."""
    from service.models import RefitJob

    class Closed:
        local = True

        def submit(self, *_):
            raise RuntimeError("Client is closed")  # as distributed's ClosedClientError, not an OSError

        def close(self):
            pass

    job_id = "3" * 32
    runner, sessions, engine = _runner_holding_a_job(
        database_url, Closed(), job_id, capacity=1, heartbeat_at=dt.datetime.now(dt.UTC), attempts=0
    )
    assert runner.reserve()
    runner.submit(job_id)  # does not raise
    assert runner._held == {} and runner._reserved == 0 and runner.reserve()  # its place is free again
    with sessions() as session:
        row = session.get(RefitJob, job_id)
        assert row.status == "failed"
        assert row.error == "could not be sent to the refit cluster (RuntimeError: Client is closed)"
    engine.dispose()


def test_stopping_the_refit_runner_waits_for_its_database_work_in_flight(database_url, monkeypatch):
    """A heartbeat mid-transaction at shutdown ends before stop() returns, so no connection outlives the engine."""
    import service.jobs as jobs
    from service.db import make_engine, make_session_factory, transaction

    engine = make_engine(database_url)
    sessions = make_session_factory(engine)
    inside, release, stopped = threading.Event(), threading.Event(), threading.Event()

    def slow_beat(beats):
        with transaction(sessions) as session:
            session.connection()  # a connection is out for the whole beat
            inside.set()
            release.wait(10)

    runner = jobs.RefitRunner(sessions, capacity=1, stale=0.06)  # a heartbeat every 10 ms
    monkeypatch.setattr(runner, "_beat_once", slow_beat)
    runner.start()
    assert inside.wait(10)
    stopper = threading.Thread(target=lambda: (runner.stop(), stopped.set()))
    stopper.start()
    assert not stopped.wait(0.3)  # stop() waits while the beat holds its connection
    assert engine.pool.checkedout() == 1
    release.set()
    assert stopped.wait(10)
    stopper.join()
    assert engine.pool.checkedout() == 0
    assert not any(t.is_alive() for t in runner._threads)
    engine.dispose()


@pytest.mark.parametrize(("lock", "statement"), [(10.0, 10.0), (0.0, 10.0), (12.0, 5.0)])
def test_a_lock_timeout_not_shorter_than_the_statement_timeout_is_refused_naming_both(lock, statement):
    from service.settings import Settings

    with pytest.raises(ValueError) as error:
        Settings(db_lock_timeout=lock, db_statement_timeout=statement)
    assert str(error.value) == (
        f"MEMTRIAL_DB_LOCK_TIMEOUT must be > 0 and shorter than MEMTRIAL_DB_STATEMENT_TIMEOUT ({statement!r}), got {lock!r}"
    )


@pytest.mark.parametrize(
    ("pragma", "reason"),
    [("query_only = ON", "the database is read-only"), ("max_page_count = 1", "the database's disk is full")],
)
def test_a_database_that_refuses_writes_says_why_and_reads_still_answer(tmp_path, pragma, reason):
    """A read-only SQLite file, or a full disk, answered as any outage ("unavailable or did not answer in time"),
    and logged without a word of the cause: the operator could not tell it from a slow database."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from service.app import create_app
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'refusing.db'}"
    upgrade(url)
    app = create_app(Settings(database_url=url, preload_model=False))
    with TestClient(app) as http:
        client = MemtrialClient(api_key=make_tenant(url, "refusing"), http=http)
        client.create_agent("fund", "balanced", UNIVERSE)
        engine = app.state.services.sessions.kw["bind"]

        def refuse(connection, _record):
            connection.execute(f"PRAGMA {pragma}")

        event.listen(engine, "connect", refuse)
        engine.dispose()  # every connection from here on refuses to grow or write the file
        with pytest.raises(ServiceError) as error:
            client.create_agent("another", "balanced", UNIVERSE)
        assert (error.value.status, error.value.code) == (503, "database_unavailable")
        assert error.value.message.startswith(f"{reason}, so nothing was written; retry once it is fixed")
        event.remove(engine, "connect", refuse)
        engine.dispose()
        assert client.create_agent("another", "balanced", UNIVERSE)["name"] == "another"  # fixed: written


def test_a_read_only_database_says_so_on_either_backend(database_url):
    """PostgreSQL refuses a write in a read-only transaction (a standby after failover) with an error of another
    class than an outage's: it was answered 500 'internal error'."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from service.app import create_app
    from service.settings import Settings

    app = create_app(Settings(database_url=database_url, preload_model=False))
    with TestClient(app) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "read-only"), http=http)
        engine = app.state.services.sessions.kw["bind"]
        sqlite = engine.dialect.name == "sqlite"

        def read_only(connection, _record):
            if sqlite:
                connection.execute("PRAGMA query_only = ON")
            else:
                connection.execute("SET SESSION default_transaction_read_only = on")
                connection.commit()

        event.listen(engine, "connect", read_only)
        engine.dispose()
        try:
            with pytest.raises(ServiceError) as error:
                client.create_agent("refused", "balanced", UNIVERSE)
        finally:
            event.remove(engine, "connect", read_only)
            engine.dispose()
        assert (error.value.status, error.value.code) == (503, "database_unavailable")
        assert error.value.message.startswith("the database is read-only, so nothing was written")
        assert client.create_agent("written", "balanced", UNIVERSE)["name"] == "written"


def test_open_postgresql_connections_are_given_tcp_limits_that_bound_a_wait_on_a_silent_host():
    """The server's timeouts cannot fire on a host gone silent; the client's TCP settings bound that wait:
    keepalive probes after the statement timeout's quiet, and as long for sent data to be acknowledged."""
    from service.db import KEEPALIVE_PROBES, DatabaseTimeouts, make_engine

    engine = make_engine(migrated_postgres(POSTGRES_URL), DatabaseTimeouts(statement=4.0, lock=2.0))
    try:
        with engine.connect() as connection:
            info = connection.connection.driver_connection.pgconn.info  # what libpq was given
            given = {o.keyword.decode(): (o.val or b"").decode() for o in info}
    finally:
        engine.dispose()
    assert (given["keepalives"], given["keepalives_idle"], given["keepalives_interval"]) == ("1", "4", "1")
    assert (given["keepalives_count"], given["tcp_user_timeout"]) == (str(KEEPALIVE_PROBES), "4000")
