"""Shared test data and helpers: the universe, the PostgreSQL test database, tenants, raw requests.

Test modules import it as ``from support import ...``: ``tests/`` is on ``sys.path`` because pytest
inserts the root ``tests/conftest.py``'s folder (rootdir-relative imports, no ``__init__.py``), as it
does for ``live_server``, ``fake_llm``, ``world``, ``oracles`` and ``tcp_proxy``.
"""

import datetime as dt
import os
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

#: The database ``MEMTRIAL_TEST_POSTGRES_URL`` names: the one a serial run uses, and the one each parallel
#: worker connects to when it creates its own.
BASE_POSTGRES_URL = os.environ.get("MEMTRIAL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
#: The xdist worker this process is (``gw0``, ``gw1``, ...), or ``None`` in a serial run.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def worker_postgres_url(base: str, worker: str | None) -> str:
    """The database of one test process: ``base`` itself in a serial run, else ``base``'s database name
    with ``_<worker>`` appended (``.../test`` -> ``.../test_gw0``), so parallel workers never share one."""
    if not worker:
        return base
    parts = urlsplit(base)
    name = parts.path.lstrip("/") or "postgres"
    return urlunsplit(parts._replace(path=f"/{name}_{worker}"))


#: The PostgreSQL database this process's tests use (its ``public`` schema is dropped and recreated by
#: :func:`reset_postgres`): the base database, or the worker's own, created on first use.
POSTGRES_URL = worker_postgres_url(BASE_POSTGRES_URL, WORKER)
_CREATED: set[str] = set()


def ensure_postgres_database(url: str) -> None:
    """Create the database ``url`` names when it is missing, connecting to :data:`BASE_POSTGRES_URL` to do so
    (a worker's database; the base one must exist). Checked once per process and database."""
    if url in _CREATED or url == BASE_POSTGRES_URL:
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from service.db import normalise_url

    name = make_url(url).database
    engine = create_engine(normalise_url(BASE_POSTGRES_URL), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            found = connection.execute(text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name})
            if found.first() is None:
                quoted = connection.dialect.identifier_preparer.quote(name)
                connection.execute(text(f"CREATE DATABASE {quoted}"))
    except Exception as error:  # as reset_postgres: a worker without its database fails loudly, never skips
        pytest.fail(
            f"could not create the worker's database {name!r} through {BASE_POSTGRES_URL} "
            f"({type(error).__name__}: {error}); the role needs CREATEDB, or run the suite serially (-n 0)"
        )
    finally:
        engine.dispose()
    _CREATED.add(url)


UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]


def reset_postgres(url: str) -> None:
    """Drop and recreate the ``public`` schema of the database at ``url``; fail (never skip) if it is unreachable."""
    from sqlalchemy import text

    from service.db import make_engine

    ensure_postgres_database(url)
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


#: Per database: the tables and the revision of the newest schema, as :func:`migrated_postgres` left it.
_MIGRATED: dict[str, tuple[frozenset[str], str]] = {}


def _schema(connection) -> tuple[frozenset[str], str | None]:
    from sqlalchemy import text

    tables = frozenset(
        connection.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars()
    )
    if "alembic_version" not in tables:
        return tables, None
    return tables, connection.execute(text("SELECT string_agg(version_num, ',') FROM alembic_version")).scalar()


def migrated_postgres(url: str) -> str:
    """The database at ``url`` empty and at the newest revision; returns ``url``. The first time in a process its
    schema is dropped and migrated (:func:`reset_postgres`, then the migrations), and every table but Alembic's
    is checked empty; after that, where the database still holds exactly those tables at that revision, they are
    emptied (``TRUNCATE ... RESTART IDENTITY``: a few milliseconds, where migrating again took a fifth of a
    second), else it is dropped and migrated again (a test that migrated it down, say)."""
    from sqlalchemy import text

    from service.db import make_engine
    from service.migrations import upgrade

    known = _MIGRATED.get(url)
    if known is not None:
        engine = make_engine(url)
        try:
            with engine.begin() as connection:
                if _schema(connection) == known:
                    names = ", ".join(f'"{table}"' for table in sorted(known[0] - {"alembic_version"}))
                    connection.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
                    return url
        except Exception as error:  # as reset_postgres: fail loudly, never skip
            pytest.fail(f"PostgreSQL at {url} could not be emptied ({type(error).__name__}: {error})")
        finally:
            engine.dispose()
    reset_postgres(url)
    upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            tables, revision = _schema(connection)
            for table in sorted(tables - {"alembic_version"}):  # so emptying them stands for migrating again
                rows = connection.execute(text(f'SELECT count(*) FROM "{table}"')).scalar()
                assert rows == 0, f"the newest schema's table {table} holds {rows} rows once migrated"
    finally:
        engine.dispose()
    assert revision is not None, "the migrations left no alembic_version"
    _MIGRATED[url] = (tables, revision)
    return url


