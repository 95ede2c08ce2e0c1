"""The README's example runs as written, its commands are the ones CI runs, and it stays short: the guides
live on the documentation site (tests/meta/test_site.py runs their code)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_quick_start_runs(capsys):
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "from memtrial import" in b]
    assert blocks, "the README has no python quick start"
    exec(compile(blocks[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "gate anytime: insufficient evidence" in printed and "trust weight 0" in printed  # the default dial
    assert "bonds after a rate shock" in printed


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command.endswith("pytest --all"), "CI must run every tier"
    # .ci/run installs as the README does and, once its background installs are done, runs the same tests
    install, run = test_command.rsplit(" && ", 1)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in lines and lines[-1] == run
    assert lines.index(install) < len(lines) - 1


def test_readme_is_short_and_its_links_into_the_site_resolve():
    """At most 200 lines: what memtrial is, the two commands, one example, the headline figures and links
    into the documentation site (the walk-through, the clients and every guide live there, tested by
    tests/meta/test_site.py)."""
    assert len(README.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(local) >= 20 and sorted(link for link in local if not (ROOT / link).is_file()) == []
    for page in ("docs/quickstart.md", "docs/concepts.md", "docs/results/index.md", "docs/method.md"):
        assert f"]({page})" in README, page


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
