"""The migration to append-only history rows, on a database the previous version wrote.

``fixtures/v1_database.json.gz`` holds every row of a database at schema
revision 0002 with two agents (300 decisions, 1,184 contributions, logs of 318
and 278 entries) written by the previous service through its own API, and
what that service answered for values, trust and verification
(``fixtures/make_v1_database.py`` tells how it was made).
"""

import base64
import datetime as dt
import gzip
import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import JSON, Boolean, DateTime, LargeBinary, MetaData, select
from support import POSTGRES_URL, reset_postgres

from service.db import make_engine
from service.migrations import downgrade, upgrade

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v1_database.json.gz"
TABLES = ["tenants", "api_keys", "agents", "experiences", "decisions", "contributions", "refit_jobs"]
START = dt.datetime(2021, 1, 1, 21, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def fixture():
    with gzip.open(FIXTURE, "rt") as handle:
        return json.load(handle)


def _value(column, raw):
    if raw is None:
        return None
    if isinstance(column.type, JSON):
        return json.loads(raw)
    if isinstance(column.type, LargeBinary):
        return base64.b64decode(raw)
    if isinstance(column.type, DateTime):
        return dt.datetime.fromisoformat(raw).replace(tzinfo=dt.UTC)
    if isinstance(column.type, Boolean):
        return bool(raw)
    return raw


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def legacy_url(request, tmp_path, fixture):
    """A database at revision 0002 holding the fixture's rows."""
    url = f"sqlite:///{tmp_path / 'legacy.db'}" if request.param == "sqlite" else POSTGRES_URL
    if request.param == "postgresql":
        reset_postgres(url)
    upgrade(url, fixture["revision"])
    engine = make_engine(url)
    metadata = MetaData()
    metadata.reflect(engine, only=TABLES)
    with engine.begin() as connection:
        for name in TABLES:
            table = metadata.tables[name]
            rows = [{key: _value(table.c[key], value) for key, value in row.items()} for row in fixture["rows"][name]]
            if rows:
                connection.execute(table.insert(), rows)
        if request.param == "postgresql":  # rows came with their sequence numbers: move the sequences past them
            for name in ("experiences", "decisions", "contributions"):
                connection.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{name}', 'seq'), (SELECT max(seq) FROM {name}))"
                )
    engine.dispose()
    return url


@contextmanager
def _client(url, key):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.client import MemtrialClient
    from service.settings import Settings

    with TestClient(create_app(Settings(database_url=url))) as http:
        yield MemtrialClient(api_key=key, http=http)


def _states(url):
    engine = make_engine(url)
    metadata = MetaData()
    metadata.reflect(engine, only=["agents"])
    with engine.connect() as connection:
        states = dict(
            connection.execute(select(metadata.tables["agents"].c.id, metadata.tables["agents"].c.state)).all()
        )
    engine.dispose()
    return {agent_id: json.loads(state) for agent_id, state in states.items()}


def test_upgrade_keeps_values_trust_state_and_the_chain_of_every_agent(legacy_url, fixture):
    upgrade(legacy_url)
    with _client(legacy_url, fixture["api_key"]) as client:
        for agent_id, expected in fixture["expected"].items():
            _check_agent(client, agent_id, expected)


