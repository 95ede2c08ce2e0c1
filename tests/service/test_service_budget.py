"""Service: an agent's draft budget (method 4.11): plans list exactly the drafts to make, decisions and the
prediction log record the calls, and the memory-free reference refuses reference weights."""

import datetime as dt

import pytest
from support import UNIVERSE

from service.client import ServiceError

START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = ["bonds rally when rates fall", "stocks trend", "gold hedges", "cash waits", "rates lead", "credit leads"]


def walk(client, agent, n_dates):
    """Plan, draft only the listed subsets, decide and settle; returns (plan, decision) of every date."""
    ids = [item["id"] for item in client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])["items"]]
    tilt = {e: 0.02 * (i - 2.5) for i, e in enumerate(ids)}
    out = []
    for t in range(n_dates):
        time = START + dt.timedelta(days=30 * t)
        plan = client.create_decision(agent["id"], time, time + dt.timedelta(days=28), f"month {t}", horizon=2)
        drafts = []
        for subset in plan["subsets"]:
            shift = sum(tilt[e] for e in subset["experience_ids"])
            drafts.append({"SPY": 0.3 + shift, "TLT": 0.3, "GLD": 0.2 - shift, "BIL": 0.2})
        decision = client.submit_drafts(agent["id"], plan["decision_id"], drafts)
        returns = {"SPY": [0.01 * ((t % 3) - 1), 0.002], "TLT": [0.001, -0.001], "GLD": [0.0, 0.0], "BIL": [0.0, 0.0]}
        client.settle(agent["id"], plan["decision_id"], returns=returns)
        out.append((plan, decision))
    return out


@pytest.mark.parametrize("reference", ["given", "memory_free"])
def test_a_budgeted_agent_drafts_only_what_each_plan_lists_within_its_budget(client, reference):
    agent = client.create_agent(
        "fund",
        "balanced",
        UNIVERSE,
        gate={"test": "anytime"},
        action="dial",
        draft_budget=3,
        reference=reference,
        design="half",  # trials of eight, the memory-free draft among them
    )
    assert agent["draft_budget"] == 3 and agent["reference"] == reference
    steps = walk(client, agent, 14)
    calls = [plan["draft_calls"] for plan, _ in steps]
    assert all(sum(calls[: n + 1]) <= 3 * (n + 1) for n in range(len(calls)))
    assert {plan["trial"] for plan, _ in steps} == {True, False}
    for plan, decision in steps:
        assert plan["draft_calls"] == len(plan["subsets"]) == decision["draft_calls"] == len(decision["drafts"])
        # an exploiting plan drafts one subset, or at partial trust the memory-free one beside memory's
        assert len(plan["subsets"]) in ({8} if plan["trial"] else {1, 2} if reference == "memory_free" else {1})
        if reference == "memory_free" and plan["subsets"][0]["mask"] == 0:
            assert decision["reference"] == 0
    log = client.trust_log(agent["id"], limit=1000)["items"]
    predictions = [e for e in log if e["kind"] == "prediction"]
    assert len(predictions) == sum(p["trial"] for p, _ in steps)  # only trials are scored
    assert all(e["payload"]["details"]["draft_calls"] == 8 for e in predictions)
    exploits = [e for e in log if e["kind"] == "exploit"]
    assert sum(e["payload"]["draft_calls"] for e in exploits) + 8 * len(predictions) == sum(calls)
    assert client.verify(agent["id"])["ok"]


def test_a_horizon_spends_the_trials_first_and_the_budget_bets_on_the_wider_grid(client):
    agent = client.create_agent(
        "fund", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial", draft_budget=3, draft_horizon=14
    )
    assert agent["draft_horizon"] == 14 and agent["gate"]["bets"] == [0.2, 0.4, 0.6, 0.8]
    steps = walk(client, agent, 14)
    calls = [plan["draft_calls"] for plan, _ in steps]
    trials = [t for t, (plan, _) in enumerate(steps) if plan["trial"]]
    assert trials == list(range(len(trials))) and len(trials) >= 3  # (3 - 1) * 14 / 7 = 4 trials of 8, first
    assert sum(calls) <= 3 * 14 and all(c >= 1 for c in calls)
    plain = client.create_agent("plain", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial")
    assert plain["draft_horizon"] is None and plain["gate"]["bets"] == [
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
    ]


@pytest.mark.parametrize(
    "settings",
    [{"draft_horizon": 10}, {"draft_budget": 3, "draft_horizon": 0}, {"draft_budget": 3, "draft_horizon": 2.5}],
)
def test_a_draft_horizon_without_a_budget_or_not_a_count_is_refused_naming_it(client, settings):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial", **settings)
    assert error.value.status == 422 and "draft_horizon" in str(error.value)


def test_too_many_drafts_for_a_budget_plan_are_refused_with_the_count_it_asked_for(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial", draft_budget=2)
    client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=28), "month 0", horizon=2)
    assert plan["trial"] is False and plan["draft_calls"] == 1  # the first decision cannot afford a trial
    draft = {"SPY": 0.3, "TLT": 0.3, "GLD": 0.2, "BIL": 0.2}
    with pytest.raises(ServiceError) as error:
        client.submit_drafts(agent["id"], plan["decision_id"], [draft] * 8)
    assert error.value.status == 422 and "(1)" in error.value.message


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"draft_budget": 0.5}, "draft_budget"),
        ({"draft_budget": 17}, "draft_budget"),
        ({"draft_budget": "3"}, "draft_budget"),
    ],
)
def test_a_draft_budget_outside_its_range_is_refused_naming_the_field(client, settings, field):
    with pytest.raises(ServiceError) as error:
        client.create_agent("fund", "balanced", UNIVERSE, **settings)
    assert error.value.status == 422 and error.value.field == field


