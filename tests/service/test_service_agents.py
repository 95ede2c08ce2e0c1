"""Service: agents, tenancy and authentication."""

import asyncio

import httpx
import pytest
from support import UNIVERSE, make_tenant

from memtrial.trust.gate import GateConfig
from service.client import MemtrialClient, ServiceError


def test_create_agent_freezes_the_gate_config_with_its_hash(client):
    agent = client.create_agent("fund", "conservative", UNIVERSE, gate={"test": "anytime", "alpha": 0.01})
    assert agent["gate"] == {
        "test": "anytime",
        "alpha": 0.01,
        "min_scores": 1,
        "statistic": "pearson",
        "bets": list(GateConfig().bets),
    }
    assert agent["gate_hash"] == GateConfig(test="anytime", alpha=0.01).hash
    assert client.get_agent(agent["id"]) == agent


@pytest.mark.parametrize("field", ["api_key", "api_base"])
def test_a_drafter_endpoint_or_key_from_a_tenant_is_refused(client, field):
    with pytest.raises(ServiceError) as error:
        client.create_agent(
            "fund",
            "balanced",
            UNIVERSE,
            drafter={"provider": "any", "model": "openai/x", field: "http://127.0.0.1:5432"},
        )
    assert (error.value.status, error.value.field) == (422, "drafter")
    assert (
        f"{field} is not accepted: LLM endpoints and their keys are configured by the operator" in error.value.message
    )
    assert client.list_agents()["items"] == []


def test_a_drafter_naming_an_unknown_provider_is_refused(client):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "balanced", UNIVERSE, drafter={"provider": "elsewhere", "model": "openai/x"})
    assert (error.value.status, error.value.field) == (422, "drafter.provider")
    assert error.value.message == "drafter.provider: 'elsewhere' is not a provider of this server (known: [])"


def test_another_tenant_sees_404_not_403(client, http, database_url, agent):
    other = MemtrialClient(api_key=make_tenant(database_url, "other"), http=http)
    with pytest.raises(ServiceError) as error:
        other.get_agent(agent["id"])
    assert (error.value.status, error.value.message) == (404, f"agent {agent['id']!r} not found")


def test_a_long_id_that_names_nothing_is_said_by_its_start_and_length(client, agent):
    # the whole id was echoed, twice: a 100 KB id in a path made a 200 KB answer
    long_id = "x" * 10_000
    for call, label in (
        (lambda: client.get_agent(long_id), "agent"),
        (lambda: client.get_decision(agent["id"], long_id), "decision"),
    ):
        with pytest.raises(ServiceError) as error:
            call()
        assert error.value.status == 404
        assert error.value.message == f"{label} {'x' * 64!r}... (10000 characters) not found"


def test_missing_api_key_is_401(http, agent):
    response = http.get(f"/v1/agents/{agent['id']}")
    assert response.status_code == 401
    assert response.json() == {
        "error": {
            "code": "unauthorized",
            "message": "missing API key: send 'Authorization: Bearer <key>'",
            "field": "authorization",
            "errors": [{"field": "authorization", "message": "missing API key: send 'Authorization: Bearer <key>'"}],
        }
    }


def test_unknown_api_key_is_401(http, agent):
    response = http.get(f"/v1/agents/{agent['id']}", headers={"Authorization": "Bearer mt_wrong"})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "unknown or revoked API key"


def test_several_authorization_headers_are_401_whichever_keys_they_hold(http, database_url):
    # the first one counted here: a proxy checking the last would have let another tenant's key through
    owner, other = make_tenant(database_url, "owner"), make_tenant(database_url, "other")
    agent = MemtrialClient(api_key=owner, http=http).create_agent("fund", "balanced", UNIVERSE)
    both = [("Authorization", f"Bearer {other}"), ("Authorization", f"Bearer {owner}")]

    async def send():  # through ASGI as a server passes headers: each its own (the test client joins them)
        transport = httpx.ASGITransport(app=http.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as raw:
            return await raw.get(f"/v1/agents/{agent['id']}", headers=httpx.Headers(both))

    response = asyncio.run(send())
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "send one Authorization header, not several"


def test_a_body_is_read_only_for_a_known_key(http):
    # bodies were parsed before the key was checked: a client without one had its 2 MB parsed, answered 422 for a
    # broken body without counting as a failed attempt, and was still parsed once over its failure limit
    broken = b'{"name": "x", ' + b"[1]" * 1000
    for headers, code in (({"Authorization": "Bearer mt_wrong"}, "unauthorized"), ({}, "unauthorized")):
        answer = http.post("/v1/agents", content=broken, headers={**headers, "Content-Type": "application/json"})
        assert (answer.status_code, answer.json()["error"]["code"]) == (401, code)
    for _ in range(40):  # the failure limit (30 a minute) is reached by such requests too
        answer = http.post("/v1/agents", content=broken, headers={"Content-Type": "application/json"})
    assert answer.status_code == 429


def test_unknown_investor_is_422_naming_the_field(client):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "reckless", UNIVERSE)
    assert (error.value.status, error.value.field) == (422, "investor")


def test_repeated_assets_are_422(client):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "balanced", UNIVERSE + [UNIVERSE[0]])
    assert error.value.status == 422
    assert "assets must be unique, repeated: ['SPY']" in error.value.message


def test_universe_without_defensive_assets_is_422(client):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "balanced", [{"asset": "SPY", "asset_class": "equities"}])
    assert (error.value.status, error.value.field) == (422, "universe")
    assert "no long-only portfolio of this universe satisfies the balanced mandate" in error.value.message


