"""Service: an agent's settings after creation: the draft budget and horizon and the drafter change from the
next plan on, logged with the old and new values and honoured after a restart; every other setting is fixed."""

import datetime as dt
import json

import pytest
from support import UNIVERSE, raw

from service.client import ServiceError

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = ["bonds rally when rates fall", "stocks trend", "gold hedges", "cash waits", "rates lead", "credit leads"]


def walk(client, agent, ids, dates, between=lambda: None):
    """Plan, draft only the listed subsets, decide and settle each date (``between`` runs between requests)."""
    tilt = {e: 0.02 * (i - 2.5) for i, e in enumerate(ids)}
    plans = []
    for t in dates:
        time = START + dt.timedelta(days=30 * t)
        plan = client.create_decision(agent["id"], time, time + dt.timedelta(days=28), f"month {t}", horizon=2)
        between()
        drafts = []
        for subset in plan["subsets"]:
            shift = sum(tilt[e] for e in subset["experience_ids"])
            drafts.append({"SPY": 0.3 + shift, "TLT": 0.3, "GLD": 0.2 - shift, "BIL": 0.2})
        client.submit_drafts(agent["id"], plan["decision_id"], drafts)
        between()
        returns = {"SPY": [0.01 * ((t % 3) - 1), 0.002], "TLT": [0.001, -0.001], "GLD": [0.0, 0.0], "BIL": [0.0, 0.0]}
        client.settle(agent["id"], plan["decision_id"], returns=returns)
        between()
        plans.append(plan)
    return plans


def _stored_config(database_url, agent_id):
    """The engine configuration the service stored with an agent's state."""
    from sqlalchemy import select

    from memtrial.engine.config import EngineConfig
    from service.db import make_engine
    from service.models import Agent

    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            state = connection.execute(select(Agent.state).where(Agent.id == agent_id)).scalar_one()
    finally:
        engine.dispose()
    return EngineConfig.from_dict(json.loads(state)["config"])


def test_a_new_agent_without_settings_has_the_engines_defaults_the_backtests_memtrial(client, database_url):
    """One definition: an agent created without settings runs EngineConfig's defaults, which the backtests'
    default memtrial runs with its world's settings only; a scored agent the scored design."""
    from backtest.methods.registry import MEMTRIAL_VARIANTS
    from memtrial.engine.config import SCORED_DESIGN, EngineConfig

    portfolio = client._request("POST", "/v1/agents", {"name": "plain", "investor": "balanced", "universe": UNIVERSE})
    assert (portfolio["action"], portfolio["credit"], portfolio["design"], portfolio["fallback"]) == (
        "dial",
        "raw",
        "fold",
        "ref",
    )
    assert portfolio["gate"]["test"] == "anytime" and portfolio["k"] == 4
    assert _stored_config(database_url, portfolio["id"]) == EngineConfig(investor="balanced")
    assert MEMTRIAL_VARIANTS["memtrial"] == {}  # the backtests' default adds nothing to the engine's
    scored = client._request("POST", "/v1/agents", {"name": "graded", "kind": "scored", "outcomes": ["yes", "no"]})
    assert (scored["design"], scored["action"], scored["fallback"]) == ("half", "dial", "ref")
    assert _stored_config(database_url, scored["id"]) == EngineConfig(gamma=0.0, design=SCORED_DESIGN)
    # the paper's rule is one request away, and a dial with the prequential test is refused naming action
    paper = {
        "action": "gate",
        "credit": "centred",
        "design": "half",
        "fallback": "ftrl",
        "gate": {"test": "prequential"},
    }
    made = client._request(
        "POST", "/v1/agents", {"name": "paper", "investor": "balanced", "universe": UNIVERSE, **paper}
    )
    assert (made["action"], made["gate"]["test"], made["design"]) == ("gate", "prequential", "half")
    body = {"name": "x", "investor": "balanced", "universe": UNIVERSE, "gate": {"test": "prequential"}}
    with pytest.raises(ServiceError) as refused:
        client._request("POST", "/v1/agents", body)
    assert refused.value.status == 422 and refused.value.field == "action"
    assert "or action 'gate'" in refused.value.message
    assert [a["name"] for a in client.list_agents()["items"]] == ["plain", "graded", "paper"]  # nothing written


def test_an_agent_shows_every_setting_it_was_created_with_the_outlier_screen_too(client):
    """``GET /v1/agents/{id}`` lists the settings an agent keeps (docs/configuration.md): each one a request
    can set at creation is in the answer, so ``robust`` can be read back."""
    from service.schemas import AgentCreate, AgentPublic

    assert set(AgentCreate.model_fields) <= set(AgentPublic.model_fields)
    screened = client.create_agent("screened", "balanced", UNIVERSE, robust=True)
    plain = client.create_agent("plain", "balanced", UNIVERSE)
    assert (screened["robust"], plain["robust"]) == (True, False)
    assert client.get_agent(screened["id"])["robust"] is True
    assert [a["robust"] for a in client.list_agents()["items"]] == [True, False]


