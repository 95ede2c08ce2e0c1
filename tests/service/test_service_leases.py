"""Leases of server drafting: a request that fails lets go of its key and its decision at once, one whose
process was killed holds them only until its lease ends, and no server-drafted decision stays planned."""

import asyncio
import datetime as dt
import json
import os
import signal
import sqlite3
import threading
import time

import httpx
import pytest
from fake_llm import FakeLLM
from live_server import Server
from sqlalchemy import text
from support import UNIVERSE, make_tenant

from service.client import MemtrialClient, ServiceError
from service.db import is_sqlite, make_engine
from service.leases import EXPIRED

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = ["Long bonds rallied on cuts.", "Equities fell on inflation.", "Gold held up.", "Cash was safe."]
BODY = {
    "decision_time": START.isoformat(),
    "maturity": (START + dt.timedelta(days=28)).isoformat(),
    "context_text": "rates fell",
    "drafting": "server",
}
DEADLINE = 60.0


def until(predicate, what, deadline=DEADLINE):
    """Poll ``predicate`` until it returns a true value (returned), or fail after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {deadline:g} s: {what}")


def providers_file(tmp_path, llm):
    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"providers": {"fake": {"models": ["openai/fake"], "api_base": llm.api_base}}}))
    return str(path)


def stocked(client):
    agent = client.create_agent("llm", "balanced", UNIVERSE, drafter={"provider": "fake", "model": "openai/fake"})
    client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])
    return agent["id"]


def post(http, key, agent_id, idempotency_key):
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key}
    return http.post(f"/v1/agents/{agent_id}/decisions", json=BODY, headers=headers)


def in_progress(answer):
    return answer.status_code == 409 and answer.json()["error"]["code"] == "idempotency_in_progress"


def once_free(http, key, agent_id, idempotency_key, what):
    """The first answer to a retry with the key that does not find it in progress."""
    answers = []
    until(lambda: not in_progress(answers.append(post(http, key, agent_id, idempotency_key)) or answers[-1]), what)
    return answers[-1]


class InThread:
    """A call run on a thread: its answer, or the exception it raised, once joined."""

    def __init__(self, call):
        self.answer, self.error = None, None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call):
        try:
            self.answer = call()
        except Exception as error:
            self.error = error

    def join(self):
        self.thread.join(timeout=DEADLINE)
        assert not self.thread.is_alive()
        return self


class AgentLock:
    """Another connection holding the agent's write lock (SQLite: the database's; PostgreSQL: the agent row's)."""

    def __init__(self, url, agent_id):
        if is_sqlite(url):
            self.connection = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
            self.connection.execute("BEGIN IMMEDIATE")
            self.engine = None
        else:
            self.engine = make_engine(url)
            self.connection = self.engine.connect()
            self.connection.execute(text("SELECT id FROM agents WHERE id = :id FOR UPDATE"), {"id": agent_id})

    def release(self):
        if self.engine is None:
            self.connection.execute("ROLLBACK")
            self.connection.close()
            return
        self.connection.rollback()
        self.connection.close()
        self.engine.dispose()


def decisions_of(client, agent_id):
    return [(d.status, d.failure) for d in client.list_decisions(agent_id).items]


