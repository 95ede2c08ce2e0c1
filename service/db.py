"""Database engine and sessions for PostgreSQL and SQLite.

Every request runs in one transaction. Writers to one agent are serialised:
on PostgreSQL by ``SELECT ... FOR UPDATE`` of the agent row, on SQLite by
starting every transaction with ``BEGIN IMMEDIATE`` (one writer at a time).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

__all__ = ["is_sqlite", "make_engine", "make_session_factory", "normalise_url", "transaction"]


def normalise_url(url: str) -> str:
    """Use the psycopg 3 driver for plain PostgreSQL URLs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})

    @event.listens_for(engine, "connect")
    def _on_connect(connection: Any, _record: Any) -> None:
        connection.isolation_level = None  # let SQLAlchemy's begin event emit BEGIN IMMEDIATE
        cursor = connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error."""
    session = factory()
    try:
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
