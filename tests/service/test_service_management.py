"""Service: listing and deleting what a tenant made, paging the log, key revocation and rotation."""

import base64
import datetime as dt
import hashlib
import json
import threading
import time

import pytest
from sqlalchemy import MetaData, func, select
from support import UNIVERSE, make_tenant
from typer.testing import CliRunner

from memtrial.cli.console import app as cli
from memtrial.trust.log import LogEntry, verify_chain
from service.client import MemtrialClient, ServiceError
from service.db import make_engine

START = dt.datetime(2022, 3, 1, 21, 0, tzinfo=dt.UTC)
RETURNS = {"SPY": [0.01, -0.004], "TLT": [0.002, 0.001], "GLD": [-0.003, 0.004], "BIL": [0.0002, 0.0002]}


def loop(client, agent_id, n_dates, settle_last=True):
    """Plan, draft and settle ``n_dates`` daily decisions (the last one left open unless settle_last)."""
    ids = []
    for t in range(n_dates):
        time_t = START + dt.timedelta(days=t)
        plan = client.create_decision(
            agent_id,
            time_t,
            time_t + dt.timedelta(hours=20),
            f"day {t}: {'calm' if t % 2 else 'stormy'} markets",
            horizon=2,
        )
        drafts = [
            {
                "SPY": 0.1 + 0.05 * len(s["experience_ids"]),
                "TLT": 0.3,
                "GLD": 0.3 - 0.05 * len(s["experience_ids"]),
                "BIL": 0.3,
            }
            for s in plan["subsets"]
        ]
        client.submit_drafts(agent_id, plan["decision_id"], drafts)
        if settle_last or t < n_dates - 1:
            client.settle(agent_id, plan["decision_id"], returns=RETURNS)
        ids.append(plan["decision_id"])
    return ids


def populated(client, name="fund", n_dates=3):
    agent = client.create_agent(name, "balanced", UNIVERSE)
    client.add_experiences(
        agent["id"],
        [
            {"text": f"{name} lesson {i}: {topic}"}
            for i, topic in enumerate(["bonds", "stocks", "gold", "cash", "rates"])
        ],
    )
    loop(client, agent["id"], n_dates)
    return agent


def test_list_agents_pages_through_every_agent_once_and_filters_by_name(client):
    made = [client.create_agent(f"fund-{i % 3}", "balanced", UNIVERSE)["id"] for i in range(7)]
    first = client.list_agents(limit=3)
    assert len(first["items"]) == 3 and first["next_cursor"] is not None and first["limit"] == 3
    assert [a["id"] for a in client.iter_agents(page_size=3)] == made  # ids sort by creation time
    assert [a["id"] for a in client.iter_agents(name="fund-1")] == [made[1], made[4]]
    assert client.list_agents(name="nobody")["items"] == []


def test_listing_agents_with_a_forged_cursor_is_422(client):
    with pytest.raises(ServiceError) as error:
        client.list_agents(cursor="not-a-cursor")
    assert (error.value.status, error.value.field) == (422, "cursor")
    with pytest.raises(ServiceError) as error:
        client.list_agents(limit=201)
    assert (error.value.status, error.value.field) == (422, "limit")


def test_pagination_returns_every_row_exactly_once_while_inserts_run(client, agent):
    client.add_experiences(agent["id"], [{"text": f"before {i}"} for i in range(40)])
    before = {e["id"] for e in client.iter_experiences(agent["id"], page_size=500)}
    stop, wrote = threading.Event(), threading.Event()
    added: list[str] = []

    def insert() -> None:
        i = 0
        while not stop.is_set():
            added.append(client.add_experience(agent["id"], f"during {i}")["id"])
            wrote.set()
            i += 1

    writer = threading.Thread(target=insert)
    writer.start()
    try:
        seen = []
        cursor = None
        while True:
            page = client.list_experiences(agent["id"], limit=3, cursor=cursor)
            seen += [e["id"] for e in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
            wrote.clear()
            assert wrote.wait(10), "the writer added nothing between two pages"
    finally:
        stop.set()
        writer.join()
    assert added, "the writer added nothing while the pages were read"
    assert len(seen) == len(set(seen))
    assert before <= set(seen)
    assert set(seen) <= before | set(added)


def test_list_decisions_pages_and_filters_by_status_and_maturity(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE)
    client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(5)])
    ids = loop(client, agent["id"], 5, settle_last=False)
    assert [d["decision_id"] for d in client.iter_decisions(agent["id"], page_size=2)] == ids
    assert [d["decision_id"] for d in client.iter_decisions(agent["id"], status="decided")] == ids[-1:]
    settled = client.list_decisions(agent["id"], status="settled")["items"]
    assert [d["decision_id"] for d in settled] == ids[:-1]
    assert all(d["action"] == "dial" and d["chosen_utility"] is not None for d in settled)  # the default rule
    early = client.list_decisions(agent["id"], maturity_before=START + dt.timedelta(days=2))["items"]
    assert [d["decision_id"] for d in early] == ids[:2]


