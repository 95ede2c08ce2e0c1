"""The memtrial command line: core commands and lazily mounted sub-commands."""

import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from memtrial.cli import commands

runner = CliRunner()


def invoke(args):
    return runner.invoke(commands.app, args)


def test_demo_runs_a_small_world_and_reports_values():
    result = invoke(["demo", "--decisions", "24", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "memtrial" in result.output and "equal weight" in result.output
    assert "learned values" in result.output
    assert "chain intact" in result.output
    # the default configuration, as a new agent gets it: the trust dial, with quarantine
    said, gated = (
        " ".join(result.output.split()),
        invoke(["demo", "--decisions", "24", "--seed", "1", "--gate", "anytime"]),
    )
    assert "the trust dial" in said and "mean weight on memory" in said and "quarantined:" in said
    assert (
        gated.exit_code == 0 and "gate open on" in gated.output and "the anytime gate" in " ".join(gated.output.split())
    )


def test_the_demo_runs_the_default_configuration_and_keeps_quarantined_experiences_out():
    from memtrial.cli.demo import run_demo
    from memtrial.engine.config import EngineConfig

    result = run_demo(120, 0.5, 0)
    assert result.engine.config == EngineConfig(gamma=5.0)
    assert result.mean_trust_weight is not None and 0.0 <= result.mean_trust_weight <= 1.0
    assert set(result.quarantined) <= {e for e, kind in result.types.items() if kind < 0}  # only misleading ones
    entries = list(result.engine.history.log_entries())
    for experience_id in result.quarantined:  # nothing in quarantine was retrieved after it went there
        at = next(e.index for e in entries if e.kind == "quarantine" and e.payload["experience_id"] == experience_id)
        later = [e for e in entries if e.index > at and e.kind == "prediction"]
        assert later and all(experience_id not in {e_id for e_id, _ in e.payload["predictions"]} for e in later)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--gate", "magic"],
            "Invalid value for '--gate': must be one of dial, prequential, anytime or none, got 'magic'",
        ),
        (["--seed", "-1"], "Invalid value for '--seed'"),  # NumPy's own ValueError and a traceback before
    ],
)
def test_demo_with_a_bad_option_fails_naming_it(args, words):
    result = invoke(["demo", "--decisions", "24", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert words in " ".join(result.output.replace("│", " ").split())


def test_version_prints_the_package_version():
    result = invoke(["version"])
    assert result.output.strip() == "0.1.0"


@pytest.fixture
def probe_package(tmp_path, monkeypatch):
    package = tmp_path / "lazyprobe"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import typer
            LOADED = True
            app = typer.Typer()

            @app.command()
            def hello(name: str = "world") -> None:
                print(f"hello {name}")

            @app.command()
            def bye() -> None:
                print("bye")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(commands.LAZY_COMMANDS, "probe", ("lazyprobe", "app", "A probe sub-command.", "probe"))
    yield
    sys.modules.pop("lazyprobe", None)


def test_lazy_sub_command_is_listed_without_being_imported(probe_package):
    result = invoke(["--help"])
    assert result.exit_code == 0
    assert "A probe sub-command." in result.output
    assert "lazyprobe" not in sys.modules


def test_lazy_sub_command_runs_when_invoked(probe_package):
    result = invoke(["probe", "hello", "--name", "memtrial"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "hello memtrial"
    assert "lazyprobe" in sys.modules


def test_the_extra_a_sub_commands_help_names_is_shown_as_written(monkeypatch):
    # Typer reads help as Rich markup: '[probe]' was taken for a tag and the help read "(the  extra)"
    monkeypatch.setitem(commands.LAZY_COMMANDS, "needs", ("memtrial.errors", "app", "Needs [probe].", "probe"))
    assert "Needs [probe]." in invoke(["--help"]).output


def test_missing_sub_command_module_is_not_listed(monkeypatch):
    monkeypatch.setitem(commands.LAZY_COMMANDS, "ghost", ("no_such_module_here.cli", "app", "Ghost.", "ghost"))
    assert "Ghost." not in invoke(["--help"]).output


def test_help_loads_no_heavy_library():
    code = (
        "import sys\nfrom memtrial.cli.commands import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED:' + ','.join(m for m in ('torch', 'jax', 'litellm', 'sentence_transformers', 'fastapi', 'sqlalchemy') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "LOADED:"


def test_sub_command_whose_extra_is_missing_names_the_extra(tmp_path, monkeypatch):
    package = tmp_path / "needsextra"
    package.mkdir()
    (package / "__init__.py").write_text("import no_such_dependency_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(commands.LAZY_COMMANDS, "extra", ("needsextra", "app", "Needs an extra.", "special"))
    result = invoke(["extra"])
    assert result.exit_code == 2
    assert "needs the special extra (no_such_dependency_here is not installed)" in result.output
    assert (
        "pip install -e '.[special]' --config-settings editable_mode=compat in the memtrial checkout" in result.output
    )


def test_console_script_without_typer_says_which_extra_to_install():
    code = "import sys\nsys.modules['typer'] = None\nfrom memtrial.cli.console import main\nmain()\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2
    assert (
        "pip install -e '.[service]' --config-settings editable_mode=compat in the memtrial checkout" in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_console_script_runs_the_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "memtrial.cli", "version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "0.1.0"


def test_docs_without_the_docs_extra_names_it():
    code = (
        "import sys\nsys.modules['mkdocs'] = None\nfrom memtrial.cli.commands import app\n"
        "try:\n    app(['docs', '--build', 'out'])\nexcept SystemExit as exit:\n    sys.exit(exit.code)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2
    assert "'memtrial docs' needs the docs extra" in result.stderr
    assert "pip install -e '.[docs]' --config-settings editable_mode=compat in the memtrial checkout" in result.stderr


def test_docs_on_a_busy_port_says_so_and_serves_nothing():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = invoke(["docs", "--port", str(port)])
    assert result.exit_code == 2
    assert f"error: cannot listen on 127.0.0.1:{port}" in result.output
    assert "choose another with --port" in result.output


@pytest.mark.slow  # a live documentation server (its first build takes several seconds)
def test_docs_stopped_by_sigterm_stops_its_server_and_frees_the_port():
    """A script, a service manager or a container stops ``memtrial docs`` with SIGTERM: the site's server
    stops with it (it used to keep serving, holding the port, after ``memtrial docs`` had gone)."""
    import signal
    import socket
    import urllib.request

    from support import wait_until

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [sys.executable, "-m", "memtrial.cli", "docs", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                return page.status == 200
        except OSError:
            return False

    try:
        wait_until(answers, 120, "the documentation site serving")
        served.send_signal(signal.SIGTERM)
        assert served.wait(timeout=30) == 0
        wait_until(lambda: not answers(), 10, "the port freed")  # nothing left serving it
    finally:
        served.kill()
        served.wait()


def test_docs_build_refuses_a_folder_it_would_empty_and_reads_a_relative_one_where_it_runs(tmp_path, monkeypatch):
    """`--build DIR` emptied DIR whatever it held, and a relative DIR was taken in the checkout (`--build tests`
    run elsewhere deleted the checkout's tests). mkdocs never runs here: the command it would run is recorded."""
    from typer.testing import CliRunner

    import service.site as site
    from memtrial.cli.commands import app

    built: list[list[str]] = []
    monkeypatch.setattr(site, "run_until_stopped", lambda command, cwd, env: built.append(command) or 0)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("important")
    (tmp_path / "a-file").write_text("x")
    for given, words in (
        (str(precious), "holds files that are not a built site"),
        (str(tmp_path / "a-file"), "is a file, not a folder"),
        (str(site.SITE_CONFIG.parent), "is the checkout or a folder above it"),
    ):
        result = CliRunner().invoke(app, ["docs", "--build", given])
        assert result.exit_code == 2 and words in result.output and "nothing was built or deleted" in result.output
    assert built == [] and (precious / "notes.txt").read_text() == "important"
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["docs", "--build", "relsite"]).exit_code == 0
    assert built[0][built[0].index("--site-dir") + 1] == str(tmp_path / "relsite")


@pytest.mark.parametrize("command", [[], ["tenants"], ["backtest"], ["data"]])
def test_no_command_offers_shell_completion_the_top_level_leaves_out(command):
    result = invoke([*command, "--help"])
    assert result.exit_code == 0 and "--install-completion" not in result.output, result.output
