"""Service: an unexpected error is logged once, without content, and counted; statement parameters never reach a message."""

import logging


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