def test_deleting_an_agent_removes_every_row_it_owns_and_nothing_else(client, http, database_url):
    doomed = populated(client, "doomed")
    kept = populated(client, "kept")
    other_client = MemtrialClient(api_key=make_tenant(database_url, "other"), http=http)
    other = populated(other_client, "other")
    with pytest.raises(ServiceError) as error:
        other_client.delete_agent(doomed["id"])
    assert error.value.status == 404
    engine = make_engine(database_url)
    metadata = MetaData()
    metadata.reflect(engine)
    owned = [t for t in metadata.tables.values() if "agent_id" in t.c]
    assert {"experiences", "decisions", "contributions", "log_entries", "refit_jobs"} <= {t.name for t in owned}

    def counts(agent_id):
        with engine.connect() as connection:
            result = {
                t.name: connection.scalar(select(func.count()).select_from(t).where(t.c.agent_id == agent_id))
                for t in owned
            }
            result["agents"] = connection.scalar(
                select(func.count())
                .select_from(metadata.tables["agents"])
                .where(metadata.tables["agents"].c.id == agent_id)
            )
        return result

    untouched = {a["id"]: counts(a["id"]) for a in (kept, other)}
    assert counts(doomed["id"])["log_entries"] == 6 and counts(doomed["id"])["contributions"] == 12
    client.delete_agent(doomed["id"])
    assert set(counts(doomed["id"]).values()) == {0}
    assert {a["id"]: counts(a["id"]) for a in (kept, other)} == untouched
    with engine.connect() as connection:  # no text column anywhere still names it
        for table in metadata.tables.values():
            for column in table.c:
                if column.type.python_type is str:
                    assert (
                        connection.scalar(select(func.count()).select_from(table).where(column.contains(doomed["id"])))
                        == 0
                    ), (table.name, column.name)
    engine.dispose()
    with pytest.raises(ServiceError) as error:
        client.get_agent(doomed["id"])
    assert error.value.status == 404
    assert client.verify(kept["id"])["ok"] and other_client.verify(other["id"])["ok"]


def test_the_log_pages_can_be_verified_outside_the_service(client, agent):
    client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(6)])
    loop(client, agent["id"], 4)
    pages = []
    cursor = None
    while True:
        page = client.trust_log(agent["id"], limit=3, cursor=cursor)
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    entries = [e for page in pages for e in page["items"]]
    assert len(pages) == 3 and pages[0]["n_entries"] == len(entries) == 8
    # the chain recomputed from the documented rule alone, without the project's code
    previous = agent["gate_hash"]
    for entry in entries:
        body = {
            "index": entry["index"],
            "kind": entry["kind"],
            "payload": entry["payload"],
            "prev_hash": entry["prev_hash"],
        }
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        assert entry["prev_hash"] == previous and hashlib.sha256(text.encode()).hexdigest() == entry["hash"]
        previous = entry["hash"]
    entries[2]["payload"]["predictions"][0][1] += 1e-9
    check = verify_chain(agent["gate_hash"], [LogEntry(**e) for e in entries])
    assert (check.ok, check.first_invalid) == (False, 2)


def test_a_revoked_key_is_refused_once_the_cache_expires(database_url):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.db import make_session_factory, transaction
    from service.settings import Settings
    from service.tenancy import revoke_keys

    key = make_tenant(database_url, "leaving")
    with TestClient(create_app(Settings(database_url=database_url, auth_cache_seconds=0.2))) as http:
        client = MemtrialClient(api_key=key, http=http)
        agent = client.create_agent("fund", "balanced", UNIVERSE)
        engine = make_engine(database_url)
        with transaction(make_session_factory(engine)) as session:
            assert revoke_keys(session, "leaving") == 1
        engine.dispose()
        time.sleep(0.3)  # the key cache's lifetime (0.2 s) passing is the thing under test
        with pytest.raises(ServiceError) as error:
            client.get_agent(agent["id"])
    assert (error.value.status, error.value.message) == (401, "unknown or revoked API key")


