"""Service: trust state, statistic history, the prediction log, values, operations and migrations."""

import datetime as dt

import pytest
from sqlalchemy import inspect
from support import UNIVERSE

from service.client import ServiceError
from service.db import make_engine
from service.migrations import downgrade, upgrade

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)


def run_dates(client, agent, n_dates, first=0):
    added = client.add_experiences(
        agent["id"],
        [
            {"text": f"lesson {i}: {topic}"}
            for i, topic in enumerate(["bonds", "stocks", "gold", "cash", "rates", "credit"])
        ],
    )
    tilt = {
        item["id"]: 0.02 * (i - 2.5) for i, item in enumerate(added["items"])
    }  # each lesson moves the equity weight its own way
    for t in range(first, first + n_dates):
        time = START + dt.timedelta(days=30 * t)
        body = client.create_decision(
            agent["id"],
            time,
            time + dt.timedelta(days=28),
            f"month {t}: markets {'up' if t % 2 else 'down'}",
            horizon=2,
        )
        drafts = []
        for s in body["subsets"]:
            shift = sum(tilt.get(e, 0.0) for e in s["experience_ids"])  # an earlier call's lessons move nothing
            drafts.append({"SPY": 0.3 + shift, "TLT": 0.3, "GLD": 0.2 - shift, "BIL": 0.2})
        client.submit_drafts(agent["id"], body["decision_id"], drafts)
        returns = {
            "SPY": [0.01 * ((t % 3) - 1), 0.002],
            "TLT": [0.001, -0.001],
            "GLD": [0.003 * (t % 2), 0.0],
            "BIL": [0.0001, 0.0001],
        }
        client.settle(agent["id"], body["decision_id"], returns=returns)


def test_trust_reports_scores_statistics_and_the_log(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE, gate={"test": "anytime"})
    run_dates(client, agent, 6)
    trust = client.trust(agent["id"])
    assert trust["gate_hash"] == agent["gate_hash"]
    assert trust["state"]["test"] == "anytime"
    log = client.trust_log(agent["id"])
    kinds = [entry["kind"] for entry in log["items"]]
    assert kinds.count("prediction") == 6 and kinds.count("score") == 6
    assert log["items"][0]["prev_hash"] == agent["gate_hash"] == log["gate_hash"]
    assert trust["n_scores"] == len(trust["scores"]) == trust["state"]["n_scored"]
    for score in trust["scores"]:
        assert -1 <= score["score"] <= 1 and score["statistic"] > 0
    assert trust["scores"][-1]["statistic"] == pytest.approx(trust["state"]["statistic"], rel=1e-15)
    assert client.verify(agent["id"]) == {"ok": True, "n_entries": 12, "first_invalid": None, "reason": None}


def test_values_show_posterior_mean_sd_and_count(client, agent):
    run_dates(client, agent, 4)
    values = client.values(agent["id"])
    assert values["learner_mode"] == "identity"
    counted = [v for v in values["values"].values() if v["n"] > 0]
    assert counted and all(v["sd"] is not None and v["sd"] >= 0 for v in counted)


def test_values_after_identical_drafts_read_no_sd_and_after_differing_ones_an_interval(client, agent):
    added = client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(4)])
    ids = [item["id"] for item in added["items"]]
    returns = {"SPY": [0.01, 0.002], "TLT": [0.001, -0.001], "GLD": [0.003, 0.0], "BIL": [0.0001, 0.0001]}
    for t, tilted in enumerate([False, True]):
        time = START + dt.timedelta(days=30 * t)
        plan = client.create_decision(agent["id"], time, time + dt.timedelta(days=28), "a month", horizon=2)
        drafts = []
        for subset in plan["subsets"]:
            shift = sum(0.02 * (1 + ids.index(e)) for e in subset["experience_ids"]) if tilted else 0.0
            drafts.append({"SPY": 0.3 + shift, "TLT": 0.3, "GLD": 0.2 - shift, "BIL": 0.2})
        client.submit_drafts(agent["id"], plan["decision_id"], drafts)
        client.settle(agent["id"], plan["decision_id"], returns=returns)
        values = client.values(agent["id"])["values"]
        for value in values.values():
            assert value["n"] == t + 1
            if tilted:
                assert value["sd"] > 0 and value["lower"] < value["mean"] < value["upper"]
                assert value["interval"] == "empirical_bayes"
            else:  # every contribution exactly 0: no noise scale, so no sd rather than sd 0
                assert (value["mean"], value["sd"], value["lower"], value["interval"]) == (0.0, None, None, None)


