"""Shared test settings and the service fixtures (run against SQLite and PostgreSQL)."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="run every tier: the default fast tier and the tests marked slow",
    )


def pytest_configure(config):
    """``pytest`` runs the fast tier; ``pytest --all`` everything; an explicit ``-m`` wins, and so
    does naming test files or tests (``pytest tests/service/test_service_fuzz.py`` runs that file whole)."""
    named = any(".py" in str(arg) for arg in config.args)
    if not config.option.markexpr and not config.getoption("--all") and not named:
        config.option.markexpr = "not slow"
        config._memtrial_fast_tier = True


def pytest_report_header(config):
    if getattr(config, "_memtrial_fast_tier", False):
        return "memtrial: FAST TIER (tests marked slow are deselected: PostgreSQL, faults, fuzzing, benchmark runs); `pytest --all` runs them"
    return None


def pytest_terminal_summary(terminalreporter, config):
    deselected = sum(1 for item in terminalreporter.stats.get("deselected", []) if item.get_closest_marker("slow"))
    if getattr(config, "_memtrial_fast_tier", False) and deselected:
        terminalreporter.write_line(
            f"memtrial: {deselected} slow tests were NOT run (fast tier); run `pytest --all` for every tier",
            yellow=True,
            bold=True,
        )


POSTGRES_URL = os.environ.get("MEMTRIAL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]


def _reset_postgres(url: str) -> None:
    from sqlalchemy import text

    from service.db import make_engine

    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    except Exception as error:  # the service suite must run on PostgreSQL: fail loudly, never skip
        pytest.fail(
            f"PostgreSQL at {url} is not reachable ({type(error).__name__}: {error}); start it or set MEMTRIAL_TEST_POSTGRES_URL"
        )
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def database_url(request, tmp_path):
    """A migrated, empty database of each kind."""
    from service.migrations import upgrade

    url = f"sqlite:///{tmp_path / 'memtrial.db'}" if request.param == "sqlite" else POSTGRES_URL
    if request.param == "postgresql":
        _reset_postgres(url)
    upgrade(url)
    return url


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


def raw(http, client, method, path, content, headers=None):
    """A request with the client's key and a body sent exactly as given (malformed JSON included)."""
    return http.request(
        method,
        path,
        content=content,
        headers={
            "Authorization": client._headers["Authorization"],
            "content-type": "application/json",
            **(headers or {}),
        },
    )


def make_tenant(database_url, name):
    from service.db import make_engine, make_session_factory, transaction
    from service.tenancy import create_tenant_with_key

    engine = make_engine(database_url)
    with transaction(make_session_factory(engine)) as session:
        _, key = create_tenant_with_key(session, name)
    engine.dispose()
    return key


@pytest.fixture
def client(http, database_url):
    from service.client import MemtrialClient

    return MemtrialClient(api_key=make_tenant(database_url, "acme"), http=http)


@pytest.fixture
def agent(client):
    return client.create_agent("fund", "balanced", UNIVERSE)


@pytest.fixture(scope="session")
def investorbench_folder(tmp_path_factory):
    """A data folder holding the project's own InvestorBench-format fixture (not the real files)."""
    from backtest.data.fixture import write_investorbench_fixture

    return write_investorbench_fixture(tmp_path_factory.mktemp("data"), seed=0)


@pytest.fixture
def investorbench_fixture(investorbench_folder, monkeypatch):
    """MEMTRIAL_DATA points at the fixture (the only place InvestorBench files are looked for)."""
    from backtest.realdata import load_setting

    monkeypatch.setenv("MEMTRIAL_DATA", str(investorbench_folder))
    load_setting.cache_clear()
    yield investorbench_folder
    load_setting.cache_clear()


@pytest.fixture
def real_investorbench(monkeypatch):
    """The real InvestorBench files, where a data folder holds them; otherwise the test is skipped, loudly."""
    from backtest.data.prices import candidates
    from backtest.realdata import load_setting

    found = next((p for p in candidates("investorbench/hon.json") if p.is_file()), None)
    if found is None:
        pytest.skip(
            "REAL INVESTORBENCH FILES NOT PRESENT: set MEMTRIAL_DATA to a folder holding investorbench/*.json to run this check"
        )
    monkeypatch.setenv("MEMTRIAL_DATA", str(found.parent.parent))
    load_setting.cache_clear()
    yield found.parent
    load_setting.cache_clear()