def _check_agent(client, agent_id, expected):
    assert client.verify(agent_id) == expected["verify"]
    assert [e["hash"] for e in client.iter_log(agent_id)] == [e["hash"] for e in expected["trust"]["log"]]
    trust = client.trust(agent_id, limit=1000)
    state, before = trust["state"], expected["trust"]["state"]
    assert {k: state[k] for k in ("status", "test", "n_scored", "threshold", "is_open")} == {
        k: before[k] for k in ("status", "test", "n_scored", "threshold", "is_open")
    }
    # the p-value is now computed without SciPy, and the mean score from a running sum: equal to rounding
    assert state["statistic"] == pytest.approx(before["statistic"], rel=1e-9)
    assert state["mean_score"] == pytest.approx(before["mean_score"], rel=1e-12)
    history = expected["trust"]["scores"]
    assert [(s["decision_id"], s["score"]) for s in trust["scores"]] == [
        (s["decision_id"], s["score"]) for s in history
    ]
    statistics = [s["statistic"] for s in trust["scores"]]
    assert [s is None for s in statistics] == [s["statistic"] is None for s in history]
    assert [s for s in statistics if s is not None] == pytest.approx(
        [s["statistic"] for s in history if s["statistic"] is not None], rel=1e-9
    )
    values = client.values(agent_id)
    assert values["learner_mode"] == expected["values"]["learner_mode"]
    for experience_id, value in expected["values"]["values"].items():
        now = values["values"][experience_id]
        assert now["n"] == value["n"]
        # statistics are now running sums (Welford), not a pass over every record: equal to rounding
        assert now["mean"] == pytest.approx(value["mean"], rel=1e-9, abs=1e-15)
        # reported sds now add the uncertainty of the estimated tau2 to the plug-in sd the fixture stored
        assert now["sd"] >= value["sd"] * (1 - 1e-9)


def test_a_migrated_agent_keeps_deciding_and_settling(legacy_url, fixture):
    upgrade(legacy_url)
    with _client(legacy_url, fixture["api_key"]) as client:
        _continue(client, fixture)


def _continue(client, fixture):
    agent_id = next(iter(fixture["expected"]))
    open_decisions = client.list_decisions(agent_id, status="decided")["items"]
    assert len(open_decisions) == 1
    returns = {"SPY": [0.01, -0.002], "TLT": [0.001, 0.0], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}
    settled = client.settle(agent_id, open_decisions[0]["decision_id"], returns=returns)
    assert len(settled["contributions"]) == 4
    planned = client.list_decisions(agent_id, status="planned")["items"]
    drafts = [{"SPY": 0.3, "TLT": 0.3, "GLD": 0.2, "BIL": 0.2}] * 8
    decided = client.submit_drafts(agent_id, planned[0]["decision_id"], drafts)
    assert decided["status"] == "decided"
    plan = client.create_decision(agent_id, START, START + dt.timedelta(days=1), "after the migration", horizon=2)
    client.submit_drafts(agent_id, plan["decision_id"], drafts)
    client.settle(agent_id, plan["decision_id"], returns=returns)
    check = client.verify(agent_id)
    assert check["ok"] and check["n_entries"] == fixture["expected"][agent_id]["verify"]["n_entries"] + 3


def test_downgrade_rebuilds_the_previous_state_exactly(legacy_url, fixture):
    upgrade(legacy_url)
    compact = _states(legacy_url)
    assert all(state["version"] == 2 and state["history"] is None for state in compact.values())
    downgrade(legacy_url, fixture["revision"])
    rebuilt = _states(legacy_url)
    original = {row["id"]: json.loads(row["state"]) for row in fixture["rows"]["agents"]}
    _assert_same(rebuilt, original)


def _assert_same(rebuilt, original, where="state"):
    """Equal in every key, string and integer; floats recomputed by the downgrade (its Pearson scores) equal
    to rounding, since numpy's summation order may change between releases."""
    if isinstance(original, dict):
        assert isinstance(rebuilt, dict) and rebuilt.keys() == original.keys(), where
        for key in original:
            _assert_same(rebuilt[key], original[key], f"{where}.{key}")
    elif isinstance(original, list):
        assert isinstance(rebuilt, list) and len(rebuilt) == len(original), where
        for index, (a, b) in enumerate(zip(rebuilt, original, strict=True)):
            _assert_same(a, b, f"{where}[{index}]")
    elif isinstance(original, float):
        assert isinstance(rebuilt, float) and rebuilt == pytest.approx(original, rel=1e-12, abs=1e-15), where
    else:
        assert rebuilt == original and type(rebuilt) is type(original), where


