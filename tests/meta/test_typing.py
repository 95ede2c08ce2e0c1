"""The tree type-checks and lints: mypy --strict over memtrial, service and backtest, ruff's rules and its
formatting (all configured in pyproject.toml), run by the test suite so CI runs them on every change."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
