"""The checkout itself: what a running service leaves in it is never offered to git."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_sqlite_database_and_its_side_files_are_ignored_by_git():
    # `memtrial serve` opens ./memtrial.db in write-ahead-log mode, which keeps two files beside it
    names = ["memtrial.db", "memtrial.db-wal", "memtrial.db-shm"]
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == names, result.stderr
