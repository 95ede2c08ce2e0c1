"""The service fixtures: a migrated database of each kind (SQLite and PostgreSQL), the app, a client, an agent."""

import pytest
from support import POSTGRES_URL, UNIVERSE, copy_sqlite, make_tenant, migrated_postgres


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory):
    """One empty SQLite database migrated to the newest revision, which each SQLite test gets a copy of."""
    from service.migrations import upgrade

    path = tmp_path_factory.mktemp("migrated") / "memtrial.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def database_url(request, tmp_path):
    """A migrated, empty database of each kind."""
    if request.param == "sqlite":
        return copy_sqlite(request.getfixturevalue("migrated_sqlite"), tmp_path / "memtrial.db")
    return migrated_postgres(POSTGRES_URL)


@pytest.fixture
def app(database_url):
    from service.app import create_app
    from service.settings import Settings

    return create_app(Settings(database_url=database_url))


@pytest.fixture
def http(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        yield client


@pytest.fixture
def client(http, database_url):
    from service.client import MemtrialClient

    return MemtrialClient(api_key=make_tenant(database_url, "acme"), http=http)


@pytest.fixture
def agent(client):
    return client.create_agent("fund", "balanced", UNIVERSE)
