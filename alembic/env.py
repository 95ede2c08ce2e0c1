"""Alembic environment: the URL comes from the caller's config (or MEMTRIAL_DATABASE_URL)."""

from __future__ import annotations

import os

from sqlalchemy import text

from alembic import context
from service.db import DatabaseTimeouts, is_sqlite, make_engine, normalise_url
from service.models import Base

#: the PostgreSQL advisory lock that serialises migrations (any fixed 64-bit number; this spells "memtrial")
MIGRATION_LOCK = 0x6D656D747269616C

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("MEMTRIAL_DATABASE_URL", "sqlite:///./memtrial.db")
    return normalise_url(url)


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    url = _url()
    # SQLite: the migration is one write transaction; a replica starting beside it waits for it as long as a
    # PostgreSQL replica waits for the migration lock (below), not the service's 10 s for one request's writes
    engine = make_engine(url, DatabaseTimeouts(busy=300.0) if is_sqlite(url) else None)
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                driver = connection.connection.driver_connection
                # a batch migration rebuilds a table (copy, drop, rename): with foreign keys on, dropping
                # the old table would cascade-delete every child row; the pragma only works outside a transaction
                driver.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=True,
                # one transaction around every step, DDL included, as on PostgreSQL (the engine begins each with
                # BEGIN IMMEDIATE): a step that fails, a downgrade refused, undoes the steps before it; without this
                # alembic commits each step of a SQLite database apart
                transactional_ddl=True if sqlite else None,
            )
            with context.begin_transaction():
                if connection.dialect.name == "postgresql":
                    # replicas started together migrate one after another: each waits (up to five minutes) for the
                    # lock the first holds until its migrations commit, then finds the schema at its revision (the
                    # wait alone is that long: the service's own lock and statement timeouts apply to the migrations)
                    connection.execute(text("SET LOCAL lock_timeout = '300s'"))
                    connection.execute(text("SET LOCAL statement_timeout = '300s'"))
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
                    # the migrations themselves wait for locks and run as long as the service's settings allow
                    connection.execute(text("RESET lock_timeout"))
                    connection.execute(text("RESET statement_timeout"))
                context.run_migrations()
    finally:  # a migration that failed gives its connections back too
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
