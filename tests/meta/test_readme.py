"""The README's quick start runs as written, and its commands are the ones CI runs."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_quick_start_runs(capsys):
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "from memtrial import" in b]
    assert blocks, "the README has no python quick start"
    exec(compile(blocks[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "gate anytime: insufficient evidence (0 scores); trust weight 0" in printed  # the default: the dial
    assert "bonds after a rate shock" in printed


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()
    assert test_command.endswith("pytest --all"), "CI must run every tier"


@pytest.mark.slow  # a live server
def test_readme_rest_walkthrough_works_as_printed(tmp_path):
    import os
    import subprocess

    from live_server import Server

    url = f"sqlite:///{tmp_path / 'walkthrough.db'}"
    server = Server(url)
    try:
        env = {**os.environ, "MEMTRIAL_URL": server.url, "MEMTRIAL_DATABASE_URL": url}
        result = subprocess.run(
            ["bash", "-c", _walkthrough()],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith('{"ok": true, "n_entries": 2,')
    assert "trust weight 0 from log e-value 0: all on the anchored mixture with q = 1 on the reference" in result.stdout
    assert lines[-2].startswith("contributions in utility per decision, largest first: ")
    named = dict(re.findall(r'"([^"]+)" (-?\d+\.\d{5})', lines[-2]))  # each lesson by its text, not its id
    assert sorted(named) == [
        "Cash protected the book in a volatile m…",
        "Equities fell after a surprise inflatio…",
        "Gold held up during a banking scare.",
        "Long bonds rallied when the central ban…",
    ]
    assert all(float(c) != 0 for c in named.values())  # drafts that differ by subset: every lesson gets a contrast
    assert len(set(named.values())) == 4
    assert not re.search(r"[0-9a-f]{32}", "\n".join(lines[:-1]))  # no opaque id where people read


def _walkthrough():
    block = re.search(r"## REST walk-through.*?```bash\n(.*?)```", README, re.DOTALL)
    assert block, "the README has no REST walk-through"
    return block.group(1)


@pytest.mark.slow  # a live server
def test_readme_walkthrough_shows_the_error_when_the_key_is_from_another_database(tmp_path):
    import os
    import subprocess

    from live_server import Server

    server = Server(f"sqlite:///{tmp_path / 'server.db'}")
    try:
        env = {**os.environ, "MEMTRIAL_URL": server.url, "MEMTRIAL_DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"}
        result = subprocess.run(
            ["bash", "-c", _walkthrough()],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.stop()
    assert result.returncode != 0
    assert 'error: {"code": "unauthorized"' in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == "" and "not_found" not in result.stderr  # it stopped at the first error


@pytest.mark.slow  # a live server
def test_readme_python_client_example_runs_against_a_live_server(tmp_path, capsys):
    import os

    from live_server import Server
    from support import make_tenant

    block = next(
        b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "MemtrialClient(" in b and "Async" not in b
    )
    url = f"sqlite:///{tmp_path / 'client.db'}"
    server = Server(url)
    try:
        os.environ["MEMTRIAL_URL"], os.environ["MEMTRIAL_API_KEY"] = server.url, make_tenant(url, "readme")
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.environ.pop("MEMTRIAL_URL", None)
        os.environ.pop("MEMTRIAL_API_KEY", None)
        server.stop()
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("gate anytime closed: ") and "trust weight" in printed[0]  # the default: the dial
    assert printed[1].startswith("contributions in utility per decision, largest first: "), printed
    contributions = re.findall(
        r"\" ([+-]?[0-9.]+)(?:;|$)", printed[1]
    )  # drafts that differ by subset: every lesson learns
    assert len(contributions) == 4 and all(float(c) != 0 for c in contributions), printed
    assert printed[2] == "['settled', 'settled', 'settled']"
    values = [
        re.fullmatch(r"([+-][0-9.]+) sd ([0-9.]+) \[([+-][0-9.]+), ([+-][0-9.]+)\] .+", line) for line in printed[3:7]
    ]
    assert all(values), printed
    for mean, sd, lower, upper in (tuple(float(x) for x in match.groups()) for match in values if match):
        assert mean != 0 and sd > 0 and lower < mean < upper, printed
    assert printed[7] == "404 not_found decision_id"


@pytest.mark.slow  # a live server
def test_readme_async_client_example_runs_against_a_live_server(tmp_path, capsys):
    import os

    from live_server import Server
    from support import make_tenant

    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "AsyncMemtrialClient" in b)
    url = f"sqlite:///{tmp_path / 'async.db'}"
    server = Server(url)
    try:
        os.environ["MEMTRIAL_URL"], os.environ["MEMTRIAL_API_KEY"] = server.url, make_tenant(url, "readme-async")
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    finally:
        os.environ.pop("MEMTRIAL_URL", None)
        os.environ.pop("MEMTRIAL_API_KEY", None)
        server.stop()
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("dial {") and printed[1].endswith(" decided")


def test_readme_scored_decision_example_runs(capsys):
    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "decide_scored" in b)
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("dial {'rate cuts lift stocks': ") and "'earnings beats lift stocks'" in printed


def test_the_library_imports_from_the_folder_that_holds_the_checkout(tmp_path):
    """A checkout named memtrial, seen from its parent folder, must not shadow the installed package
    (the README installs in compat editable mode, so the package's own folder is found first)."""
    import subprocess
    import sys

    (tmp_path / "memtrial").symlink_to(ROOT, target_is_directory=True)
    result = subprocess.run(
        [sys.executable, "-c", "from memtrial import EngineConfig, MemTrial; print(MemTrial.__module__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip() == "memtrial.engine.lifecycle", (
        f"{result.stderr[-600:]}\ninstall with the README's command (editable_mode=compat)"
    )
