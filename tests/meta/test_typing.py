"""The tree type-checks and lints: mypy --strict over memtrial, service and backtest, ruff's rules and its
formatting (all configured in pyproject.toml), run by the test suite so CI runs them on every change.

mypy keeps its incremental cache in ``.mypy_cache`` at the root: the first run in a clone checks the whole tree,
each later run only what changed (docs/testing.md has the figures)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.early  # with no cache (a fresh clone) the fast tier's longest test: started first, it runs beside the rest
def test_core_service_and_backtest_pass_mypy_strict():
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "memtrial", "service", "backtest"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_passes_ruff_check():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_formatted_as_ruff_formats_it():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
