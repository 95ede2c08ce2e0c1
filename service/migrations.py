"""Run the Alembic migrations programmatically (``memtrial serve`` upgrades on start)."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

from alembic import command

__all__ = ["alembic_config", "downgrade", "upgrade"]

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
