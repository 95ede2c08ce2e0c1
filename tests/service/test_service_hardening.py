"""Service hardening: every defect probing found, kept fixed (on SQLite and PostgreSQL where it applies)."""

import datetime as dt
import json
import logging
import time

import pytest
from conftest import UNIVERSE, raw
from sqlalchemy.exc import OperationalError

from service.client import ServiceError

START = dt.datetime(2021, 3, 1, 21, 0, tzinfo=dt.UTC)
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}


def nested(depth):
    document = {}
    for _ in range(depth - 1):
        document = {"x": document}
    return document


# -- 2. nothing invalid is written, so no 500 follows a write ----------------------------------
def test_metadata_nested_too_deep_is_refused_before_anything_is_written(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experience(agent["id"], "deep", metadata=nested(300))
    assert (error.value.status, error.value.field) == (422, "metadata")
    assert "nests deeper than 16 levels" in error.value.message
    assert client.list_experiences(agent["id"])["items"] == []
    kept = client.add_experience(agent["id"], "deep enough", metadata=nested(16))
    with pytest.raises(ServiceError) as error:
        client.update_experience(agent["id"], kept["id"], nested(17))
    assert error.value.status == 422
    assert client.get_experience(agent["id"], kept["id"])["metadata"] == nested(16)


def test_metadata_larger_than_the_limit_is_refused(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experience(agent["id"], "big", metadata={"blob": "x" * 70_000})
    assert (error.value.status, error.value.field) == (422, "metadata")
    assert "more than 64000" in error.value.message


# -- 3. retries with an Idempotency-Key -----------------------------------------------------
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


# -- 5. bad input answers 422 (or 404), never 500 ---------------------------------------------
@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/experiences", '{"text": "nul \\u0000 inside"}'),
        ("/experiences", '{"text": "fine", "metadata": {"k": "\\ud800"}}'),
        ("/experiences", '{"text": "fine", "metadata": {"k\\u0000": 1}}'),
    ],
)
def test_nul_characters_and_lone_surrogates_are_422(http, client, agent, path, payload):
    response = raw(http, client, "POST", f"/v1/agents/{agent['id']}{path}", payload)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid"
    assert client.list_experiences(agent["id"])["items"] == []


def test_a_nul_in_a_name_or_a_path_id_is_not_a_500(http, client, agent):
    body = {"name": "bad\u0000name", "investor": "balanced", "universe": UNIVERSE}
    assert raw(http, client, "POST", "/v1/agents", json.dumps(body)).status_code == 422
    for path in (
        "/v1/agents/%00",
        f"/v1/agents/{agent['id']}/decisions/%00abc",
        f"/v1/agents/{agent['id']}/experiences/x%00",
    ):
        response = http.get(path, headers={"Authorization": client._headers["Authorization"]})
        assert response.status_code == 404, (path, response.text)
    response = http.get(
        "/v1/agents", params={"name": "a\u0000b"}, headers={"Authorization": client._headers["Authorization"]}
    )
    assert response.status_code == 422


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("where", ["metadata", "structured", "context_features"])
def test_non_finite_numbers_anywhere_in_a_body_are_422(http, client, agent, number, where):
    if where == "context_features":
        payload = f'{{"decision_time": "{START.isoformat()}", "maturity": "{START.isoformat()}", "context_text": "x", "context_features": {{"f": {number}}}}}'
        path = f"/v1/agents/{agent['id']}/decisions"
    else:
        payload = f'{{"text": "x", "{where}": {{"v": {number}}}}}'
        path = f"/v1/agents/{agent['id']}/experiences"
    response = raw(http, client, "POST", path, payload)
    assert response.status_code == 422
    error = response.json()["error"]
    if number == "1e400":  # a number that overflows parses as infinity, and the field holding it says so
        assert error["code"] == "invalid" and error["field"].startswith(where), error
        assert "finite" in error["message"]
    else:
        assert error["code"] == "invalid_json" and error["field"] == "body"