def test_a_memory_free_reference_refuses_reference_weights(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE, reference="memory_free")
    client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])
    with pytest.raises(ServiceError) as error:
        client.create_decision(
            agent["id"],
            START,
            START + dt.timedelta(days=28),
            "month 0",
            horizon=2,
            reference_weights={"SPY": 0.25, "TLT": 0.25, "GLD": 0.25, "BIL": 0.25},
        )
    assert error.value.status == 422 and error.value.field == "reference_weights"


def test_a_fold_design_drafts_every_experience_alone_and_scored_agents_refuse_it(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE, gate={"test": "anytime"}, action="dial", design="fold")
    plan = walk(client, agent, 1)[0][0]
    assert [s["mask"] for s in plan["subsets"]] == [1, 2, 4, 7, 8, 11, 13, 14]
    anchored = client.create_agent("anchored", "balanced", UNIVERSE, design="fold", reference="memory_free")
    plan, decision = walk(client, anchored, 1)[0]
    assert [s["mask"] for s in plan["subsets"]][-1] == 0 and plan["draft_calls"] == 9 and decision["reference"] == 8
    with pytest.raises(ServiceError) as error:
        client.create_agent("forecaster", kind="scored", outcomes=["yes", "no"], design="fold")
    assert error.value.status == 422 and error.value.field == "design"


SEVEN = [*LESSONS, "oil leads", "dollar leads"]


def test_a_saturated_budget_agent_screens_seven_retrieved_in_nine_calls(client):
    agent = client.create_agent(
        "wide",
        "balanced",
        UNIVERSE,
        gate={"test": "anytime"},
        action="dial",
        design="saturated",
        k=7,
        reference="memory_free",
        draft_budget=3,
        draft_horizon=12,
    )
    assert (agent["design"], agent["k"]) == ("saturated", 7)
    ids = [item["id"] for item in client.add_experiences(agent["id"], [{"text": t} for t in SEVEN])["items"]]
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=28), "month 0", horizon=2)
    assert plan["trial"] and len(plan["retrieved"]) == 7 and plan["draft_calls"] == 9
    assert [s["mask"] for s in plan["subsets"]] == [56, 97, 82, 11, 76, 21, 38, 127, 0]
    drafts = [{"SPY": 0.25, "TLT": 0.25, "GLD": 0.25, "BIL": 0.25}] * 9
    decision = client.submit_drafts(agent["id"], plan["decision_id"], drafts)
    assert decision["reference"] == 8
    returns = {"SPY": [0.01, 0.002], "TLT": [0.001, -0.001], "GLD": [0.0, 0.0], "BIL": [0.0, 0.0]}
    settled = client.settle(agent["id"], plan["decision_id"], returns=returns)
    assert set(settled["contributions"]) == {r["id"] for r in plan["retrieved"]}  # each of the seven credited
    later = START + dt.timedelta(days=30)
    own = client.create_decision(
        agent["id"], later, later + dt.timedelta(days=28), "month 1", horizon=2, retrieved_ids=ids[:5]
    )
    assert len(own["retrieved"]) == 5 and len(own["subsets"]) in (1, 2, 9)


def test_more_retrieved_ids_than_the_agents_k_are_refused_naming_the_field(client):
    agent = client.create_agent("fund", "balanced", UNIVERSE)
    assert agent["k"] == 4
    ids = [item["id"] for item in client.add_experiences(agent["id"], [{"text": t} for t in SEVEN])["items"]]
    with pytest.raises(ServiceError) as error:
        client.create_decision(
            agent["id"], START, START + dt.timedelta(days=28), "month 0", horizon=2, retrieved_ids=ids[:5]
        )
    assert error.value.status == 422 and error.value.field == "retrieved_ids" and "k = 4" in error.value.message
    for bad in (0, 9, "7"):
        with pytest.raises(ServiceError) as error:
            client.create_agent("wide", "balanced", UNIVERSE, k=bad)
        assert error.value.status == 422 and error.value.field == "k"
    with pytest.raises(ServiceError) as error:
        client.create_agent("forecaster", kind="scored", outcomes=["yes", "no"], design="saturated", k=7)
    assert error.value.status == 422 and error.value.field == "design"


def test_a_budget_plans_alike_whether_its_engine_was_cached_or_reloaded_from_the_database(client, database_url):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.client import MemtrialClient
    from service.settings import Settings

    settings = {"gate": {"test": "anytime"}, "action": "dial", "draft_budget": 3}
    cached = [
        (p["trial"], p["draft_calls"])
        for p, _ in walk(client, client.create_agent("a", "balanced", UNIVERSE, **settings), 14)
    ]
    # a worker that keeps no engine reloads the agent from the database at every request
    with TestClient(create_app(Settings(database_url=database_url, cache_mb=0))) as http:
        uncached = MemtrialClient(api_key=client._headers["Authorization"].split()[1], http=http)
        agent = uncached.create_agent("b", "balanced", UNIVERSE, **settings)
        reloaded = [(p["trial"], p["draft_calls"]) for p, _ in walk(uncached, agent, 14)]
    assert reloaded == cached
    calls = [c for _, c in reloaded]
    assert all(sum(calls[: n + 1]) <= 3 * (n + 1) for n in range(len(calls)))
