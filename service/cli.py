"""``memtrial serve`` and ``memtrial tenants``: mounted lazily by memtrial.cli."""

from __future__ import annotations

import os

import typer

from service.settings import DEFAULT_DATABASE_URL

__all__ = ["create_tenant", "serve", "tenants"]

DATABASE_HELP = "SQLAlchemy URL of the database (default: MEMTRIAL_DATABASE_URL, else sqlite:///./memtrial.db)."


def _database_url(option: str | None) -> str:
    return option or os.environ.get("MEMTRIAL_DATABASE_URL", DEFAULT_DATABASE_URL)


def serve(
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    migrate: bool = typer.Option(True, help="Upgrade the database schema before serving."),
) -> None:
    """Run the REST service (migrates the database first)."""
    import uvicorn

    from service.migrations import upgrade

    url = _database_url(database_url)
    os.environ["MEMTRIAL_DATABASE_URL"] = url
    if migrate:
        upgrade(url)
    typer.echo(f"memtrial service on http://{host}:{port} (database {url.split('@')[-1]})")
    uvicorn.run("service.app:create_app_from_env", factory=True, host=host, port=port, workers=workers, log_level="warning")


tenants = typer.Typer(help="Manage tenants and their API keys.", no_args_is_help=True)


@tenants.callback()
def _tenants() -> None:
    """Manage tenants and their API keys."""


@tenants.command("create")
def create_tenant(
    name: str = typer.Argument(..., help="Tenant name (unique)."),
    database_url: str | None = typer.Option(None, "--database-url", help=DATABASE_HELP),
) -> None:
    """Create a tenant and print its API key (shown once; only its hash is stored)."""
    from service.db import make_engine, make_session_factory, transaction
    from service.migrations import upgrade
    from service.tenancy import TenantExistsError, create_tenant_with_key

    url = _database_url(database_url)
    upgrade(url)
    try:
        with transaction(make_session_factory(make_engine(url))) as session:
            tenant_id, key = create_tenant_with_key(session, name)
    except TenantExistsError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=2) from None
    typer.echo(f"tenant {name} ({tenant_id})")
    typer.echo(f"api key: {key}")