def test_an_offset_beyond_64_bits_is_422(http, client, agent):
    response = http.get(
        f"/v1/agents/{agent['id']}/experiences",
        params={"offset": 2**63},
        headers={"Authorization": client._headers["Authorization"]},
    )
    assert response.status_code == 422 and response.json()["error"]["field"] == "offset"


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1850-01-01T00:00:00Z"])
def test_datetimes_out_of_range_are_422(client, agent, moment):
    with pytest.raises(ServiceError) as error:
        client.create_decision(agent["id"], moment, "2021-01-01T00:00:00Z", "x")
    assert (error.value.status, error.value.field) == (422, "decision_time")
    assert "outside the supported range" in error.value.message


# -- 12. malformed JSON, 405, strict types, documented security -------------------------------
def test_malformed_json_is_a_documented_422_naming_the_body(http, client, agent):
    response = raw(http, client, "POST", f"/v1/agents/{agent['id']}/experiences", '{"text": "x",,}')
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_json", "body") and error["message"].startswith(
        "body: not valid JSON"
    )


@pytest.mark.parametrize(
    ("content_type", "got"),
    [
        (None, "no content-type"),
        ("text/plain", "content-type 'text/plain'"),
        ("application/x-www-form-urlencoded", "content-type 'application/x-www-form-urlencoded'"),
    ],
)
def test_a_body_sent_without_a_json_content_type_is_told_to_send_one(http, client, content_type, got):
    headers = {"Authorization": client._headers["Authorization"]}
    if content_type is not None:
        headers["content-type"] = content_type
    body = json.dumps({"name": "fund", "investor": "balanced", "universe": UNIVERSE})
    response = http.post("/v1/agents", content=body, headers=headers)
    assert response.status_code == 422
    message = f"body: send a JSON object with content-type: application/json (got {got})"
    assert response.json()["error"] == {
        "code": "invalid",
        "message": message,
        "field": "body",
        "errors": [{"field": "body", "message": message}],
    }
    array = raw(http, client, "POST", "/v1/agents", "[1, 2]").json()["error"]
    assert array["message"] == "body: send a JSON object with content-type: application/json (got a JSON array)"
    assert client.list_agents()["items"] == []


def test_every_invalid_field_is_reported_and_the_first_is_the_field(client):
    with pytest.raises(ServiceError) as error:
        client._request("POST", "/v1/agents", {"name": "", "kind": "bad", "k": 99, "investor": "balanced"})
    assert (error.value.status, error.value.field) == (422, "name")
    assert error.value.message == "name: String should have at least 1 character"
    assert error.value.errors == [
        {"field": "name", "message": "name: String should have at least 1 character"},
        {"field": "kind", "message": "kind: Input should be 'portfolio' or 'scored'"},
        {"field": "k", "message": "k: Input should be less than or equal to 8"},
    ]
    with pytest.raises(ServiceError) as error:  # an error of the service's own lists itself
        client.get_agent("ag_0000000000000000000000000000000")
    assert error.value.errors == [{"field": error.value.field, "message": error.value.message}]


def test_method_not_allowed_names_the_allowed_methods(http):
    response = http.put("/healthz")
    assert response.status_code == 405 and response.headers["allow"] == "GET"


def test_booleans_and_strings_are_not_numbers(client, agent):
    with pytest.raises(ServiceError) as error:
        client.create_agent("x", "balanced", UNIVERSE, gate={"test": "prequential", "min_scores": True})
    assert (error.value.status, error.value.field) == (422, "gate.min_scores")
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=1), "x")
    with pytest.raises(ServiceError) as error:
        client.submit_drafts(agent["id"], plan["decision_id"], [{**DRAFT, "SPY": "0.4"}])
    assert (error.value.status, error.value.field) == (422, "drafts.0.SPY")


@pytest.mark.parametrize(
    "path", ["/v1/agents?limt=5", "/v1/agents/{agent}/trust/log?limit=5&curser=x", "/healthz?probe=1"]
)
def test_an_undeclared_query_parameter_is_refused_naming_it_and_what_the_operation_takes(http, client, agent, path):
    response = http.get(path.format(agent=agent["id"]), headers={"Authorization": client._headers["Authorization"]})
    assert response.status_code == 422
    error = response.json()["error"]
    misspelt = path.rsplit("&", 1)[-1].split("?")[-1].split("=")[0]
    assert (error["code"], error["field"]) == ("invalid", misspelt)
    assert "unknown query parameter" in error["message"] and (
        "takes: none" in error["message"] if "healthz" in path else "limit" in error["message"]
    )
    declared = path.split("?")[0].format(agent=agent["id"]) + ("?limit=5" if "healthz" not in path else "")
    assert http.get(declared, headers={"Authorization": client._headers["Authorization"]}).status_code == 200