def test_tampering_with_the_stored_log_is_detected(client, agent, database_url):
    run_dates(client, agent, 2)
    engine = make_engine(database_url)
    with engine.begin() as connection:
        payload = connection.exec_driver_sql("SELECT payload FROM log_entries WHERE entry_index = 0").scalar_one()
        forged = payload.replace('"predictions":[["', '"predictions":[["x', 1)
        assert forged != payload
        connection.exec_driver_sql(
            "UPDATE log_entries SET payload = %s WHERE entry_index = 0"
            if "postgresql" in database_url
            else "UPDATE log_entries SET payload = ? WHERE entry_index = 0",
            (forged,),
        )
    engine.dispose()
    check = client.verify(agent["id"])
    assert (check["ok"], check["first_invalid"], check["reason"]) == (
        False,
        0,
        "entry 0 was modified after it was written",
    )


def test_health_readiness_and_metrics(client, http):
    assert client.health() == {"status": "ok"}
    assert client.ready() == {"status": "ready"}
    http.get("/healthz")
    assert 'memtrial_requests_total{method="GET",route="/healthz",status="200"}' in client.metrics()


def test_oversized_body_is_413(http, client, agent):
    response = http.post(
        f"/v1/agents/{agent['id']}/experiences",
        content=b'{"text": "' + b"x" * 2_100_000 + b'"}',
        headers={"Authorization": client._headers["Authorization"], "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "payload_too_large",
        "message": "request body exceeds 2000000 bytes",
        "field": "body",
        "errors": [{"field": "body", "message": "request body exceeds 2000000 bytes"}],
    }


def test_rate_limit_answers_429(database_url):
    from fastapi.testclient import TestClient
    from support import make_tenant

    from service.app import create_app
    from service.client import MemtrialClient
    from service.settings import Settings

    with TestClient(create_app(Settings(database_url=database_url, rate_limit_per_minute=3))) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "busy"), http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        client.get_agent(agent["id"])
        client.get_agent(agent["id"])
        with pytest.raises(ServiceError) as error:
            client.get_agent(agent["id"])
    assert (error.value.status, error.value.code) == (429, "rate_limited")


def test_migrations_go_down_to_empty_and_up_again(database_url):
    engine = make_engine(database_url)
    assert {"tenants", "api_keys", "agents", "experiences", "decisions", "contributions"} <= set(
        inspect(engine).get_table_names()
    )
    downgrade(database_url, "base")
    engine.dispose()
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(database_url)
    engine.dispose()
    assert "decisions" in inspect(engine).get_table_names()
    engine.dispose()


