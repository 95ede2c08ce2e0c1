"""``python -m memtrial.cli``: the ``memtrial`` command line, as the console script runs it."""

from memtrial.cli.console import main

main()
