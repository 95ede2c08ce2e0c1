"""The import contracts hold: `lint-imports` checks each contract of pyproject.toml's [tool.importlinter]
(the core's packages in method order below service and backtest, the command line on top, and no import
circles in memtrial, service or backtest), run by the test suite so CI checks them on every change."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
# service/errors.py -> service/usecases/unit.py -> deps, store, idempotency -> service/errors.py; strict, so
# this mark must go once that circle is broken
PENDING: dict[str, str] = {}  # contract id -> why it cannot hold yet (none)


def _lint_imports(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", *arguments]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=environment)


@pytest.mark.parametrize(
    "contract",
    [
        pytest.param(c["id"], marks=pytest.mark.xfail(strict=True, reason=PENDING[c["id"]]))
        if c["id"] in PENDING
        else c["id"]
        for c in CONTRACTS
    ],
)
def test_import_contract_is_kept(contract: str):
    result = _lint_imports("--contract", contract)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_cover_the_layers_and_every_package():
    by_id = {c["id"]: c for c in CONTRACTS}
    assert by_id["layers"]["layers"][:3] == ["memtrial.cli", "service | backtest", "memtrial.engine"]
    assert by_id["layers"]["layers"][-1] == "memtrial.errors"
    acyclic = sorted(a for c in CONTRACTS if c["type"] == "acyclic_siblings" for a in c["ancestors"])
    assert acyclic == ["backtest", "memtrial", "service"]