def test_oversized_streamed_body_is_413(http, client, agent):
    def chunks():
        for _ in range(30):
            yield b"x" * 100_000

    response = http.post(
        f"/v1/agents/{agent['id']}/experiences",
        content=chunks(),
        headers={"Authorization": client._headers["Authorization"], "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_a_refused_body_is_logged_counted_and_given_its_request_id_like_any_answer(http, client, agent, caplog):
    # the body's limits answer inside the observer: an operator sees oversized uploads in the log and in /metrics
    caplog.set_level("INFO", logger="memtrial.service")
    response = http.post(
        f"/v1/agents/{agent['id']}/experiences",
        content=b"x" * 2_100_000,
        headers={"Authorization": client._headers["Authorization"], "X-Request-ID": "big-upload-1"},
    )
    assert response.status_code == 413 and response.headers["X-Request-ID"] == "big-upload-1"
    assert 'memtrial_requests_total{method="POST",route="unmatched",status="413"}' in client.metrics()
    logged = [r for r in caplog.records if getattr(r, "request_id", None) == "big-upload-1"]
    assert logged and logged[-1].status == 413


@pytest.mark.slow  # NUTS in a background job
def test_refit_runs_in_the_background_and_values_then_show_intervals(client, agent):
    from support import wait_until

    run_dates(client, agent, 5)
    job = client.start_refit(agent["id"], method="svi")
    assert job["status"] == "queued"
    wait_until(
        lambda: client.get_refit(agent["id"], job["job_id"])["status"] not in ("queued", "running"), 240, "the refit"
    )
    job = client.get_refit(agent["id"], job["job_id"])
    assert job["status"] == "done", job["error"]
    assert job["posterior"]
    values = client.values(agent["id"])["values"]
    for experience_id, posterior in job["posterior"].items():
        shown = values[experience_id]
        assert (shown["lower"], shown["upper"], shown["p_positive"]) == (
            posterior["lower"],
            posterior["upper"],
            posterior["p_positive"],
        )
        assert shown["lower"] <= posterior["mean"] <= shown["upper"]
        assert shown["interval"] == "full_bayes"
    # a settlement since the refit: its data are no longer the agent's, so every value shows its own interval
    # (a mean learnt since never sits beside an interval of the past)
    run_dates(client, agent, 1, first=5)
    for shown in client.values(agent["id"])["values"].values():
        assert shown["interval"] in ("empirical_bayes", None)
        assert shown["lower"] is None or shown["lower"] <= shown["mean"] <= shown["upper"]
    # a deleted experience is forgotten: the next refit neither values nor pools it
    deleted = next(iter(job["posterior"]))
    client.delete_experience(agent["id"], deleted)
    again = client.start_refit(agent["id"], method="svi")
    wait_until(
        lambda: client.get_refit(agent["id"], again["job_id"])["status"] not in ("queued", "running"), 240, "a refit"
    )
    again = client.get_refit(agent["id"], again["job_id"])
    assert again["status"] == "done" and again["posterior"] and deleted not in again["posterior"]
    values = client.values(agent["id"])["values"]
    assert set(again["posterior"]) <= set(values), (set(again["posterior"]) - set(values), deleted)
    assert all(values[e]["interval"] == "full_bayes" for e in again["posterior"])
    # a correction of the last settlement rewrites the rows the refit read last: the refit no longer shows
    last = client.list_decisions(agent["id"], status="settled")["items"][-1]["decision_id"]
    returns = {"SPY": [0.03, 0.002], "TLT": [0.001, -0.001], "GLD": [0.0, 0.0], "BIL": [0.0001, 0.0001]}
    client.correct(agent["id"], last, reason="a bad price feed", returns=returns)
    assert all(v["interval"] in ("empirical_bayes", None) for v in client.values(agent["id"])["values"].values())


@pytest.mark.slow  # starts a Dask cluster with a worker process
def test_the_local_refit_cluster_starts_while_another_holds_the_dashboard_port():
    """Two services on one machine (or two test workers) each start a local refit cluster: the second must not
    need the scheduler's default HTTP port 8787, which the first holds."""
    import socket

    from service.jobs import DaskEngine

    holder = socket.socket()
    try:
        holder.bind(("0.0.0.0", 8787))
        holder.listen()
    except OSError:  # something else holds it already: the condition under test holds all the same
        pass
    engine = DaskEngine(None)
    try:
        client = engine.client()  # a port warning would be an error here (filterwarnings = error)
        assert client.submit(sum, [1, 2, 3]).result(timeout=60) == 6
        port = client.scheduler_info()["services"].get("dashboard")
        assert port != 8787
    finally:
        engine.close()
        holder.close()


@pytest.mark.slow  # starts a Dask cluster with a worker process
def test_a_refit_client_that_gave_up_on_its_scheduler_is_replaced_on_the_next_job():
    """A Dask client closes for good once its scheduler is gone longer than it waits to reconnect: every job sent
    through it failed to send ("Client is closed") and the cluster still read as ready, until the server
    restarted. The next job gets a new client."""
    from service.jobs import DaskEngine

    engine = DaskEngine(None)
    try:
        first = engine.client()
        first.close()  # as a client that gave up
        assert engine.ready() is None
        second = engine.client()
        assert second is not first and second.status == "running"
        assert second.submit(sum, [1, 2, 3]).result(timeout=60) == 6
    finally:
        engine.close()


def test_unknown_refit_job_is_404(client, agent):
    with pytest.raises(ServiceError) as error:
        client.get_refit(agent["id"], "nope")
    assert (error.value.status, error.value.message) == (404, "refit job 'nope' not found")


@pytest.mark.slow  # the Dask client waits out its 10-second connection timeout: once, on SQLite (no database matters)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_refit_whose_dask_scheduler_cannot_be_reached_is_a_503_that_queues_nothing(database_url):
    """It was a 500 after the job's row was committed: the client never saw the job, which a reaper later
    failed as 'interrupted'. The request now says why and writes nothing."""
    import socket

    from fastapi.testclient import TestClient
    from sqlalchemy import func, select
    from support import make_tenant

    from service.app import create_app
    from service.client import MemtrialClient
    from service.db import transaction
    from service.models import RefitJob
    from service.settings import Settings

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    app = create_app(Settings(database_url=database_url, refit_engine="dask", dask_scheduler=address))
    with TestClient(app) as http:
        client = MemtrialClient(api_key=make_tenant(database_url, "refits"), http=http, retries=0)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        with pytest.raises(ServiceError) as refused:
            client.start_refit(agent["id"], method="svi")
        assert (refused.value.status, refused.value.code) == (503, "refit_unavailable")
        assert f"the Dask scheduler at {address} cannot be reached" in refused.value.message
        with transaction(app.state.services.sessions) as session:
            assert session.scalar(select(func.count()).select_from(RefitJob)) == 0


@pytest.mark.parametrize("address", ["notaurl", "tcp://host", "tcp://host:port"])
def test_a_malformed_dask_scheduler_address_stops_the_start_naming_the_variable(monkeypatch, address):
    from service.settings import Settings

    monkeypatch.setenv("MEMTRIAL_DASK_SCHEDULER", address)
    with pytest.raises(ValueError) as error:
        Settings.from_env()
    assert str(error.value).startswith("MEMTRIAL_DASK_SCHEDULER must be a scheduler's address, tcp://host:port")


def test_a_failed_connection_to_the_refit_scheduler_is_remembered_for_a_while(monkeypatch):
    """Each refit request waited out the Dask client's 10-second connection timeout again; a failure is now
    remembered for RETRY_AFTER seconds, then tried afresh."""
    from service.jobs import DaskEngine

    engine = DaskEngine("tcp://127.0.0.1:9")
    tries = []

    def unreachable():
        tries.append(1)
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:9 after 10 s")

    monkeypatch.setattr(engine, "client", unreachable)
    first = engine.ready()
    assert first is not None and "the Dask scheduler at tcp://127.0.0.1:9 cannot be reached" in first
    assert engine.ready() == first and len(tries) == 1  # remembered: no second wait
    engine._unreachable = (0.0, first)  # the while has passed
    assert engine.ready() == first and len(tries) == 2


def test_readiness_waits_for_the_schema_this_release_needs_and_serves_a_newer_one(database_url):
    # `memtrial serve --no-migrate` on a database nobody migrated: every request would fail, so it is not ready
    from fastapi.testclient import TestClient
    from sqlalchemy import text
    from support import wait_until

    from service.app import create_app
    from service.migrations import revisions
    from service.settings import Settings

    needed = revisions()[-1]
    downgrade(database_url, "base")
    with TestClient(create_app(Settings(database_url=database_url))) as http:
        loading = "the embedding model is still loading"
        wait_until(lambda: http.get("/readyz").json().get("error", {}).get("message") != loading, 120, "the model")
        answer = http.get("/readyz")
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "not_ready"
        assert f"no memtrial schema; this release needs revision {needed}" in answer.json()["error"]["message"]
        upgrade(database_url, revisions()[-2])
        answer = http.get("/readyz")
        assert answer.status_code == 503
        assert f"at revision {revisions()[-2]}; this release needs {needed}" in answer.json()["error"]["message"]
        upgrade(database_url)
        assert http.get("/readyz").json() == {"status": "ready"}
        engine = make_engine(database_url)
        with engine.begin() as connection:  # a later release migrated it (a rolling upgrade): still served
            connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        try:
            assert http.get("/readyz").json() == {"status": "ready"}
        finally:
            with engine.begin() as connection:
                connection.execute(text("UPDATE alembic_version SET version_num = :needed"), {"needed": needed})
            engine.dispose()
