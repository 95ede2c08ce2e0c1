"""Service: retries with an ``Idempotency-Key`` create once and answer as the first time, even after a lost answer."""

import datetime as dt
import json

import pytest
from sqlalchemy.exc import OperationalError
from support import raw

START = dt.datetime(2021, 3, 1, 21, 0, tzinfo=dt.UTC)


def test_a_retried_creation_with_the_same_key_returns_the_first_answer(http, client, agent):
    body = json.dumps({"text": "retried lesson", "metadata": {"n": 1}})
    path = f"/v1/agents/{agent['id']}/experiences"
    first = raw(http, client, "POST", path, body, {"Idempotency-Key": "lesson-1"})
    second = raw(http, client, "POST", path, body, {"Idempotency-Key": "lesson-1"})
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json() and second.headers["Idempotent-Replayed"] == "true"
    assert len(client.list_experiences(agent["id"])["items"]) == 1
    other = raw(http, client, "POST", path, json.dumps({"text": "another lesson"}), {"Idempotency-Key": "lesson-1"})
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"


def test_a_retried_decision_with_the_same_key_plans_once(http, client, agent):
    client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(5)])
    body = json.dumps(
        {
            "decision_time": START.isoformat(),
            "maturity": (START + dt.timedelta(days=1)).isoformat(),
            "context_text": "calm",
        }
    )
    answers = [
        raw(http, client, "POST", f"/v1/agents/{agent['id']}/decisions", body, {"Idempotency-Key": "day-1"})
        for _ in range(3)
    ]
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["decision_id"] for a in answers}) == 1
    assert len(client.list_decisions(agent["id"])["items"]) == 1


def test_a_connection_lost_after_commit_is_safe_to_retry_with_the_key(app, http, client, agent):
    services = app.state.services
    real = services.sessions

    class DropsAfterCommit:
        armed = True

        def __call__(self):
            session = real()
            commit = session.commit

            def commit_then_drop():
                commit()
                if DropsAfterCommit.armed and session.info.get("experience"):
                    DropsAfterCommit.armed = False
                    raise OperationalError("COMMIT", {}, ConnectionResetError("connection reset after COMMIT"))

            session.commit = commit_then_drop
            return session

    from sqlalchemy import event

    from service.models import Experience

    @event.listens_for(real, "before_flush")
    def _mark(session, *_):
        if any(isinstance(o, Experience) for o in session.new):
            session.info["experience"] = True

    services.sessions = DropsAfterCommit()
    try:
        body = json.dumps({"text": "sent once, committed, answer lost"})
        path = f"/v1/agents/{agent['id']}/experiences"
        lost = raw(http, client, "POST", path, body, {"Idempotency-Key": "lost-1"})
        assert (
            lost.status_code == 503
            and "a retry with the same Idempotency-Key is safe" in lost.json()["error"]["message"]
        )
        retry = raw(http, client, "POST", path, body, {"Idempotency-Key": "lost-1"})
    finally:
        services.sessions = real
        event.remove(real, "before_flush", _mark)
    assert retry.status_code == 201 and retry.headers["Idempotent-Replayed"] == "true"
    assert [e["id"] for e in client.list_experiences(agent["id"])["items"]] == [retry.json()["id"]]


def test_a_malformed_idempotency_key_is_422(http, client, agent):
    response = raw(
        http,
        client,
        "POST",
        f"/v1/agents/{agent['id']}/experiences",
        json.dumps({"text": "x"}),
        {"Idempotency-Key": "not ok!"},
    )
    assert response.status_code == 422 and response.json()["error"]["field"] == "Idempotency-Key"


# PostgreSQL alone: SQLite takes one writer at a time (BEGIN IMMEDIATE), so two requests never both find a key free
@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_requests_with_one_key_at_once_create_once_and_both_get_the_first_answer(
    http, client, monkeypatch, database_url
):
    """Two replicas behind a balancer take the same creating request at once (a client's retry after a
    timeout): both find the key free, the first commits, the second's claim of the key collides. It was a
    409 ``conflict``, which no client waits on; it is the key in progress, so the client waits and gets the
    first answer, and one agent exists."""
    import threading

    import pytest
    from support import UNIVERSE

    from service.idempotency import Idempotency

    if database_url.startswith("sqlite"):
        pytest.skip(
            "NOT RUN ON SQLITE: it takes one writer at a time (BEGIN IMMEDIATE), so two requests never both find a key free"
        )

    barrier = threading.Barrier(2, timeout=30)
    calls = []
    replay = Idempotency.replay

    def both_find_the_key_free(self, session):
        answer = replay(self, session)
        calls.append(answer)
        if len(calls) <= 2:  # the two first requests: each has read the key as free before either claims it
            barrier.wait()
        return answer

    monkeypatch.setattr(Idempotency, "replay", both_find_the_key_free)
    body = json.dumps({"name": "once", "investor": "balanced", "universe": UNIVERSE})
    answers = [None, None]

    def send(i):
        answers[i] = raw(http, client, "POST", "/v1/agents", body, {"Idempotency-Key": "create-once"})

    threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    codes = sorted(a.status_code for a in answers)
    assert codes == [201, 409], [a.json() for a in answers]
    refused = next(a for a in answers if a.status_code == 409)
    assert refused.json()["error"]["code"] == "idempotency_in_progress" and refused.headers["Retry-After"] == "1"
    assert refused.json()["error"]["field"] == "Idempotency-Key"
    created = next(a for a in answers if a.status_code == 201).json()
    # what the client does on a key in progress: it waits, sends again, and gets the first answer
    again = raw(http, client, "POST", "/v1/agents", body, {"Idempotency-Key": "create-once"})
    assert again.json() == created and again.headers["Idempotent-Replayed"] == "true"
    assert [a["id"] for a in client.list_agents()["items"]] == [created["id"]]