def test_tenants_list_revoke_and_rotate_from_the_command_line(tmp_path):
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    runner = CliRunner()
    first = (
        runner.invoke(cli, ["tenants", "create", "acme", "--database-url", url]).output.split("api key: ")[1].strip()
    )
    runner.invoke(cli, ["tenants", "create", "zeta", "--database-url", url])
    listed = runner.invoke(cli, ["tenants", "list", "--database-url", url])
    assert listed.exit_code == 0
    lines = listed.output.splitlines()
    assert lines[1].startswith("acme") and first[:8] in lines[1] and lines[2].startswith("zeta")
    rotated = runner.invoke(cli, ["tenants", "rotate", "acme", "--database-url", url])
    assert rotated.exit_code == 0 and "revoked 1 key of acme" in rotated.output
    second = rotated.output.split("api key: ")[1].strip()
    assert second != first
    engine = make_engine(url)
    with engine.connect() as connection:
        keys = dict(connection.exec_driver_sql("SELECT prefix, revoked FROM api_keys").all())
    assert keys[first[:8]] in (1, True) and keys[second[:8]] in (0, False)
    for empty in ("", " "):  # every key starts with it: it chose the only active key and revoked it
        refused = runner.invoke(cli, ["tenants", "revoke", "acme", "--key", empty, "--database-url", url])
        assert refused.exit_code == 2 and "--key must give the start of a key" in refused.output
    revoked = runner.invoke(cli, ["tenants", "revoke", "acme", "--key", second[:8], "--database-url", url])
    assert revoked.exit_code == 0 and "revoked 1 key of acme" in revoked.output
    missing = runner.invoke(cli, ["tenants", "revoke", "nobody", "--database-url", url])
    assert missing.exit_code == 2 and "no tenant is named 'nobody'" in missing.output
    engine.dispose()


@pytest.mark.parametrize("position", [2**31, 2**40, 2**63 - 1])
@pytest.mark.parametrize("kind", ["experiences", "decisions", "log"])
def test_a_forged_cursor_past_any_row_is_422_naming_the_cursor(client, agent, kind, position):
    def encode_cursor(kind, position):  # as cursors were before they were scoped, which are still taken
        raw = json.dumps([kind, position], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def listing(cursor):
        if kind == "experiences":
            return client.list_experiences(agent["id"], cursor=cursor)
        if kind == "decisions":
            return client.list_decisions(agent["id"], cursor=cursor)
        return client.trust_log(agent["id"], cursor=cursor)

    with pytest.raises(ServiceError) as error:
        listing(encode_cursor(kind, position))
    assert (error.value.status, error.value.field) == (422, "cursor")
    assert error.value.message == f"cursor: not a cursor of this list ({kind}); pass next_cursor of the previous page"
    assert listing(encode_cursor(kind, 2**31 - 1))["items"] == []  # the last position a row can hold pages to nothing


def test_a_cursor_pages_only_the_list_it_came_from(client):
    """A cursor of one agent's list, or of the same list under other filters, started another listing at a
    position of other rows, silently (an empty page, or rows skipped): it is refused naming the cursor."""
    first, second = (client.create_agent(name, "balanced", UNIVERSE) for name in ("first", "second"))
    for agent in (first, second):
        client.add_experiences(agent["id"], [{"text": f"lesson {i}"} for i in range(4)])
    page = client.list_experiences(first["id"], limit=1)
    assert client.list_experiences(first["id"], limit=1, cursor=page["next_cursor"])["items"][0]["text"] == "lesson 1"
    refusals = [
        lambda: client.list_experiences(second["id"], limit=1, cursor=page["next_cursor"]),
        lambda: client.list_experiences(first["id"], limit=1, cursor=page["next_cursor"], active=True),
        lambda: client.list_experiences(first["id"], limit=1, cursor=page["next_cursor"], status="active"),
    ]
    agents = client.list_agents(limit=1)
    refusals.append(lambda: client.list_agents(limit=1, cursor=agents["next_cursor"], name="second"))
    from service.pagination import encode_cursor

    first_log = encode_cursor("log", 1, (first["id"],))  # as the first agent's log page would give it (no entries yet)
    refusals.append(lambda: client.trust_log(second["id"], limit=1, cursor=first_log))
    for refused in refusals:
        with pytest.raises(ServiceError) as error:
            refused()
        assert (error.value.status, error.value.field) == (422, "cursor")
        assert "a cursor of another" in error.value.message and "with the same filters" in error.value.message
    assert client.list_agents(limit=1, cursor=agents["next_cursor"])["items"][0]["name"] == "second"
    assert client.trust_log(first["id"], limit=1, cursor=first_log)["items"] == []
