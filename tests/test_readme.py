"""The README's quick start runs as written, and its commands are the ones CI runs."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_quick_start_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    assert blocks, "the README has no python quick start"
    exec(compile(blocks[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "gate prequential: insufficient evidence" in printed
    assert "bonds after a rate shock" in printed


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_readme_rest_walkthrough_works_as_printed(tmp_path):
    import os
    import subprocess

    from live_server import Server

    block = re.search(r"## REST walk-through.*?```bash\n(.*?)```", README, re.DOTALL)
    assert block, "the README has no REST walk-through"
    url = f"sqlite:///{tmp_path / 'walkthrough.db'}"
    server = Server(url)
    try:
        env = {**os.environ, "MEMTRIAL_URL": server.url, "MEMTRIAL_DATABASE_URL": url}
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith('{"ok":true,"n_entries":2,')
    assert "anchored mixture with q = 0.9" in result.stdout
