"""Database engine and sessions for PostgreSQL and SQLite.

Every request runs in one transaction. Writers to one agent are serialised:
on PostgreSQL by ``SELECT ... FOR UPDATE`` of the agent row, on SQLite by
starting every transaction with ``BEGIN IMMEDIATE`` (one writer at a time).

Nothing waits for the database without a bound (:class:`DatabaseTimeouts`):
PostgreSQL gets a connect timeout and statement and lock timeouts (the lock
timeout shorter, so a lock wait ends as a lock wait), SQLite a busy timeout,
and the pool a checkout timeout; each ends in a 503 with ``Retry-After``: a
lock wait (another writer holds the agent) with code ``agent_busy``, the rest
with ``database_unavailable``. Statement parameters are kept out of error messages, so no
experience text or name reaches a log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from prometheus_client import Gauge
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from service.tracing import span

__all__ = [
    "write_refusal",
    "DatabaseTimeouts",
    "is_sqlite",
    "make_engine",
    "make_session_factory",
    "normalise_url",
    "observe_pool",
    "pool_figures",
    "transaction",
]


@dataclass(frozen=True, slots=True)
class DatabaseTimeouts:
    """Seconds: connect (PostgreSQL), statement (PostgreSQL), busy (SQLite: waiting for another writer),
    pool (waiting for a free connection), lock (PostgreSQL: waiting for a row lock, such as an agent's;
    shorter than ``statement``, or a lock wait would end as a statement timeout)."""

    connect: float = 5.0
    statement: float = 10.0
    busy: float = 10.0
    pool: float = 5.0
    lock: float = 5.0

    def __post_init__(self) -> None:
        if not 0.0 < self.lock < self.statement:
            raise ValueError(
                f"the lock timeout must be > 0 and shorter than the statement timeout ({self.statement:g} s), got {self.lock:g} s"
            )


def normalise_url(url: str) -> str:
    """Use the psycopg 3 driver for plain PostgreSQL URLs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def pool_figures(engine: Engine) -> dict[str, int]:
    """The engine's connection pool now: ``size`` (the connections it keeps), ``in_use`` (checked out by a
    request), ``idle`` (open, waiting in the pool) and ``overflow`` (open beyond ``size``; a request that finds
    ``size`` plus the overflow limit in use waits up to the pool timeout, then answers 503). Zeros for a pool
    that keeps no count."""
    pool: Any = engine.pool
    figures = {"size": 0, "in_use": 0, "idle": 0, "overflow": 0}
    for name, method in (("size", "size"), ("in_use", "checkedout"), ("idle", "checkedin"), ("overflow", "overflow")):
        if callable(getattr(pool, method, None)):
            figures[name] = max(int(getattr(pool, method)()), 0)
    return figures


# with several workers each live worker's figures as of the last scrape it answered, added up (service.metrics)
POOL_SIZE = Gauge(
    "memtrial_db_pool_size", "Connections the database pools keep (SQLAlchemy's pool_size)", multiprocess_mode="livesum"
)
POOL_CONNECTIONS = Gauge(
    "memtrial_db_pool_connections",
    "Open database connections of the pools, by state",
    ["state"],
    multiprocess_mode="livesum",
)
POOL_OVERFLOW = Gauge(
    "memtrial_db_pool_overflow", "Connections open beyond the pools' size (their overflow)", multiprocess_mode="livesum"
)


def observe_pool(sessions: sessionmaker[Session]) -> None:
    """Set the pool's gauges to the pool of the engine ``sessions`` binds, as it is now (read at each scrape)."""
    bind = sessions.kw.get("bind")
    if isinstance(bind, Engine):
        figures = pool_figures(bind)
        POOL_SIZE.set(figures["size"])
        POOL_CONNECTIONS.labels(state="in_use").set(figures["in_use"])
        POOL_CONNECTIONS.labels(state="idle").set(figures["idle"])
        POOL_OVERFLOW.set(figures["overflow"])


#: keepalive probes sent, one a second, before a quiet connection is given up
KEEPALIVE_PROBES = 3


def silent_peer_limits(statement: float) -> dict[str, int]:
    """libpq's TCP settings that bound a wait on a database host gone silent: keepalive probes after
    ``statement`` seconds of quiet, :data:`KEEPALIVE_PROBES` of them a second apart, and at most
    ``statement`` seconds for sent data to be acknowledged (about ``statement`` + 3 s in all)."""
    return {
        "keepalives": 1,
        "keepalives_idle": max(1, round(statement)),
        "keepalives_interval": 1,
        "keepalives_count": KEEPALIVE_PROBES,
        "tcp_user_timeout": max(1000, int(1000 * statement)),
    }


def make_engine(url: str, timeouts: DatabaseTimeouts | None = None) -> Engine:
    url = normalise_url(url)
    limits = timeouts or DatabaseTimeouts()
    if not is_sqlite(url):
        milliseconds = int(1000 * limits.statement)
        lock_milliseconds = int(1000 * limits.lock)
        return create_engine(
            url,
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=20,
            pool_timeout=limits.pool,
            hide_parameters=True,
            connect_args={
                "connect_timeout": max(1, round(limits.connect)),
                "options": f"-c statement_timeout={milliseconds} -c lock_timeout={lock_milliseconds} -c idle_in_transaction_session_timeout={4 * milliseconds}",
                # a database host or network path that goes silent on an open connection (the server's own
                # timeouts cannot fire there): TCP keepalives probe it once it has been quiet for the statement
                # timeout, and data it leaves unacknowledged that long closes the connection (an outage: 503)
                **silent_peer_limits(limits.statement),
            },
        )
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": limits.busy},
        pool_timeout=limits.pool,
        hide_parameters=True,
    )
    busy_ms = int(1000 * limits.busy)

    @event.listens_for(engine, "connect")
    def _on_connect(connection: Any, _record: Any) -> None:
        connection.isolation_level = None  # let SQLAlchemy's begin event emit BEGIN IMMEDIATE
        cursor = connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error (a ``db.transaction`` span when tracing)."""
    session = factory()
    try:
        with span("db.transaction"):
            yield session
            session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        callbacks = session.info.pop("after_commit", [])
        committed = not session.in_transaction()
        session.close()
    if committed:
        for callback in callbacks:
            callback()


def write_refusal(session: Session) -> str | None:
    """Why the database will refuse every write (None: it takes them): a PostgreSQL standby or a database set
    ``default_transaction_read_only``; a SQLite file this process may not write (the file, or its folder,
    which holds its journal: a read-only mount, say). Read without writing anything."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        if session.execute(text("SELECT current_setting('transaction_read_only')")).scalar() == "on":
            return "the database is read-only (a standby, or default_transaction_read_only): every write would fail"
        return None
    url = bind.engine.url
    path = url.database or ""
    if path and path != ":memory:" and os.path.exists(path):
        path = os.path.realpath(path)  # SQLite writes its journal beside the file a link points to
        folder = os.path.dirname(path)
        writable = {"effective_ids": True} if os.access in os.supports_effective_ids else {}
        if not (os.access(path, os.W_OK, **writable) and os.access(folder, os.W_OK, **writable)):
            # said without the path: anyone who reaches the port reads this (the operator knows the URL)
            return "the SQLite database file or its folder is not writable by the server: every write would fail"
    return None
