"""Service settings, read once from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["DEFAULT_DATABASE_URL", "Settings"]

DEFAULT_DATABASE_URL = "sqlite:///./memtrial.db"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


@dataclass(frozen=True, slots=True)
class Settings:
    """database_url: SQLAlchemy URL (postgresql://... or sqlite:///path).
    max_body_bytes: larger request bodies get 413.
    rate_limit_per_minute: requests per API key and worker per minute (0: unlimited).
    preload_model: load the embedding model at start-up, before serving.
    """

    database_url: str = DEFAULT_DATABASE_URL
    max_body_bytes: int = 2_000_000
    rate_limit_per_minute: int = 0
    llm_timeout_seconds: int = 120
    preload_model: bool = True

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            database_url=os.environ.get("MEMTRIAL_DATABASE_URL", DEFAULT_DATABASE_URL),
            max_body_bytes=_int("MEMTRIAL_MAX_BODY_BYTES", 2_000_000),
            rate_limit_per_minute=_int("MEMTRIAL_RATE_LIMIT_PER_MINUTE", 0),
            llm_timeout_seconds=_int("MEMTRIAL_LLM_TIMEOUT_SECONDS", 120),
            preload_model=os.environ.get("MEMTRIAL_PRELOAD_MODEL", "1") != "0",
        )