def test_openapi_declares_bearer_security_and_every_error(http):
    schema = http.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["HTTPBearer"]["description"],
    }
    operation = schema["paths"]["/v1/agents/{agent_id}/experiences"]["post"]
    assert {"HTTPBearer": []} in operation["security"]
    assert {"401", "404", "409", "422", "429", "503"} <= set(operation["responses"])
    assert any(p["name"] == "Idempotency-Key" for p in operation["parameters"])


# -- 13. the agent's clock, complete drafts, batch errors ------------------------------------
def test_a_decision_in_the_future_is_refused_and_does_not_lock_the_agent(client, agent):
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
    with pytest.raises(ServiceError) as error:
        client.create_decision(agent["id"], ahead, ahead + dt.timedelta(days=1), "far ahead")
    assert (error.value.status, error.value.field) == (422, "decision_time")
    assert "later than now plus the allowed clock skew (300 s)" in error.value.message
    assert client.create_decision(agent["id"], START, START + dt.timedelta(days=1), "today")["status"] == "planned"


def test_a_draft_missing_an_asset_is_refused(client, agent):
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=1), "x")
    with pytest.raises(ServiceError) as error:
        client.submit_drafts(agent["id"], plan["decision_id"], [{"SPY": 0.5, "TLT": 0.5}])
    assert (error.value.status, error.value.field) == (422, "drafts[0]")
    assert "missing assets ['GLD', 'BIL']" in error.value.message


@pytest.mark.parametrize(("text", "rule"), [("", "at least 1 character"), ("x" * 20_001, "at most 20000 characters")])
def test_a_bad_text_in_a_batch_is_named_by_its_position(client, agent, text, rule):
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "fine"}, {"text": text}])
    assert (error.value.status, error.value.field) == (422, "experiences.1.text")
    assert rule in error.value.message


def test_batches_are_bounded_in_count_and_in_text(client, agent):
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "x"}] * 257)
    assert (error.value.status, error.value.field) == (422, "experiences")
    with pytest.raises(ServiceError) as error:
        client.add_experiences(agent["id"], [{"text": "y" * 20_000}] * 51)
    assert "at most 1000000 characters of text" in error.value.message


# -- 11. an unexpected error is logged once, without content, and counted --------------------
def test_an_unhandled_error_is_logged_once_without_content_and_counted(app, client, agent, caplog, monkeypatch):
    from fastapi.testclient import TestClient

    import service.usecases.experiences as experiences  # where listing renders each experience

    client.add_experience(agent["id"], "a private lesson text")

    def explode(row, engine):
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
    assert response.headers.get("x-request-id") in (None, "probe-500")
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


# -- 14. the API reference works offline --------------------------------------------------
def test_docs_load_swagger_ui_from_the_package_not_a_cdn(http):
    page = http.get("/docs").text
    assert "/docs/assets/swagger-ui-bundle.js" in page and "/docs/assets/swagger-ui.css" in page
    assert "cdn" not in page.lower() and "https://" not in page.split("<body>")[1]
    script = http.get("/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    assert http.get("/redoc").status_code == 404


def test_readyz_reports_an_embedding_model_that_failed_to_load(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from memtrial.drafting.embeddings import Embedder
    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    broken = Embedder()

    def no_model():
        raise OSError("model files are unreadable")

    monkeypatch.setattr(broken, "_load", no_model)
    monkeypatch.setattr("service.app.get_embedder", lambda *_: broken)
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    upgrade(url)
    with TestClient(create_app(Settings(database_url=url))) as http:
        deadline = time.monotonic() + 30
        while broken.load_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        answer = http.get("/readyz")
        assert http.get("/healthz").status_code == 200
    assert answer.status_code == 503
    assert (
        answer.json()["error"]["message"] == "the embedding model failed to load: OSError: model files are unreadable"
    )
