"""Run the Alembic migrations programmatically (``memtrial serve`` upgrades on start)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from alembic import command

__all__ = ["alembic_config", "downgrade", "revisions", "schema_problem", "upgrade"]

SCRIPT_LOCATION = Path(__file__).resolve().parent.parent / "alembic"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


@functools.cache
def revisions() -> tuple[str, ...]:
    """This release's schema revisions, oldest first: the last is the one it needs."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return tuple(reversed([revision.revision for revision in script.walk_revisions()]))


def schema_problem(connection: Any) -> str | None:
    """Why this release cannot serve the database ``connection`` reads (None: it can): no memtrial schema, or
    one at an older revision (``memtrial serve --no-migrate`` on a database nobody migrated). A revision this
    release does not know is newer (a later release migrated it, as in a rolling upgrade) and is served."""
    needed = revisions()[-1]
    try:
        found = [str(row) for row in connection.execute(text("SELECT version_num FROM alembic_version")).scalars()]
    except SQLAlchemyError:
        found = []
    how = "`memtrial serve` migrates it on start unless given --no-migrate"
    if not found:
        return f"the database has no memtrial schema; this release needs revision {needed} ({how})"
    if found[0] in revisions() and found[0] != needed:
        return f"the database schema is at revision {found[0]}; this release needs {needed} ({how})"
    return None
