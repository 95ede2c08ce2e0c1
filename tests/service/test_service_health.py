"""Service: the health and readiness probes."""

import time

import pytest


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


def _ready_answer(url):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    with TestClient(create_app(Settings(database_url=url, preload_model=False))) as http:
        return http.get("/readyz"), http.get("/healthz")


def test_readyz_is_unready_on_a_sqlite_file_the_server_may_not_write(tmp_path, monkeypatch):
    """A service on a database that refuses every write answered ready: a load balancer sent it an agent's
    plans and settlements, each answered 503 after the fact. (The suite may run as root, who may write any
    file: the file's and its folder's write permission are taken away by standing in for ``os.access``.)"""
    import os

    import service.db as db
    from service.migrations import upgrade

    path = tmp_path / "memtrial.db"
    upgrade(f"sqlite:///{path}")
    ready, alive = _ready_answer(f"sqlite:///{path}")
    assert ready.status_code == 200 and alive.status_code == 200
    real = tmp_path / "real"
    real.mkdir()
    (real / "memtrial.db").write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(real / "memtrial.db")  # the file through a link: its journal is written beside the real one
    folder = os.path.realpath(real)
    for locked in (os.path.realpath(real / "memtrial.db"), folder, str(tmp_path)):  # the file, its folder, the link's
        monkeypatch.setattr(
            db.os,
            "access",
            lambda where, mode, locked=locked, **_: not (os.path.realpath(where) == locked and mode == os.W_OK),
        )
        ready, alive = _ready_answer(f"sqlite:///{path}")
        assert alive.status_code == 200
        if locked == str(tmp_path):  # the link's own folder is not where SQLite writes
            assert ready.status_code == 200, ready.json()
            continue
        assert ready.status_code == 503
        error = ready.json()["error"]
        assert (error["code"], error["message"]) == (
            "not_ready",
            "the SQLite database file or its folder is not writable by the server: every write would fail",
        )


@pytest.mark.slow  # PostgreSQL
def test_readyz_is_unready_on_a_postgresql_database_that_is_read_only():
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from support import BASE_POSTGRES_URL, POSTGRES_URL

    from service.db import normalise_url
    from service.migrations import upgrade

    base = make_url(POSTGRES_URL)
    url = base.set(database=f"{base.database}_read_only").render_as_string(hide_password=False)
    admin = create_engine(normalise_url(BASE_POSTGRES_URL), isolation_level="AUTOCOMMIT")
    name = make_url(url).database
    try:
        with admin.connect() as connection:  # a database of this test's own, dropped at its end
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        upgrade(url)
        ready, _ = _ready_answer(url)
        assert ready.status_code == 200, ready.json()
        with admin.connect() as connection:  # as a standby, or an operator's switch, makes it
            connection.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
        ready, alive = _ready_answer(url)
        assert alive.status_code == 200 and ready.status_code == 503
        assert ready.json()["error"]["message"] == (
            "the database is read-only (a standby, or default_transaction_read_only): every write would fail"
        )
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