def test_tenants_create_prints_a_key_once_and_stores_only_its_hash(tmp_path):
    from typer.testing import CliRunner

    from memtrial.cli.console import app
    from service.db import make_engine
    from service.security import hash_key

    url = f"sqlite:///{tmp_path / 'keys.db'}"
    result = CliRunner().invoke(app, ["tenants", "create", "acme", "--database-url", url])
    assert result.exit_code == 0, result.output
    key = result.output.split("api key: ")[1].strip()
    with make_engine(url).connect() as connection:
        stored = [row[0] for row in connection.exec_driver_sql("SELECT key_hash FROM api_keys")]
    assert stored == [hash_key(key)]
    again = CliRunner().invoke(app, ["tenants", "create", "acme", "--database-url", url])
    assert again.exit_code == 2
    assert "tenant 'acme' already exists" in again.output
    tabbed = CliRunner().invoke(
        app, ["tenants", "create", "a\tb", "--database-url", url]
    )  # it broke the list's columns
    assert tabbed.exit_code == 2 and "tenant name must be at most 200 printable characters" in tabbed.output


@pytest.mark.parametrize("command", ["create", "revoke", "rotate"])
def test_a_tenant_command_the_database_refuses_ends_in_one_line_naming_it(tmp_path, monkeypatch, command):
    """A database refusing the write (a read-only file, a full disk) ended a tenant command in a traceback."""
    import sqlite3

    from sqlalchemy.exc import OperationalError
    from typer.testing import CliRunner

    import service.tenancy as tenancy
    from memtrial.cli.console import app

    url = f"sqlite:///{tmp_path / 'keys.db'}"
    assert CliRunner().invoke(app, ["tenants", "create", "acme", "--database-url", url]).exit_code == 0

    def refused(*args, **kwargs):
        raise OperationalError("INSERT", {}, sqlite3.OperationalError("attempt to write a readonly database"))

    name = {"create": "create_tenant_with_key", "revoke": "revoke_keys", "rotate": "rotate_key"}[command]
    monkeypatch.setattr(tenancy, name, refused)
    result = CliRunner().invoke(
        app, ["tenants", command, "acme" if command != "create" else "beta", "--database-url", url]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        f"error: the database {url} refused the command (OperationalError: attempt to write a readonly database)"
        in (" ".join(result.output.split()))
    )


@pytest.mark.parametrize("command", [["list"], ["revoke", "acme"], ["rotate", "acme"]])
def test_a_tenant_command_on_a_sqlite_file_that_is_not_there_makes_none(tmp_path, command):
    """Run in the wrong folder, `tenants list` made and migrated an empty ./memtrial.db and said "no tenants"."""
    from typer.testing import CliRunner

    from memtrial.cli.console import app

    absent = tmp_path / "absent.db"
    result = CliRunner().invoke(app, ["tenants", *command, "--database-url", f"sqlite:///{absent}"])
    assert result.exit_code == 2 and f"the SQLite database {absent} does not exist" in " ".join(result.output.split())
    assert not absent.exists()


def test_request_logs_are_json_lines_without_the_api_key(client, agent, caplog):
    import json
    import logging

    from service.logs import JsonFormatter

    with caplog.at_level(logging.INFO, logger="memtrial.service"):
        client.get_agent(agent["id"])
    record = next(r for r in caplog.records if getattr(r, "path", None) == "/v1/agents/{agent_id}")
    entry = json.loads(JsonFormatter().format(record))
    assert (entry["message"], entry["method"], entry["status"]) == ("request", "GET", 200)
    assert client._headers["Authorization"].split()[1] not in caplog.text


@pytest.mark.parametrize("path", ["/decisions/x", "/trust", "/trust/verify", "/values", "/experiences"])
def test_every_agent_resource_of_another_tenant_is_404(client, http, database_url, agent, path):
    other = make_tenant(database_url, "other")
    response = http.get(f"/v1/agents/{agent['id']}{path}", headers={"Authorization": f"Bearer {other}"})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == f"agent {agent['id']!r} not found"


def test_an_agent_acting_by_the_trust_dial_shows_omega_and_its_combination(client):
    from service.client import ServiceError

    with pytest.raises(ServiceError) as refused:
        client._request(
            "POST",
            "/v1/agents",
            {
                "name": "dial",
                "investor": "balanced",
                "universe": UNIVERSE,
                "action": "dial",
                "gate": {"test": "prequential"},
            },
        )
    assert refused.value.status == 422 and refused.value.field == "action"
    assert "use gate test 'anytime'" in refused.value.message
    body = {
        "name": "dial",
        "investor": "balanced",
        "universe": UNIVERSE,
        "action": "dial",
        "credit": "raw",
        "gate": {"test": "anytime"},
    }
    agent = client._request("POST", "/v1/agents", body)
    assert (agent["action"], agent["credit"]) == ("dial", "raw")
    client.add_experiences(
        agent["id"],
        [{"text": t} for t in ("bonds rallied on cuts", "equities fell on inflation", "gold held up", "cash was safe")],
    )
    plan = client.create_decision(agent["id"], "2024-01-31T21:00:00Z", "2024-02-29T21:00:00Z", "rates fell")
    dial = plan["dial"]
    assert dial["trust_weight"] == 0.0 and dial["log_evidence"] == 0.0 and dial["noise_cost"] is None
    assert len(dial["combination"]) == len(plan["subsets"]) and sum(dial["combination"]) == pytest.approx(1.0)
    draft = {"SPY": 0.3, "TLT": 0.3, "GLD": 0.2, "BIL": 0.2}
    decision = client.submit_drafts(agent["id"], plan["decision_id"], [draft] * len(plan["subsets"]))
    assert decision["action"] == "dial" and decision["dial"] == dial
    assert "trust weight 0 from log e-value 0: all on the anchored mixture" in decision["explanation"]
    assert client.verify(agent["id"])["ok"]
