"""Service settings, read once from ``MEMTRIAL_*`` environment variables.

Every setting is a field of :class:`Settings` with its variable, default and
meaning in the field's metadata; ``docs/configuration.md`` is written from
them (``python -m service.settings``) and a test keeps the two equal.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memtrial.engine.checks import MAX_UTILITY
from service.db import DatabaseTimeouts

__all__ = [
    "DEFAULT_DATABASE_URL",
    "MAX_DRAFTS_CEILING",
    "OTHER_VARIABLES",
    "Settings",
    "configuration_table",
    "database_url_problem",
    "unknown_variables",
]

DEFAULT_DATABASE_URL = "sqlite:///./memtrial.db"
#: the most drafts any design and k can need (the full factorial of eight experiences)
MAX_DRAFTS_CEILING = 256


def _setting(default: Any, env: str, help: str) -> Any:  # noqa: A002 - the word the table uses
    return field(default=default, metadata={"env": env, "help": help})


#: the settings whose range is checked on its own, naming its bounds (every other number: finite and >= 0)
_OWN_RANGE = frozenset(
    {
        "auth_cache_seconds",
        "idempotency_lease_seconds",
        "max_abs_utility",
        "max_drafts_per_decision",
        "max_body_bytes",
        "llm_timeout_seconds",
    }
)


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's configuration (see ``docs/configuration.md``)."""

    database_url: str = _setting(
        DEFAULT_DATABASE_URL,
        "MEMTRIAL_DATABASE_URL",
        "SQLAlchemy URL: `postgresql://user@host/db` or `sqlite:///path` (`memtrial serve --database-url` sets it); another database, an in-memory SQLite one or a SQLite file in a folder that does not exist stops the start, naming it.",
    )
    max_body_bytes: int = _setting(
        2_000_000, "MEMTRIAL_MAX_BODY_BYTES", "Larger request bodies (declared or streamed) get 413 (at least 1)."
    )
    rate_limit_per_minute: int = _setting(
        0,
        "MEMTRIAL_RATE_LIMIT_PER_MINUTE",
        "Requests per API key per minute, counted across all workers and replicas of a machine (of every machine with `MEMTRIAL_REDIS_URL`); 0: unlimited. Over it: 429 with `Retry-After`.",
    )
    auth_failures_per_minute: int = _setting(
        30,
        "MEMTRIAL_AUTH_FAILURES_PER_MINUTE",
        "Requests with a missing, unknown or revoked key per client address per minute, counted like `MEMTRIAL_RATE_LIMIT_PER_MINUTE`; 0: unlimited.",
    )
    trusted_proxies: str = _setting(
        "",
        "MEMTRIAL_TRUSTED_PROXIES",
        "Comma-separated addresses or networks of reverse proxies whose `X-Forwarded-For` names the client (for rate limits and logs); empty: the peer address is the client, whatever the header says.",
    )
    rate_limit_file: str | None = _setting(
        None,
        "MEMTRIAL_RATE_LIMIT_FILE",
        "File the servers of one machine share their rate-limit counters in: `memtrial serve` sets it to one file per database, so the workers of a server and its replicas on this machine count together (unset: counters in this process only).",
    )
    redis_url: str | None = _setting(
        None,
        "MEMTRIAL_REDIS_URL",
        "Redis that rate limits are counted in (`redis://host:6379/0`, `rediss://` for TLS), so the replicas on every machine share them; unset: each machine counts alone. While Redis does not answer, each machine counts alone again and says so (`memtrial_rate_limit_fallbacks_total`, one warning per outage); no request fails for it. A Redis that answers but refuses the commands (a database number it lacks, a wrong user or password) is counted around the same way and logged once as an error naming this setting.",
    )
    redis_prefix: str = _setting(
        "memtrial:ratelimit:",
        "MEMTRIAL_REDIS_PREFIX",
        "Prefix of the rate-limit keys in Redis: deployments that share one Redis need one each.",
    )
    auth_cache_seconds: float = _setting(
        5.0,
        "MEMTRIAL_AUTH_CACHE_SECONDS",
        "How long a worker trusts its cached key lookup, in [0, 5]: a revoked key is refused everywhere within this time.",
    )
    llm_config: str | None = _setting(
        None,
        "MEMTRIAL_LLM_CONFIG",
        "JSON file of the LLM providers server drafting may call (endpoints, models, where keys come from); unset: server drafting is off. See docs/configuration.md.",
    )
    llm_timeout_seconds: int = _setting(
        120, "MEMTRIAL_LLM_TIMEOUT_SECONDS", "Timeout of one LLM call in server drafting, in seconds (at least 1)."
    )
    max_drafts_per_decision: int = _setting(
        64,
        "MEMTRIAL_MAX_DRAFTS_PER_DECISION",
        "Most drafts one decision may need, in [1, 256]: an agent whose design and `k` need more is refused with 422 (when created, when its drafter changes, when it plans); a drafts request holds at most this many; server drafting sends at most this many model calls for one decision, retries of malformed answers included.",
    )
    preload_model: bool = _setting(
        True,
        "MEMTRIAL_PRELOAD_MODEL",
        "Load the embedding model in the background as the server starts (`/readyz` answers 503 until it has); 0: on first use.",
    )
    embedder: str = _setting(
        "auto",
        "MEMTRIAL_EMBEDDER",
        "How texts are embedded: `auto` (ONNX Runtime where the `onnxruntime` package is installed, the same model exported once to `MEMTRIAL_ONNX_CACHE`; torch if it cannot load), `onnx` or `torch` (sentence-transformers).",
    )
    max_clock_skew_seconds: int = _setting(
        300,
        "MEMTRIAL_MAX_CLOCK_SKEW_SECONDS",
        "How far in the future a decision_time may lie, at most 31536000 (a later one is refused: it would lock the agent's clock).",
    )
    db_connect_timeout: float = _setting(5.0, "MEMTRIAL_DB_CONNECT_TIMEOUT", "Seconds to open a PostgreSQL connection.")
    db_statement_timeout: float = _setting(
        10.0, "MEMTRIAL_DB_STATEMENT_TIMEOUT", "Seconds one PostgreSQL statement may take."
    )
    db_lock_timeout: float = _setting(
        5.0,
        "MEMTRIAL_DB_LOCK_TIMEOUT",
        "Seconds a PostgreSQL request waits for an agent's write lock (then 503 agent_busy); shorter than the statement timeout.",
    )
    db_busy_timeout: float = _setting(
        10.0, "MEMTRIAL_DB_BUSY_TIMEOUT", "Seconds a SQLite transaction waits for another writer."
    )
    db_pool_timeout: float = _setting(
        5.0, "MEMTRIAL_DB_POOL_TIMEOUT", "Seconds a request waits for a free database connection."
    )
    refit_queue_size: int = _setting(
        4,
        "MEMTRIAL_REFIT_QUEUE_SIZE",
        "Full-Bayes refit jobs a worker holds (queued or running), 1 to 10000; more get 429.",
    )
    cache_mb: float = _setting(
        256.0,
        "MEMTRIAL_CACHE_MB",
        "Megabytes one worker keeps of agents' engines and retrieval indexes together; beyond it the least recently used are evicted and reloaded from the database when next used.",
    )
    refit_engine: str = _setting(
        "dask",
        "MEMTRIAL_REFIT_ENGINE",
        "Where full-Bayes refits run: `dask` (the cluster `MEMTRIAL_DASK_SCHEDULER` names, else a local cluster of worker processes started on the first refit) or `threads` (a thread of the API worker).",
    )
    dask_scheduler: str | None = _setting(
        None,
        "MEMTRIAL_DASK_SCHEDULER",
        "Address of the Dask scheduler refits go to (`tcp://host:8786`); unset: a local cluster per API worker.",
    )
    refit_stale_seconds: float = _setting(
        30.0,
        "MEMTRIAL_REFIT_STALE_SECONDS",
        "A refit whose heartbeat is older than this (1 to 86400) is taken up by another API worker and run again (at most 3 runs).",
    )
    idempotency_hours: float = _setting(
        24.0,
        "MEMTRIAL_IDEMPOTENCY_HOURS",
        "How long an `Idempotency-Key` and its first answer are kept (1 to 87600 hours).",
    )
    idempotency_lease_seconds: float = _setting(
        30.0,
        "MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS",
        "Lease of a server-drafting request on its `Idempotency-Key` and its planned decision, renewed every third of it while the request runs (at most 3600). A request that fails releases both at once; one whose process died holds them until the lease ends: then a retry with the key runs again and the decision is marked `failed`.",
    )
    shutdown_seconds: float = _setting(
        10.0, "MEMTRIAL_SHUTDOWN_SECONDS", "On SIGTERM, how long open requests may finish before the server stops."
    )
    header_timeout_seconds: float = _setting(
        15.0,
        "MEMTRIAL_HEADER_TIMEOUT_SECONDS",
        "`memtrial serve`: a connection must deliver each complete request head within this many seconds of opening (or of its previous answer), or it is closed; 0: no deadline.",
    )
    body_timeout_seconds: float = _setting(
        20.0,
        "MEMTRIAL_BODY_TIMEOUT_SECONDS",
        "Longest pause between two parts of a request body; a longer one answers 408 and closes the connection (a slow but steady upload is served); 0: no limit.",
    )
    max_session_return: float = _setting(
        10.0,
        "MEMTRIAL_MAX_SESSION_RETURN",
        "Largest plausible simple return of one session in a portfolio settlement (10: +1000%); returns (or closes implying them) above it are refused with 422. Returns are fractions (0.012 for +1.2%): a session return of 50% or more in absolute value is accepted but answered with a `warnings` entry naming the asset (percentages given as fractions?).",
    )
    max_abs_utility: float = _setting(
        1e6,
        "MEMTRIAL_MAX_ABS_UTILITY",
        "Largest plausible absolute utility in a scored settlement; utilities beyond it are refused with 422. At most 1e100, the largest the engine learns from.",
    )
    log_level: str = _setting(
        "INFO",
        "MEMTRIAL_LOG_LEVEL",
        "Level of the service's logs on stderr (DEBUG, INFO, WARNING, ERROR); other libraries' records are logged from WARNING. Every line is one JSON object. DEBUG adds what ran for each request, never what it carried: each engine checkout (`source` cache or database, `ms`), each draft call (`provider`, `model`, `attempt`, `outcome`, `ms`), each refit job sent and finished, each answer replayed for an Idempotency-Key.",
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.auth_cache_seconds <= 5.0:
            raise ValueError(f"MEMTRIAL_AUTH_CACHE_SECONDS must be in [0, 5], got {self.auth_cache_seconds!r}")
        for item in dataclasses.fields(self):  # those with a range of their own name it below
            value = getattr(self, item.name)
            if item.name in _OWN_RANGE or not isinstance(value, int | float) or isinstance(value, bool):
                continue
            if not 0 <= value < math.inf:  # NaN passed a plain ">= 0", then refused every request it bounded
                raise ValueError(f"{item.metadata['env']} must be a finite number >= 0, got {value!r}")
        from service.ratelimit import TrustedProxies

        TrustedProxies(self.trusted_proxies)  # a malformed entry fails at start, naming it
        if self.redis_url is not None and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(
                f"MEMTRIAL_REDIS_URL must start with redis://, rediss:// or unix://, got {self.redis_url!r}"
            )
        # 0 would refuse every body, and give a model call no time limit at all (not "unlimited" by design): refused
        for name, value in (
            ("MEMTRIAL_MAX_BODY_BYTES", self.max_body_bytes),
            ("MEMTRIAL_LLM_TIMEOUT_SECONDS", self.llm_timeout_seconds),
        ):
            if not 1 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number >= 1, got {value!r}")
        if not 0.0 < self.idempotency_lease_seconds <= 3600.0:
            raise ValueError(
                f"MEMTRIAL_IDEMPOTENCY_LEASE_SECONDS must be in (0, 3600], got {self.idempotency_lease_seconds!r}"
            )
        # each of these was accepted, then failed every request or refit it governs (a time past the calendar's
        # end, a refit stale as soon as sent, a queue that holds none)
        for name, value, low, high in (
            ("MEMTRIAL_MAX_CLOCK_SKEW_SECONDS", self.max_clock_skew_seconds, 0, 31_536_000),  # a year
            # at least an hour: the purge drops every key older, a claim in progress or a lease (at most an hour) too
            ("MEMTRIAL_IDEMPOTENCY_HOURS", self.idempotency_hours, 1, 87_600),  # ten years
            ("MEMTRIAL_REFIT_STALE_SECONDS", self.refit_stale_seconds, 1, 86_400),  # a day
            ("MEMTRIAL_REFIT_QUEUE_SIZE", self.refit_queue_size, 1, 10_000),
        ):
            if not low <= value <= high:
                raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
        if not 0.0 < self.max_abs_utility <= MAX_UTILITY:  # the engine's own bound: what it can learn from
            raise ValueError(f"MEMTRIAL_MAX_ABS_UTILITY must be in (0, {MAX_UTILITY:g}], got {self.max_abs_utility!r}")
        if not 1 <= self.max_drafts_per_decision <= MAX_DRAFTS_CEILING:
            raise ValueError(
                f"MEMTRIAL_MAX_DRAFTS_PER_DECISION must be in [1, {MAX_DRAFTS_CEILING}], got {self.max_drafts_per_decision!r}"
            )
        if not 0.0 < self.db_lock_timeout < self.db_statement_timeout:
            raise ValueError(
                f"MEMTRIAL_DB_LOCK_TIMEOUT must be > 0 and shorter than MEMTRIAL_DB_STATEMENT_TIMEOUT ({self.db_statement_timeout!r}), got {self.db_lock_timeout!r}"
            )
        if self.embedder not in ("auto", "onnx", "torch"):
            raise ValueError(f"MEMTRIAL_EMBEDDER must be auto, onnx or torch, got {self.embedder!r}")
        scheduler = (
            None if self.dask_scheduler is None else re.fullmatch(r"(?:[a-z]+://)?\S+:(\d+)", self.dask_scheduler)
        )
        if self.dask_scheduler is not None and (scheduler is None or not 1 <= int(scheduler.group(1)) <= 65535):
            raise ValueError(
                f"MEMTRIAL_DASK_SCHEDULER must be a scheduler's address, tcp://host:port (or host:port), got {self.dask_scheduler!r}"
            )
        if self.refit_engine not in ("dask", "threads"):
            raise ValueError(f"MEMTRIAL_REFIT_ENGINE must be dask or threads, got {self.refit_engine!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError(f"MEMTRIAL_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}")
        problem = database_url_problem(self.database_url)
        if problem is not None:
            raise ValueError(f"MEMTRIAL_DATABASE_URL (--database-url) {problem}")
        if self.redis_url is not None and not self.redis_url.startswith("unix://"):
            try:
                urlsplit(self.redis_url).port  # noqa: B018  # parsing it is the check
            except ValueError:
                raise ValueError("MEMTRIAL_REDIS_URL has a port that is not a number in [0, 65535]") from None
        if self.rate_limit_file and not os.path.isdir(os.path.dirname(os.path.abspath(self.rate_limit_file))):
            raise ValueError(f"MEMTRIAL_RATE_LIMIT_FILE must be in a folder that exists, got {self.rate_limit_file!r}")

    @property
    def database_timeouts(self) -> DatabaseTimeouts:
        return DatabaseTimeouts(
            self.db_connect_timeout,
            self.db_statement_timeout,
            self.db_busy_timeout,
            self.db_pool_timeout,
            self.db_lock_timeout,
        )

    @classmethod
    def from_env(cls) -> Settings:
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            raw = os.environ.get(item.metadata["env"])
            if raw is not None:
                values[item.name] = _parse(item, raw)
        return cls(**values)


#: the MEMTRIAL_* variables memtrial reads besides the service's settings: the clients' and the MCP server's, the
#: embedding model's and the full-Bayes learner's, the backtests' data, the supervisor a server's workers watch, and
#: the test suite's own (``docs/testing.md``)
OTHER_VARIABLES = frozenset(
    {
        "MEMTRIAL_API_KEY",
        "MEMTRIAL_URL",
        "MEMTRIAL_MCP_TOKEN",
        "MEMTRIAL_TORCH_THREADS",
        "MEMTRIAL_ONNX_CACHE",
        "MEMTRIAL_JAX_CACHE",
        "MEMTRIAL_DATA",
        "MEMTRIAL_VARIANTS",
        "MEMTRIAL_SUPERVISOR_PID",
        "MEMTRIAL_PYTHON",
        "MEMTRIAL_TYPESCRIPT_INSTALLED",
    }
)
_TEST_PREFIXES = ("MEMTRIAL_TEST_", "MEMTRIAL_FUZZ_")


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``MEMTRIAL_*`` names in ``environ`` that memtrial does not read (a misspelt setting is otherwise ignored
    without a word), each with the setting it is closest to, if any."""
    known = {item.metadata["env"] for item in dataclasses.fields(Settings)} | OTHER_VARIABLES
    unknown = sorted(
        n for n in environ if n.startswith("MEMTRIAL_") and n not in known and not n.startswith(_TEST_PREFIXES)
    )
    return [(name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.8)), None)) for name in unknown]


def sqlite_file(url: str) -> str | None:
    """The absolute path of the SQLite file ``url`` names (a relative path read from the working folder), or None
    for another database, an in-memory one or a URI filename."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return os.path.abspath(path)


def database_url_problem(url: str) -> str | None:
    """Why the service cannot run on the database ``url`` names (None: it can, as far as the URL tells): a URL
    SQLAlchemy cannot read, a database other than SQLite or PostgreSQL, an in-memory SQLite database (each
    connection would get an empty one of its own) or a SQLite file in a folder that does not exist. The URL is
    shown without its password."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "is not a database URL: give sqlite:///path/to/file.db or postgresql://user@host/db"
    shown = parsed.render_as_string(hide_password=True)
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        return f"must name a SQLite or a PostgreSQL database, got {backend!r} ({shown})"
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:") or str(parsed.database).startswith("file::memory:"):
            return f"must name a SQLite file: an in-memory database would be empty in each connection ({shown})"
        folder = os.path.dirname(os.path.abspath(parsed.database))
        if not os.path.isdir(folder):
            return f"names a SQLite file in a folder that does not exist, {folder} ({shown})"
    return None


def _parse(item: dataclasses.Field[Any], raw: str) -> Any:
    kind = item.type
    name = item.metadata["env"]
    try:
        if kind == "bool":
            if raw not in ("0", "1", "true", "false"):
                raise ValueError
            return raw in ("1", "true")
        if kind == "int":
            if not re.fullmatch(r"-?\d+", raw):  # int() also takes "1_000" and " 500 ": a typo would pass
                raise ValueError
            return int(raw)
        if kind == "float":  # NaN and inf parse, and are refused by the ranges with their own words
            if not re.fullmatch(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)", raw):
                raise ValueError
            return float(raw)
    except ValueError:
        raise ValueError(
            f"{name} must be {'0, 1, true or false' if kind == 'bool' else 'an integer' if kind == 'int' else 'a number'}, got {raw!r}"
        ) from None
    return raw


def configuration_table() -> str:
    """The Markdown table of every setting: variable, default, meaning."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for item in dataclasses.fields(Settings):
        default = item.default
        shown = (
            "unset" if default is None else ("1" if default is True else "0" if default is False else f"`{default}`")
        )
        lines.append(f"| `{item.metadata['env']}` | {shown} | {item.metadata['help']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(configuration_table())
