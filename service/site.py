"""``memtrial docs``: the documentation site of this checkout (``mkdocs.yml`` and ``docs/``), served locally
or built into a folder, offline. Mounted lazily by :mod:`memtrial.cli.commands`; it needs the ``[docs]``
extra, which importing this module checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mkdocs  # noqa: F401  (the [docs] extra: without it the command says which install adds it)
import typer

from service.cli import port_problem

__all__ = ["SITE_CONFIG", "docs", "mkdocs_command"]

#: the site's configuration, at the root of the checkout memtrial is installed from
SITE_CONFIG = Path(__file__).resolve().parents[1] / "mkdocs.yml"


def mkdocs_command(build: Path | None, host: str, port: int) -> list[str]:
    """``mkdocs serve`` on host:port, or ``mkdocs build --strict`` into ``build`` (a broken link fails it)."""
    base = [sys.executable, "-m", "mkdocs"]
    if build is not None:
        return [*base, "build", "--strict", "--config-file", str(SITE_CONFIG), "--site-dir", str(build)]
    return [*base, "serve", "--strict", "--config-file", str(SITE_CONFIG), "--dev-addr", f"{host}:{port}"]


def docs(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8001, help="Port to listen on."),
    build: Path | None = typer.Option(None, "--build", help="Build the site into this folder instead of serving it."),
) -> None:
    """Serve the documentation site locally (offline), or build it with --build DIR."""
    if not SITE_CONFIG.is_file():
        typer.echo(f"error: the documentation site is built from a checkout; {SITE_CONFIG} does not exist", err=True)
        raise typer.Exit(code=2)
    if build is None:
        problem = port_problem(host, port)
        if problem:
            typer.echo(f"error: cannot listen on {host}:{port}: {problem} (choose another with --port)", err=True)
            raise typer.Exit(code=2)
        typer.echo(f"memtrial docs: http://{host}:{port}/ (Ctrl-C stops it)", err=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    try:
        code = subprocess.run(
            mkdocs_command(build, host, port), cwd=SITE_CONFIG.parent, env=env, check=False
        ).returncode
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code=code)
