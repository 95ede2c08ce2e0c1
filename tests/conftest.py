"""Settings every test shares: one thread per numerical library, and the tiers (fast by default, `--all`).

Fixtures live in the conftest of the folder whose tests use them; shared data and helpers in `support.py`."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="run every tier: the default fast tier and the tests marked slow",
    )


def pytest_configure(config):
    """``pytest`` runs the fast tier; ``pytest --all`` everything; an explicit ``-m`` wins, and so
    does naming test files or tests (``pytest tests/service/test_service_fuzz.py`` runs that file whole)."""
    named = any(".py" in str(arg) for arg in config.args)
    if not config.option.markexpr and not config.getoption("--all") and not named:
        config.option.markexpr = "not slow"
        config._memtrial_fast_tier = True


def pytest_report_header(config):
    if getattr(config, "_memtrial_fast_tier", False):
        return "memtrial: FAST TIER (tests marked slow are deselected: PostgreSQL, faults, fuzzing, benchmark runs); `pytest --all` runs them"
    return None


def pytest_terminal_summary(terminalreporter, config):
    deselected = sum(1 for item in terminalreporter.stats.get("deselected", []) if item.get_closest_marker("slow"))
    if getattr(config, "_memtrial_fast_tier", False) and deselected:
        terminalreporter.write_line(
            f"memtrial: {deselected} slow tests were NOT run (fast tier); run `pytest --all` for every tier",
            yellow=True,
            bold=True,
        )