def copy_sqlite(source, target) -> str:
    """Copy the SQLite database file ``source`` to ``target`` through SQLite's backup API (whole and
    consistent, whatever its journal holds); returns ``target``'s URL. A copy of a database migrated once
    stands for migrating each test's own, which takes a quarter of a second."""
    import sqlite3

    with sqlite3.connect(source) as origin, sqlite3.connect(target) as copy:
        origin.backup(copy)
    origin.close()
    copy.close()
    return f"sqlite:///{target}"


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
    """A tenant named ``name`` in the database at ``database_url``; returns its API key."""
    from service.db import make_engine, make_session_factory, transaction
    from service.tenancy import create_tenant_with_key

    engine = make_engine(database_url)
    with transaction(make_session_factory(engine)) as session:
        _, key = create_tenant_with_key(session, name)
    engine.dispose()
    return key


def wait_until(condition, timeout, what):
    """Poll ``condition()`` every 50 ms until it is true; fail naming ``what`` after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


#: The first month of the monthly portfolio worlds the service tests settle, and their lessons.
MONTH_ZERO = dt.datetime(2021, 3, 1, 21, 0, tzinfo=dt.UTC)
ASSETS = [a["asset"] for a in UNIVERSE]
MONTHLY_LESSONS = [
    "Bonds rallied on a rate cut.",
    "Equities fell on inflation.",
    "Gold held in a banking scare.",
    "Cash protected the book.",
    "Momentum paid in a calm year.",
]


def plan_month(client, agent_id, t, **kwargs):
    """Plan month ``t`` of a monthly world (maturity four weeks on, ``horizon`` sessions, default 2)."""
    when = MONTH_ZERO + dt.timedelta(days=30 * t)
    return client.create_decision(
        agent_id,
        when,
        when + dt.timedelta(days=28),
        f"month {t}: rates and equities",
        horizon=kwargs.pop("horizon", 2),
        **kwargs,
    )


def decide_month(client, agent_id, t=0, horizon=2):
    """Plan month ``t`` and decide it with one fixed draft per subset; returns the plan."""
    plan = plan_month(client, agent_id, t, horizon=horizon)
    draft = {"SPY": 0.35, "TLT": 0.35, "GLD": 0.1, "BIL": 0.2}
    client.submit_drafts(agent_id, plan["decision_id"], [draft] * len(plan["subsets"]))
    return plan


def engine_snapshot(engine, experiences):
    """What a correction must leave as a right settlement would: values, sds, gate, fallback, noise, modes."""
    return {
        "values": engine.values(),
        "sds": {e: engine.posterior(e)[1] for e in experiences},
        "gate": engine.gate.statistics.to_dict(),
        "fallback": engine.fallback.to_dict(),
        "noise": engine.noise.to_dict(),
        "modes": engine.learner.state_dict()["mode_scores"],
    }


def assert_snapshots_close(first, second, atol=1e-12):
    """Two :func:`engine_snapshot` s agree: strings exactly, numbers within ``atol``."""
    import numpy as np

    for key in first:
        a, b = first[key], second[key]
        if isinstance(a, dict):
            assert a.keys() == b.keys(), key
            for name in a:
                if isinstance(a[name], str):
                    assert a[name] == b[name], f"{key}.{name}"
                    continue
                np.testing.assert_allclose(
                    np.asarray(a[name], dtype=float),
                    np.asarray(b[name], dtype=float),
                    rtol=0,
                    atol=atol,
                    err_msg=f"{key}.{name}",
                )
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=key)


class LoseFirstAnswer(httpx.BaseTransport):
    """Forwards every request; the first answer to a matching POST is lost on its way back."""

    def __init__(self, inner: httpx.BaseTransport, path_suffix: str) -> None:
        self.inner, self.path_suffix, self.lost, self.keys = inner, path_suffix, 0, []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.inner.handle_request(request)
        response = httpx.Response(answer.status_code, headers=answer.headers, content=answer.read(), request=request)
        if request.method == "POST" and request.url.path.endswith(self.path_suffix):
            self.keys.append(request.headers.get("idempotency-key"))
            if not self.lost:
                self.lost += 1
                raise httpx.ReadError("connection reset before the answer arrived", request=request)
        return response