@pytest.mark.slow
def test_replicas_started_together_on_an_empty_postgresql_database_all_migrate_it():
    # three processes upgrade at the same moment (as replicas a deployment starts together): each waits for the
    # migration lock, and none fails on the tables another is creating
    import subprocess
    import sys
    import time

    from sqlalchemy import text

    reset_postgres(POSTGRES_URL)
    start = time.time() + 6.0  # every process imported and waiting, then all at once
    script = (
        "import sys, time\n"
        "from service.migrations import upgrade\n"
        f"time.sleep(max(0.0, {start!r} - time.time()))\n"
        "upgrade(sys.argv[1])\n"
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", script, POSTGRES_URL], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1] for p in processes]
    failures = [error[-600:] for p, error in zip(processes, errors, strict=True) if p.returncode != 0]
    assert not failures, failures
    engine = make_engine(POSTGRES_URL)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
            assert connection.execute(text("SELECT count(*) FROM agents")).scalar() == 0
    finally:
        engine.dispose()


def test_a_downgrade_below_0003_of_agents_version_1_cannot_hold_is_refused_and_changes_nothing(database_url):
    """The release at revision 0002 reads only its own configuration keys and choices: an agent with today's
    defaults (the dial, the odd half, quarantine...) or a scored agent would not read back there (nor up again
    here). The downgrade refuses before it changes anything; the database stays at this release's revision."""
    from sqlalchemy import text
    from support import UNIVERSE, make_tenant

    from service.migrations import revisions

    key = make_tenant(database_url, "downgrade")
    with _client(database_url, key) as client:
        portfolio = client.create_agent("today", "balanced", UNIVERSE)
        scored = client.create_agent("forecasts", kind="scored", outcomes=["up", "down"], action="gate", design="half")
        client.add_experiences(portfolio.id, [{"text": "Gold held up.", "external_id": "gold"}])
    with pytest.raises(RuntimeError) as refused:
        downgrade(database_url, "0002")
    said = str(refused.value)
    assert said.startswith("cannot downgrade below revision 0003: 2 agents use what the release at revision 0002")
    assert f"agent {portfolio.id} (" in said and "action 'dial'" in said and "design 'fold'" in said
    assert f"agent {scored.id} (kind 'scored'" in said and said.endswith("to downgrade without them")
    engine = make_engine(database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == revisions()[-1]
    engine.dispose()
    with _client(database_url, key) as client:  # the later revisions' data (external ids: 0005) are still there
        (kept,) = client.list_experiences(portfolio.id).items
        assert kept.external_id == "gold" and client.verify(portfolio.id)["ok"]


def test_serve_on_a_database_whose_migration_fails_on_a_stored_state_says_so_in_one_line(legacy_url, fixture):
    """A migration that finds a stored state it cannot convert (here a version-1 state whose k no release
    allowed) is undone whole, on SQLite as on PostgreSQL, and `memtrial serve` says why in one line (exit 2)."""
    from sqlalchemy import text
    from typer.testing import CliRunner

    from memtrial.cli.commands import app

    engine = make_engine(legacy_url)
    with engine.begin() as connection:
        agent_id, state = connection.execute(text("SELECT id, state FROM agents ORDER BY id")).first()
        broken = json.loads(state)
        broken["config"]["k"] = 99
        connection.execute(
            text("UPDATE agents SET state = :state WHERE id = :id"), {"state": json.dumps(broken), "id": agent_id}
        )
    result = CliRunner().invoke(app, ["serve", "--database-url", legacy_url, "--port", "1"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: cannot migrate the database ") and "Traceback" not in result.output
    assert "ConfigError: k must be" in result.output and result.output.rstrip().endswith("stays at its revision)")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == fixture["revision"]
        assert connection.execute(text("SELECT count(*) FROM agents")).scalar() == len(fixture["rows"]["agents"])
    engine.dispose()
