"""Settings every test shares: one thread per numerical library, the tiers (fast by default, `--all`), and
a tier's tests spread over the machine's cores (pytest-xdist, one process per core and one more, at most eight).

Fixtures live in the conftest of the folder whose tests use them; shared data and helpers in `support.py`."""

import importlib.util
import os
import sys

import pytest

# The README's test install skips pip's compile step (`--no-compile`: compiling every installed package took
# about half of the install), so each module is compiled when first imported and its bytecode written for the
# next process: the suite starts dozens (workers, live servers, command-line and benchmark runs) that import the
# same packages. Where PYTHONDONTWRITEBYTECODE is set, every one of them would compile them again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("MEMTRIAL_TORCH_THREADS", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _share_compiled_kernels() -> None:
    """NumPyro's kernels compiled once for the whole run (workers, live servers, command lines) in the service's
    cache folder, as :func:`memtrial.values.bayes.enable_compile_cache` sets it up; JAX reads these variables
    when it loads. Where the folder cannot be made, JAX compiles in each process as it would without them."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    from memtrial.values.cache import COMPILE_CACHE_BYTES, COMPILE_CACHE_MIN_SECONDS, default_jax_cache

    try:
        folder = default_jax_cache()
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):
        return
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(folder)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", str(COMPILE_CACHE_MIN_SECONDS))
    if importlib.util.find_spec("filelock") is not None:  # JAX's bound needs it (then each entry is read under a lock)
        os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(COMPILE_CACHE_BYTES))


_share_compiled_kernels()


@pytest.fixture(autouse=True)
def _environment_kept():
    """Each test leaves the service's variables in the process's environment as it found them. ``memtrial serve`` run in this process (the
    command-line tests) sets ``MEMTRIAL_DATABASE_URL`` for its workers; a later test's refit worker processes,
    which inherit the environment, then read that database instead of the test's: the job not found there, it
    went stale three times and failed 'interrupted' (the flaky refit test, whenever such a test ran before it on
    the same test worker)."""
    saved = {name: value for name, value in os.environ.items() if _served(name)}
    yield
    for name in [name for name in os.environ if _served(name) and name not in saved]:
        del os.environ[name]
    os.environ.update(saved)


def _served(name: str) -> bool:
    """The variables the service's settings and ``memtrial serve`` read or set (a library's own, such as those
    torch sets as it loads, are left as they are: later tests read the process as it is after that import)."""
    return name.startswith("MEMTRIAL_") or name == "PROMETHEUS_MULTIPROC_DIR"


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        default=False,
        help="run every tier: the default fast tier and the tests marked slow",
    )


#: The most worker processes a tier is spread over by default (each loads the embedding model and JAX).
MAX_WORKERS = 8


def _names_tests(config) -> bool:
    """The command line names test files or tests (``pytest tests/core/test_engine.py``, ``...::test_x``)."""
    return any(".py" in str(arg) for arg in config.args)


def default_workers() -> int:
    """How many processes run a tier by default: ``PYTEST_XDIST_AUTO_NUM_WORKERS`` where set, else one per
    core this process may use and one more, at most :data:`MAX_WORKERS`; below two, none (the tier runs in
    this process). The one more takes the core a test leaves while it waits on a live server, a subprocess or
    the database: on two cores, two workers kept them 170% busy through the whole suite, three 182 to 186%
    (docs/testing.md)."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = int(chosen) if chosen else min(cores + 1 if cores >= 2 else cores, MAX_WORKERS)
    return workers if workers >= 2 else 0


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A tier (``pytest``, ``pytest --all``, ``pytest -m slow``) runs in parallel, :func:`default_workers`
    workers taking tests as they finish (xdist's ``load``); ``-n`` given, naming files or tests, ``--pdb``,
    ``--collect-only`` or ``-p no:xdist`` run as asked (``-n 0`` and named tests: in this process).

    No test needs a group of its own: each worker has its own PostgreSQL database, Redis key prefixes, ports
    and folders, and a module-scoped fixture is set up again on each worker that runs its module's tests (pytest
    tears it down when a worker moves to another module). ``xdist_group`` marks would not hold anyway: the
    installed pytest-xdist (3.8) writes the group into ``item._nodeid``, which pytest 9.2 no longer reads."""
    option = config.option
    if not hasattr(option, "numprocesses") or hasattr(config, "workerinput"):  # a worker never spreads again
        return
    if option.numprocesses is None and not (_names_tests(config) or option.usepdb or option.collectonly):
        option.numprocesses = default_workers()


def pytest_configure(config):
    """``pytest`` runs the fast tier; ``pytest --all`` everything; an explicit ``-m`` wins, and so
    does naming test files or tests (``pytest tests/service/test_service_fuzz.py`` runs that file whole)."""
    if not config.option.markexpr and not config.getoption("--all") and not _names_tests(config):
        config.option.markexpr = "not slow"
        config._memtrial_fast_tier = True


def pytest_collection_modifyitems(config, items):
    """Tests marked ``early`` first, the others in their order: in a parallel run, a long test (mypy over the
    whole tree with no cache, in a fresh clone) then runs beside the rest instead of after it. Every worker
    sorts alike, so xdist's workers still agree on the collection."""
    items.sort(key=lambda item: item.get_closest_marker("early") is None)


def pytest_report_header(config):
    if getattr(config, "_memtrial_fast_tier", False):
        return "memtrial: FAST TIER (tests marked slow are deselected: PostgreSQL, faults, fuzzing, benchmark runs); `pytest --all` runs them"
    return None


def pytest_deselected(items):
    """Count the slow tests a run leaves out; a worker sends its count to the controller when it finishes."""
    if items:
        config = items[0].config
        config._memtrial_slow_deselected = getattr(config, "_memtrial_slow_deselected", 0) + sum(
            1 for item in items if item.get_closest_marker("slow")
        )
        if hasattr(config, "workeroutput"):
            config.workeroutput["memtrial_slow_deselected"] = config._memtrial_slow_deselected


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """In the controller of a parallel run: the slow tests left out, as the workers (each collects all) counted."""
    counted = getattr(node, "workeroutput", {}).get("memtrial_slow_deselected", 0)
    node.config._memtrial_slow_deselected = max(getattr(node.config, "_memtrial_slow_deselected", 0), counted)


def pytest_terminal_summary(terminalreporter, config):
    deselected = getattr(config, "_memtrial_slow_deselected", 0)
    if getattr(config, "_memtrial_fast_tier", False) and deselected:
        terminalreporter.write_line(
            f"memtrial: {deselected} slow tests were NOT run (fast tier); run `pytest --all` for every tier",
            yellow=True,
            bold=True,
        )
