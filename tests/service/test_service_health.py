"""Service: the health and readiness probes."""

import time


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
