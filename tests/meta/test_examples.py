"""Every script in examples/ runs end to end, as its docstring says, against a live ``memtrial serve``:
a fresh process with its own environment, talking HTTP to the service (``MEMTRIAL_URL``, ``MEMTRIAL_API_KEY``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from live_server import Server
    from support import make_tenant

    url = f"sqlite:///{tmp_path_factory.mktemp('examples') / 'examples.db'}"
    server = Server(url)
    try:
        yield server.url, make_tenant(url, "examples")
    finally:
        server.stop()


def run_example(name, live, tmp_path, merged=False):
    """The example's standard output (``merged``: its standard output and error, as a terminal shows them)."""
    url, key = live
    env = {**os.environ, "MEMTRIAL_URL": url, "MEMTRIAL_API_KEY": key, "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=tmp_path,  # not the checkout: the installed package is what an example imports
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (result.stderr or result.stdout)[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def mem0_output(live, tmp_path_factory):
    return run_example("mem0_credit.py", live, tmp_path_factory.mktemp("mem0"), merged=True)


def test_every_example_has_a_test_here():
    tested = {"mem0_credit.py", "langgraph_agent.py", "scored_forecasts.py"}
    assert {p.name for p in EXAMPLES} == tested


@pytest.mark.slow  # a live server and Mem0 with the real embedding model
def test_mem0_credit_ranks_the_planted_lessons_and_writes_them_back(mem0_output):
    out = mem0_output
    assert "30 months settled; values written back to 6 Mem0 memories" in out
    ranked = [line for line in out.splitlines() if "overweight" in line and "uses" in line]
    assert len(ranked) == 6
    good = ("overweight TLT: long", "overweight GLD: gold", "overweight SPY: stocks")
    top = ranked[:2]  # the two best-measured lessons are planted good ones
    assert all(any(g in line for g in good) for line in top), out
    assert "prune candidates" in out


@pytest.mark.slow  # a live server and Mem0 with the real embedding model
def test_mem0_credit_output_starts_with_its_own_first_line(mem0_output):
    assert mem0_output.splitlines()[0] == "30 months settled; values written back to 6 Mem0 memories", mem0_output[
        :2000
    ]


@pytest.mark.slow  # a live server
def test_langgraph_agent_learns_bonds_and_gold_over_equities_and_cash(live, tmp_path):
    out = run_example("langgraph_agent.py", live, tmp_path)
    assert out.count("8 drafts") == 24
    order = [line.split("]  ", 1)[1] for line in out.splitlines() if line.startswith("  ") and "]  " in line]
    assert [o.split(":")[0] for o in order] == ["Overweight TLT", "Overweight GLD", "Overweight BIL", "Overweight SPY"]


@pytest.mark.slow  # a live server
def test_scored_forecasts_value_the_scope_lessons_and_not_the_misleading_ones(live, tmp_path):
    out = run_example("scored_forecasts.py", live, tmp_path)
    names = [line.split("  ")[-1].split(":")[0] for line in out.splitlines() if "uses" in line]
    assert names[:2] == ["lesson-scope-frozen", "lesson-scope-open"] or names[:2] == [
        "lesson-scope-open",
        "lesson-scope-frozen",
    ], out
    assert set(names[-2:]) == {"lesson-large-team", "lesson-winter"}, out