@pytest.fixture
def in_process(database_url, tmp_path):
    """start(llm, **settings) -> (TestClient, tenant key) of an app drafting through ``llm``."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    opened = []

    def start(llm, **settings):
        values = {"llm_config": providers_file(tmp_path, llm), "llm_timeout_seconds": 30, "refit_engine": "threads"}
        http = TestClient(create_app(Settings(database_url=database_url, **{**values, **settings})))
        http.__enter__()
        opened.append(http)
        return http, make_tenant(database_url, f"leases-{len(opened)}")

    yield start
    for http in opened:
        http.__exit__(None, None, None)


def test_a_lock_timeout_while_deciding_releases_the_key_at_once_and_fails_the_decision(in_process, database_url):
    gate = threading.Event()
    with FakeLLM(hold=gate) as llm:
        # a lease far longer than the test: the retry can only run because the failure released the key. Only the
        # lock waits are short: the statement timeout stays the default, as a tight one (with the idle-in-transaction
        # limit it sets, four times longer) also cuts the retry's own statements on a loaded machine
        http, key = in_process(llm, db_busy_timeout=0.5, db_lock_timeout=0.25, idempotency_lease_seconds=600)
        client = MemtrialClient(api_key=key, http=http)
        agent_id = stocked(client)
        first = InThread(lambda: post(http, key, agent_id, "lock-1"))
        until(lambda: llm.calls >= 1, "the request is drafting")
        lock = AgentLock(database_url, agent_id)
        gate.set()  # the drafts come back; deciding waits on the lock past its timeout
        try:
            first.join()
        finally:
            lock.release()
        assert first.answer.status_code == 503 and first.answer.json()["error"]["code"] == "agent_busy"
        reason = "the database did not answer in time while deciding (the agent was locked by another writer too long)"
        until(lambda: decisions_of(client, agent_id) == [("failed", reason)], "the decision is failed")
        retry = once_free(http, key, agent_id, "lock-1", "the key is released")
        assert retry.status_code == 201 and retry.json()["status"] == "decided"
        assert "Idempotent-Replayed" not in retry.headers
        replay = post(http, key, agent_id, "lock-1")
        assert replay.headers["Idempotent-Replayed"] == "true" and replay.json() == retry.json()
        assert decisions_of(client, agent_id) == [("failed", reason), ("decided", None)]
        kinds = [e.kind for e in client.iter_log(agent_id)]
        assert kinds == ["prediction", "withdrawal", "prediction"] and client.verify(agent_id).ok


def test_client_drafts_for_a_decision_the_server_is_drafting_are_refused_and_the_server_decides(in_process):
    gate = threading.Event()
    with FakeLLM(hold=gate) as llm:
        http, key = in_process(llm)
        client = MemtrialClient(api_key=key, http=http)
        agent_id = stocked(client)
        first = InThread(lambda: post(http, key, agent_id, "concurrent-1"))
        until(lambda: llm.calls >= 1, "the request is drafting")
        (planned,) = client.list_decisions(agent_id).items
        assert planned.status == "planned"
        plan = client.get_decision(agent_id, planned.decision_id).plan
        with pytest.raises(ServiceError) as refused:
            client.submit_drafts(
                agent_id, planned.decision_id, [{"SPY": 1.0, "TLT": 0, "GLD": 0, "BIL": 0}] * len(plan.subsets)
            )
        gate.set()
        first.join()
    assert (refused.value.status, refused.value.code, refused.value.field) == (409, "conflict", "decision_id")
    assert refused.value.message == (
        f"decision {planned.decision_id!r} is being drafted by the server (it was planned with drafting 'server'); "
        "its own request posts its drafts"
    )
    assert first.answer.status_code == 201 and first.answer.json()["decision_id"] == planned.decision_id
    assert decisions_of(client, agent_id) == [("decided", None)]
    replay = post(http, key, agent_id, "concurrent-1")
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.json() == first.answer.json()


@pytest.mark.slow  # two live servers, one killed
def test_a_server_killed_mid_drafting_lets_a_retry_on_another_replica_run_after_the_lease(database_url, tmp_path):
    gate = threading.Event()
    with FakeLLM(hold=gate) as llm:
        env = {
            "MEMTRIAL_LLM_CONFIG": providers_file(tmp_path, llm),
            # a lease renewed every third of it: 10 s leaves a loaded machine's retry (whose first drafting call
            # also imports litellm) its renewals in time, so the heartbeat never takes its own decision for expired
            "MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS": "10",
            "MEMTRIAL_REFIT_STALE_SECONDS": "1.2",  # the heartbeat that withdraws expired decisions: 0.2 s
            "MEMTRIAL_REFIT_ENGINE": "threads",
        }
        key = make_tenant(database_url, "killed")
        doomed = Server(database_url, env=env)
        survivor = Server(database_url, env=env, migrate=False)
        try:
            client = MemtrialClient(survivor.url, key)
            agent_id = stocked(client)
            with httpx.Client(base_url=doomed.url, timeout=DEADLINE) as to_doomed:
                first = InThread(lambda: post(to_doomed, key, agent_id, "killed-1"))
                until(lambda: llm.calls >= 1, "the request is drafting")
                os.kill(doomed.process.pid, signal.SIGKILL)
                first.join()
            gate.set()
            assert isinstance(first.error, httpx.TransportError)
            with httpx.Client(base_url=survivor.url, timeout=DEADLINE) as to_survivor:
                held = post(to_survivor, key, agent_id, "killed-1")
                assert held.status_code == 409 and held.json()["error"]["code"] == "idempotency_in_progress"
                assert 1 <= int(held.headers["Retry-After"]) <= 10
                retry = once_free(to_survivor, key, agent_id, "killed-1", "the killed request's lease ends")
            assert retry.status_code == 201 and retry.json()["status"] == "decided"
            until(lambda: decisions_of(client, agent_id) == [("failed", EXPIRED), ("decided", None)], "withdrawn")
            assert client.verify(agent_id).ok
            client.close()
        finally:
            doomed.stop()
            survivor.stop()


class LoseWhileRunning(httpx.BaseTransport):
    """The first POST goes on to the server on a thread of its own, but its client sees the connection lost
    (a proxy dropped it) once ``running()`` says the server is at work on it (it holds its key by then: a retry
    sent sooner, on a busy machine, could take the key first); every answer after it is kept in ``answers``."""

    def __init__(self, inner, running):
        self.inner, self.running, self.first, self.answers = inner, running, None, []

    def handle_request(self, request):
        if request.method == "POST" and self.first is None:
            request.read()
            self.first = InThread(lambda: self.inner.handle_request(request).read())
            until(self.running, "the first request reaches the model")
            raise httpx.ReadError("connection reset before the answer arrived", request=request)
        answer = self.inner.handle_request(request)
        response = httpx.Response(answer.status_code, headers=answer.headers, content=answer.read(), request=request)
        self.answers.append(response)
        return response


def test_the_typed_client_waits_out_its_own_key_in_progress_and_gets_the_first_answer(in_process):
    gate = threading.Event()
    with FakeLLM(hold=gate) as llm:
        http, key = in_process(llm)
        agent_id = stocked(MemtrialClient(api_key=key, http=http))
        lossy = LoseWhileRunning(http._transport, running=lambda: llm.in_flight > 0)
        with httpx.Client(transport=lossy, base_url=str(http.base_url)) as raw:
            client = MemtrialClient(api_key=key, http=raw, retries=1, max_wait=0.5)
            call = InThread(
                lambda: client.create_decision(agent_id, START, START + dt.timedelta(days=28), "x", drafting="server")
            )
            until(lambda: any(in_progress(a) for a in lossy.answers), "the retry finds its key in progress")
            gate.set()
            call.join()
            lossy.first.join()
            assert [d.status for d in client.list_decisions(agent_id).items] == ["decided"]  # created once
        assert call.error is None and call.answer.status == "decided"
        posted = [a for a in lossy.answers if a.request.method == "POST"]
        assert posted[-1].headers["Idempotent-Replayed"] == "true"  # the first request's answer


@pytest.mark.parametrize("raw", ["0", "3601"])
def test_a_lease_setting_outside_its_range_is_refused_naming_the_variable(monkeypatch, raw):
    from service.settings import Settings

    monkeypatch.setenv("MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS", raw)
    with pytest.raises(ValueError) as error:
        Settings.from_env()
    assert str(error.value) == f"MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS must be in (0, 3600], got {float(raw)!r}"


def test_a_stopping_server_waits_for_its_drafting_requests_to_let_go_then_for_their_abandons():
    """uvicorn cancels the requests, then shuts the app down at once; a cancelled server-drafting request
    registers its abandon an event-loop turn or more later. The shutdown's wait (finish_abandons) waits for the
    requests still running to end, then for their abandons, within its bound."""
    import threading
    import time
    from types import SimpleNamespace

    from service.leases import abandon_while_stopping, drafting_in_flight, finish_abandons

    services = SimpleNamespace(settings=SimpleNamespace(db_pool_timeout=1.0, db_statement_timeout=1.0))
    order, entered = [], threading.Event()

    def planned():
        time.sleep(0.2)  # the plan's thread still committing
        order.append("let go")
        return None  # it wrote nothing: nothing to release

    def request():
        with drafting_in_flight():
            entered.set()
            time.sleep(0.2)  # the cancellation reaching the route
            abandon_while_stopping(services, "tenant", "agent", "stopped", planned, guard=None)

    thread = threading.Thread(target=request)
    thread.start()
    entered.wait(10)
    assert not finish_abandons(0.05)  # its bound passes while the request runs
    assert finish_abandons(10)
    order.append("shut down")
    thread.join(10)
    assert order == ["let go", "shut down"]


def test_the_abandon_of_a_request_stopped_while_it_planned_waits_for_the_plan_its_thread_still_commits(monkeypatch):
    """Cancelled while its plan runs in a thread, a server-drafting request cannot know the decision the thread
    may still commit: its abandon waits for the plan and releases that decision, or nothing if none was made."""
    import threading
    import time
    from types import SimpleNamespace

    import service.usecases.deciding as deciding

    def slow_plan(*_):
        time.sleep(0.2)
        return SimpleNamespace(decision_id="d-committed"), {}, "its retries"

    monkeypatch.setattr(deciding, "plan", slow_plan)
    planning = deciding._Planning()
    threading.Thread(target=planning.run, args=("services", "tenant", "agent", "body", "guard")).start()
    assert planning.made(10) == ("d-committed", "its retries")

    def failing_plan(*_):
        raise RuntimeError("the database refused the plan: nothing committed")

    monkeypatch.setattr(deciding, "plan", failing_plan)
    failed = deciding._Planning()
    with pytest.raises(RuntimeError):
        failed.run("services", "tenant", "agent", "body", "guard")
    assert failed.made(10) is None

    # cancelled before a thread took its plan up (every worker thread busy): the plan never runs, and there is
    # nothing to wait for (the shutdown would wait its whole bound for a plan that never comes)
    never = deciding._Planning()
    assert never.abandon() is False
    with pytest.raises(asyncio.CancelledError):
        never.run("services", "tenant", "agent", "body", "guard")
    assert never.result is None
    started = deciding._Planning()
    monkeypatch.setattr(deciding, "plan", slow_plan)
    assert started.run("services", "tenant", "agent", "body", "guard")[0].decision_id == "d-committed"
    assert started.abandon() is True  # it started: its abandon waits for what it committed
