"""The ``memtrial`` console script.

The command line itself (:mod:`memtrial.cli.commands`) needs Typer, which the
service and backtest extras install; the pure core does not. Without it, the
command says so in one line instead of a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main"]


def main() -> None:
    """Console-script entry point."""
    try:
        from memtrial.cli.commands import app
    except ModuleNotFoundError as error:
        from memtrial.errors import install_hint

        print(
            f"error: the memtrial command needs its command-line tools ({error.name} is not installed): "
            f"{install_hint('service')} (or [backtest], or [all])",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    app()


def __getattr__(name: str) -> Any:
    """``memtrial.cli.console.app`` and ``LAZY_COMMANDS`` for callers of the Typer app itself."""
    if name in ("app", "LAZY_COMMANDS"):
        from memtrial.cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module 'memtrial.cli.console' has no attribute {name!r}")
