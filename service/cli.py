"""``memtrial serve`` and ``memtrial tenants``: mounted lazily by memtrial.cli.commands."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import typer

from service.settings import DEFAULT_DATABASE_URL

__all__ = ["create_tenant", "serve", "shared_rate_limit_file", "tenants"]

DATABASE_HELP = "SQLAlchemy URL of the database (default: MEMTRIAL_DATABASE_URL, else sqlite:///./memtrial.db)."


def _database_url(option: str | None) -> str:
    return option or os.environ.get("MEMTRIAL_DATABASE_URL", DEFAULT_DATABASE_URL)


#: the names of this machine's own database server, one name for all
_LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1", "[::1]"})
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306}


def database_identity(database_url: str) -> str:
    """One name for one database, however its URL spells it: a SQLite file by its real path; a server's
    database by backend (without the driver), host (this machine's names as one; a ``host`` option names a
    socket folder or several hosts), port (its default where none is given) and name (PostgreSQL's default: the
    user's), without the user, the password or the other options."""
    from sqlalchemy.engine import make_url

    from service.jobs import sendable_url
    from service.settings import sqlite_file

    path = sqlite_file(database_url)
    if path is not None:
        return f"sqlite:{os.path.realpath(path)}"
    url = make_url(sendable_url(database_url))
    backend = url.get_backend_name()
    if backend == "sqlite":  # in memory: each process its own
        return url.render_as_string(hide_password=False)
    given = url.query.get("host")  # a Unix socket's folder, or several hosts, given as options
    given = ",".join(sorted(given)) if isinstance(given, tuple) else given
    host = url.host or given or ""
    host = host if host.startswith("/") else host.lower()  # a folder's name keeps its case
    host = "localhost" if host in _LOCAL_HOSTS else host
    # PostgreSQL's database defaults to the user's name
    database = url.database or (url.username if backend == "postgresql" else None) or ""
    return f"{backend}://{host}:{url.port or _DEFAULT_PORTS.get(backend, '')}/{database}"


def shared_rate_limit_file(database_url: str) -> str:
    """The rate-limit table every server of this machine on ``database_url`` shares (its workers and its
    replicas), in a folder of this user's only: replicas count each key's requests together, whichever
    spelling of the database's URL each was given (:func:`database_identity`)."""
    import hashlib
    import stat
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"memtrial-{os.getuid()}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # its name is known to every user of the machine: one made before by another user (or a link) would let
    # that user change the counters, or point the file at one of this user's files, which the server then writes
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        what = "a link" if stat.S_ISLNK(found.st_mode) else f"owner uid {found.st_uid}, mode {found.st_mode & 0o777:#o}"
        raise ValueError(
            f"the rate-limit folder {folder} is not this user's alone ({what}): another user could change the "
            "counters or aim them at a file of yours; remove it, or set MEMTRIAL_RATE_LIMIT_FILE to a file in a "
            "folder of your own"
        )
    digest = hashlib.sha256(database_identity(database_url).encode()).hexdigest()[:24]
    return os.path.join(folder, f"rate-limits-{digest}")


def http_address(host: str, port: int) -> str:
    """The server's address as a URL: an IPv6 host in brackets (``http://[::1]:8000``)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (None: it can). Binds as the server will, with
    SO_REUSEADDR: a port a crashed server left in TIME-WAIT is free, one a live process listens on is not."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)
        except OSError as error:
            return error.strerror or str(error)
    return None


def serve(
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, min=1, max=65535, help="Port to listen on."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    migrate: bool = typer.Option(True, help="Upgrade the database schema before serving."),
) -> None:
    """Run the REST service (migrates the database first)."""
    import signal
    import sys

    import uvicorn

    from memtrial.drafting.embeddings import torch_threads
    from memtrial.errors import InputError
    from service.providers import LLMConfigError, load_providers
    from service.settings import Settings, unknown_variables

    url = _database_url(database_url)
    os.environ["MEMTRIAL_DATABASE_URL"] = url
    try:
        settings = Settings.from_env()
        load_providers(settings.llm_config)
        torch_threads()  # read when the model loads, in the background: a bad value would leave it never ready
    except (ValueError, LLMConfigError, InputError) as error:
        raise _fail(error) from None
    for name, nearest in unknown_variables(os.environ):
        hint = f" (did you mean {nearest}?)" if nearest else ""
        typer.echo(f"warning: {name} is not a memtrial setting: ignored{hint}", err=True)
    problem = port_problem(host, port)
    if problem is not None:
        raise _fail(f"cannot listen on {host}:{port}: {problem}")
    if migrate:
        _migrate(url)
    else:
        _check_exists(url)
    if not os.environ.get("MEMTRIAL_RATE_LIMIT_FILE"):
        # every server of this machine on this database (its workers, and replicas) counts rate limits together
        try:
            os.environ["MEMTRIAL_RATE_LIMIT_FILE"] = shared_rate_limit_file(url)
        except ValueError as error:
            raise _fail(error) from None
    metrics_folder = None
    if workers > 1:
        os.environ["MEMTRIAL_SUPERVISOR_PID"] = str(os.getpid())
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # one /metrics adding up every worker's (service.metrics)
            import tempfile

            metrics_folder = tempfile.mkdtemp(prefix="memtrial-metrics-")
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_folder
    import logging

    from service.logs import configure_logging

    configure_logging(settings.log_level)  # from here on, every line on stderr is a JSON record
    logging.getLogger("memtrial.service").info(
        "memtrial service on %s (database %s)", http_address(host, port), database_identity(url)
    )
    # uvicorn re-raises the SIGTERM it shut down for once it has restored this handler: exit through
    # Python, with the status a SIGTERM death would give
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        _run(uvicorn, host, port, workers, settings)
    finally:
        if metrics_folder is not None:
            import shutil

            shutil.rmtree(metrics_folder, ignore_errors=True)


def _run(uvicorn: Any, host: str, port: int, workers: int, settings: Any) -> None:
    from service.logs import UVICORN_LOG_CONFIG
    from service.server import GuardedH11Protocol

    uvicorn.run(
        "service.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        log_config=UVICORN_LOG_CONFIG,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_seconds)),
        http=GuardedH11Protocol,
        # the client address is the peer's; X-Forwarded-For is read by the app, from MEMTRIAL_TRUSTED_PROXIES only
        proxy_headers=False,
    )


tenants = typer.Typer(help="Manage tenants and their API keys.", no_args_is_help=True, add_completion=False)


@tenants.callback()
def _tenants() -> None:
    """Manage tenants and their API keys."""


def _check_exists(url: str) -> None:
    """A SQLite file served without migrating must exist: opening it would create an empty one, never migrated."""
    from service.settings import sqlite_file

    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        raise _fail(
            f"--no-migrate: the SQLite database {path} does not exist (serving it would create it empty); "
            "start once without --no-migrate to create and migrate it"
        )


def _migrate(url: str) -> None:
    """Upgrade the database's schema, or end the command in one line naming the database and what went wrong."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from memtrial.errors import MemtrialError
    from service.migrations import upgrade
    from service.settings import database_url_problem

    problem = database_url_problem(url)
    if problem is not None:
        raise _fail(f"MEMTRIAL_DATABASE_URL (--database-url) {problem}")
    try:
        upgrade(url)
    except (SQLAlchemyError, ImportError) as error:  # ImportError: the URL names a driver that is not installed
        shown = make_url(url).render_as_string(hide_password=True)
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise _fail(f"cannot open or migrate the database {shown}: {type(error).__name__}: {reason}") from None
    except MemtrialError as error:  # a migration found a stored state it cannot convert: its steps were undone
        shown = make_url(url).render_as_string(hide_password=True)
        raise _fail(
            f"cannot migrate the database {shown}: {type(error).__name__}: {error} "
            "(the migration was undone: the schema stays at its revision)"
        ) from None


@contextlib.contextmanager
def _session(database_url: str | None, *, create: bool = False):  # type: ignore[no-untyped-def]
    """One transaction on the migrated database; the database refusing it (read-only, full, locked past its
    timeout) ends the command in one line naming the database, nothing changed. Without ``create``, a SQLite
    file that does not exist is refused (a command run in the wrong folder would make an empty database)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from service.db import make_engine, make_session_factory, transaction
    from service.settings import database_url_problem, sqlite_file

    url = _database_url(database_url)
    problem = database_url_problem(url)
    if problem is not None:
        raise _fail(f"MEMTRIAL_DATABASE_URL (--database-url) {problem}")
    path = sqlite_file(url)
    if not create and path is not None and not os.path.exists(path):
        raise _fail(
            f"the SQLite database {path} does not exist: give --database-url (or MEMTRIAL_DATABASE_URL) the "
            "service's database; `memtrial tenants create` makes one"
        )
    _migrate(url)
    try:
        with transaction(make_session_factory(make_engine(url))) as session:
            yield session
    except SQLAlchemyError as error:
        shown = make_url(url).render_as_string(hide_password=True)
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise _fail(
            f"the database {shown} refused the command ({type(error).__name__}: {reason}); nothing was changed"
        ) from None


def _fail(error: Exception | str) -> typer.Exit:
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(code=2)


@tenants.command("create")
def create_tenant(
    name: str = typer.Argument(..., help="Tenant name (unique)."),
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
) -> None:
    """Create a tenant and print its API key (shown once; only its hash is stored)."""
    from service.tenancy import TenantError, create_tenant_with_key

    try:
        with _session(database_url, create=True) as session:
            tenant_id, key = create_tenant_with_key(session, name)
    except TenantError as error:
        raise _fail(error) from None
    typer.echo(f"tenant {name} ({tenant_id})")
    typer.echo(f"api key: {key}")


@tenants.command("list")
def list_tenants(database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP)) -> None:
    """List tenants: id, active key prefixes, revoked keys, agents."""
    from service.tenancy import list_tenants as summaries

    with _session(database_url) as session:
        rows = summaries(session)
    if not rows:
        typer.echo("no tenants")
        return
    typer.echo(f"{'name':<24} {'id':<32} {'created':<20} {'active keys':<24} {'revoked':>7} {'agents':>6}")
    for row in rows:
        keys = ",".join(row.active_keys) or "-"
        typer.echo(
            f"{row.name:<24} {row.id:<32} {row.created_at:%Y-%m-%d %H:%M:%S} {keys:<24} {row.revoked_keys:>7} {row.agents:>6}"
        )


@tenants.command("revoke")
def revoke(
    name: str = typer.Argument(..., help="Tenant name."),
    key_prefix: str | None = typer.Option(
        None, "--key", help="Revoke only the active key starting with this prefix (as `tenants list` shows it)."
    ),
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
) -> None:
    """Revoke a tenant's API keys (all active ones, or one by prefix). Servers refuse them within 5 s."""
    from service.tenancy import TenantError, revoke_keys

    try:
        with _session(database_url) as session:
            count = revoke_keys(session, name, key_prefix)
    except TenantError as error:
        raise _fail(error) from None
    typer.echo(f"revoked {count} key{'s' if count != 1 else ''} of {name}")


@tenants.command("rotate")
def rotate(
    name: str = typer.Argument(..., help="Tenant name."),
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
) -> None:
    """Issue a new API key for a tenant and revoke its other keys; prints the new key once."""
    from service.tenancy import TenantError, rotate_key

    try:
        with _session(database_url) as session:
            key, revoked = rotate_key(session, name)
    except TenantError as error:
        raise _fail(error) from None
    typer.echo(f"revoked {revoked} key{'s' if revoked != 1 else ''} of {name}")
    typer.echo(f"api key: {key}")
