"""``memtrial docs``: the documentation site of this checkout (``mkdocs.yml`` and ``docs/``), served locally
or built into a folder, offline. Mounted lazily by :mod:`memtrial.cli.commands`; it needs the ``[docs]``
extra, which importing this module checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import mkdocs  # noqa: F401  (the [docs] extra: without it the command says which install adds it)
import typer

from service.cli import port_problem

__all__ = ["SITE_CONFIG", "docs", "mkdocs_command", "run_until_stopped"]

#: the site's configuration, at the root of the checkout memtrial is installed from
SITE_CONFIG = Path(__file__).resolve().parents[1] / "mkdocs.yml"


def mkdocs_command(build: Path | None, host: str, port: int) -> list[str]:
    """``mkdocs serve`` on host:port, or ``mkdocs build --strict`` into ``build`` (a broken link fails it)."""
    base = [sys.executable, "-m", "mkdocs"]
    if build is not None:
        return [*base, "build", "--strict", "--config-file", str(SITE_CONFIG), "--site-dir", str(build)]
    return [*base, "serve", "--strict", "--config-file", str(SITE_CONFIG), "--dev-addr", f"{host}:{port}"]


def build_folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot take a built site (building empties it first), or None: it is new, empty, or a site
    built before (its ``index.html`` and ``sitemap.xml``)."""
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if folder.resolve() in (SITE_CONFIG.parent, *SITE_CONFIG.parent.parents):
        return f"{folder} is the checkout or a folder above it"
    if folder.is_dir() and any(folder.iterdir()):
        if not ((folder / "index.html").is_file() and (folder / "sitemap.xml").is_file()):
            return f"{folder} holds files that are not a built site, and building empties the folder first: give a new or empty folder"
    return None


def docs(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8001, min=1, max=65535, help="Port to listen on."),
    build: Path | None = typer.Option(
        None,
        "--build",
        help="Build the site into this folder instead of serving it (relative to where the command runs; a new or "
        "empty folder, or a site built before: building empties it first).",
    ),
) -> None:
    """Serve the documentation site locally (offline), or build it with --build DIR."""
    if not SITE_CONFIG.is_file():
        typer.echo(f"error: the documentation site is built from a checkout; {SITE_CONFIG} does not exist", err=True)
        raise typer.Exit(code=2)
    if build is not None:
        build = build.expanduser().absolute()  # mkdocs runs in the checkout: a relative folder was taken there
        problem = build_folder_problem(build)
        if problem:
            typer.echo(f"error: --build {problem}; nothing was built or deleted", err=True)
            raise typer.Exit(code=2)
    if build is None:
        problem = port_problem(host, port)
        if problem:
            typer.echo(f"error: cannot listen on {host}:{port}: {problem} (choose another with --port)", err=True)
            raise typer.Exit(code=2)
        typer.echo(f"memtrial docs: http://{host}:{port}/ (Ctrl-C stops it)", err=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    raise typer.Exit(code=run_until_stopped(mkdocs_command(build, host, port), SITE_CONFIG.parent, env))


def run_until_stopped(command: list[str], cwd: Path, env: dict[str, str]) -> int:
    """Run ``command`` to its end, or until this process is asked to stop (Ctrl-C, SIGTERM or SIGHUP, as
    from a script, a service manager or a container's stop): then stop the child too and answer 0. Without
    it, a SIGTERM ended this process and left the site's server holding the port."""
    child = subprocess.Popen(command, cwd=cwd, env=env)
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        child.terminate()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            code = child.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the child as well (one process group): let it finish
            stopping = True
            try:
                code = child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stopping else code
