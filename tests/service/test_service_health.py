"""Service: the health and readiness probes."""

import time


def test_readyz_reports_an_embedding_model_that_failed_to_load(tmp_path, monkeypatch, caplog):
    """Anyone who can reach the port reads /readyz: it names the error's type, the log has its message (which
    may name the server's files)."""
    import logging

    from fastapi.testclient import TestClient

    from memtrial.drafting.embeddings import Embedder
    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    broken = Embedder()

    def no_model():
        raise OSError("model files are unreadable: /srv/secret/models/model.onnx")

    monkeypatch.setattr(broken, "_load", no_model)
    monkeypatch.setattr("service.app.get_embedder", lambda *_: broken)
    url = f"sqlite:///{tmp_path / 'broken.db'}"
    upgrade(url)
    caplog.set_level(logging.ERROR, logger="memtrial.service")
    with TestClient(create_app(Settings(database_url=url))) as http:
        deadline = time.monotonic() + 30
        while broken.load_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        answer = http.get("/readyz")
        assert http.get("/healthz").status_code == 200
    assert answer.status_code == 503
    assert answer.json()["error"]["message"] == (
        "the embedding model failed to load (OSError; the server's log has its message)"
    )
    logged = [r for r in caplog.records if r.getMessage() == "the embedding model failed to load"]
    assert [r.error for r in logged] == ["OSError: model files are unreadable: /srv/secret/models/model.onnx"]
