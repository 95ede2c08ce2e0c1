"""The TypeScript client (``clients/typescript``) and its example agent (``examples/typescript``), run by
their own test commands (``npm ci``, then ``npm test``: ``node --test`` against a live ``memtrial serve``
each starts on SQLite), and the check that the client's types are generated from the current OpenAPI
document. Without node and npm these are skipped, saying so; everything else about the client's table of
operations is checked here in Python.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
EXAMPLE = ROOT / "examples" / "typescript"
ROW = re.compile(
    r'^\s+(\w+): op\("(\w+)", "([^"]+)"(, \{[^}]*\})?\)', re.MULTILINE
)  # flags: creates, reads, query, ...
NO_NODE = "node and npm are not installed: the TypeScript client's and example's tests did NOT run (install Node >= 20)"


def npm(folder: Path, *args: str, timeout: float = 600) -> str:
    """``npm ARGS`` in ``folder`` with this Python as the one the tests start servers with; its output."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(NO_NODE)
    env = {**os.environ, "MEMTRIAL_PYTHON": sys.executable}
    result = subprocess.run(
        ["npm", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"npm {' '.join(args)} in {folder.relative_to(ROOT)} failed:\n{output[-6000:]}"
    return output


#: ``.ci/run`` installs both packages with ``npm ci`` in the background, beside the Python install, and sets this
#: once that succeeded: the tests then use those installs instead of running ``npm ci`` again
INSTALLED_BY_CI = "MEMTRIAL_TYPESCRIPT_INSTALLED"


def npm_ci(folder: Path) -> None:
    """``npm ci`` in ``folder``, unless ``.ci/run`` already ran it there (``MEMTRIAL_TYPESCRIPT_INSTALLED=1``)."""
    if os.environ.get(INSTALLED_BY_CI) == "1" and (folder / "node_modules").is_dir():
        return
    npm(folder, "ci", "--no-audit", "--no-fund")


@pytest.fixture(scope="module")
def installed_client() -> Path:
    npm_ci(CLIENT)  # its prepare script builds dist/
    return CLIENT


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_typescript_table_has_every_operation_of_the_python_client_with_the_same_route() -> None:
    from service.operations import Operation, Operations

    python = {
        _camel(name): (row.method, row.path, row.creates, row.reads)
        for name, row in vars(Operations).items()
        if isinstance(row, Operation)
    }
    typescript = {
        name: (method.upper(), path, "creates: true" in flag, "reads: true" in flag)
        for name, method, path, flag in ROW.findall((CLIENT / "src" / "operations.ts").read_text())
    }
    assert typescript == python


def test_typescript_package_is_committed_with_its_lock_files_and_without_build_outputs() -> None:
    for folder in (CLIENT, EXAMPLE):
        assert (folder / "package-lock.json").is_file()
    tracked = subprocess.run(
        ["git", "ls-files", "clients/typescript", "examples/typescript"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    assert tracked and not [p for p in tracked if "/node_modules/" in p or "/dist/" in p]


@pytest.mark.slow  # npm ci, and the OpenAPI document regenerated
def test_typescript_types_are_generated_from_the_current_openapi_document(installed_client: Path) -> None:
    assert "src/schema.d.ts is up to date" in npm(installed_client, "run", "check-types")


@pytest.mark.slow  # npm ci, and node tests against a live server
def test_typescript_client_tests_pass_against_a_live_server(installed_client: Path) -> None:
    output = npm(installed_client, "test")
    assert re.search(r"^# fail 0$", output, re.MULTILINE) and not re.search(r"^# pass 0$", output, re.MULTILINE)


@pytest.mark.slow  # npm ci, a live server and the fake model server
def test_typescript_example_agent_runs_against_a_live_server(installed_client: Path) -> None:
    npm_ci(EXAMPLE)
    output = npm(EXAMPLE, "test")
    assert re.search(r"^# pass 1$", output, re.MULTILINE) and re.search(r"^# fail 0$", output, re.MULTILINE)