def new_agent(client, name):
    agent = client.create_agent(name, "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial")
    ids = [item["id"] for item in client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])["items"]]
    return agent, ids


def test_a_draft_budget_set_mid_life_is_logged_verified_and_honoured_across_restarts(client, app):
    engines = app.state.services.engines
    (steady, steady_ids), (restarted, restarted_ids) = new_agent(client, "steady"), new_agent(client, "restarted")
    walk(client, steady, steady_ids, range(4))
    walk(client, restarted, restarted_ids, range(4))
    for agent in (steady, restarted):
        updated = client.update_agent(agent["id"], draft_budget=2)
        assert updated["draft_budget"] == 2 and updated["gate_hash"] == agent["gate_hash"]
        assert updated["gate"] == agent["gate"]  # the gate stays as it was registered
    first = walk(client, steady, steady_ids, range(4, 16))
    second = walk(client, restarted, restarted_ids, range(4, 16), lambda: engines.forget(restarted["id"]))
    assert [(p["trial"], p["draft_calls"]) for p in first] == [(p["trial"], p["draft_calls"]) for p in second]
    calls = [p["draft_calls"] for p in first]
    assert all(sum(calls[: n + 1]) <= 2 * (n + 1) for n in range(len(calls)))
    assert {p["trial"] for p in first} == {True, False}
    log = client.trust_log(restarted["id"], limit=1000)["items"]
    changes = [entry for entry in log if entry["kind"] == "settings"]
    assert [entry["payload"] for entry in changes] == [
        {"changes": {"draft_budget": {"old": None, "new": 2.0}}, "decisions_budgeted": 0}
    ]
    assert client.verify(restarted["id"])["ok"] and client.get_agent(restarted["id"])["draft_budget"] == 2


def test_setting_a_budget_aside_and_changing_the_drafter_are_logged_and_an_unchanged_value_is_not(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE, draft_budget=3, draft_horizon=20)
    with pytest.raises(ServiceError) as error:  # a horizon needs a budget: set both aside together
        client.update_agent(agent["id"], draft_budget=None)
    assert (error.value.status, error.value.field) == (422, "draft_budget")  # named as sent, with what to send
    assert error.value.message == (
        "draft_budget: the budget is spread over a draft_horizon of 20 decisions; to set the budget aside, "
        "set draft_horizon to null with it"
    )
    client.update_agent(agent["id"], draft_budget=3)  # unchanged: nothing to log
    updated = client.update_agent(agent["id"], draft_budget=None, draft_horizon=None)
    assert updated["draft_budget"] is None and updated["draft_horizon"] is None
    log = client.trust_log(agent["id"])["items"]
    assert [entry["payload"]["changes"] for entry in log if entry["kind"] == "settings"] == [
        {"draft_budget": {"old": 3.0, "new": None}, "draft_horizon": {"old": 20, "new": None}}
    ]
    assert client.verify(agent["id"]) == {"ok": True, "n_entries": 1, "first_invalid": None, "reason": None}


@pytest.mark.parametrize(
    ("body", "field", "why"),
    [
        ({"k": 5}, "k", "it sets what a trial drafts and how many contrasts each score correlates"),
        ({"gate": {"test": "anytime"}}, "gate", "it is the pre-registered trust gate, whose hash anchors the log"),
        ({"design": "full"}, "design", "it sets what a trial drafts and what each contrast measures"),
    ],
)
def test_a_patch_of_a_setting_fixed_at_creation_is_422_naming_it_and_writes_nothing(http, client, body, field, why):
    agent = client.create_agent("fund", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial")
    response = raw(http, client, "PATCH", f"/v1/agents/{agent['id']}", json.dumps({"draft_budget": 3, **body}))
    assert response.status_code == 422
    message = f"{field}: fixed when the agent was created ({why}); PATCH changes name, drafter, draft_budget, draft_horizon, retrieval and quarantine"
    assert response.json()["error"] == {
        "code": "invalid",
        "message": message,
        "field": field,
        "errors": [{"field": field, "message": message}],
    }
    assert client.get_agent(agent["id"]) == agent and client.trust_log(agent["id"])["items"] == []


def test_a_draft_horizon_without_a_budget_is_refused_naming_it_and_writes_nothing(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE)
    with pytest.raises(ServiceError) as error:
        client.update_agent(agent["id"], draft_horizon=10)
    assert (error.value.status, error.value.field) == (422, "draft_horizon")
    assert error.value.message == "draft_horizon needs a draft_budget to spread over it"
    assert client.get_agent(agent["id"]) == agent and client.trust_log(agent["id"])["items"] == []
