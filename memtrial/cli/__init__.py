"""The ``memtrial`` command line: the console script (:func:`main`, in :mod:`~memtrial.cli.console`), its
Typer commands (:mod:`~memtrial.cli.commands`) and the demo world (:mod:`~memtrial.cli.demo`).

``import memtrial`` does not import this package; Typer loads only when a command runs.
"""

from memtrial.cli.console import main

__all__ = ["main"]
