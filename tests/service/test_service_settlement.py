"""Service: settlements are plausible and complete (returns, prices, utilities, the decision's horizon)."""

import datetime as dt

import pytest
from support import ASSETS, MONTH_ZERO, MONTHLY_LESSONS, decide_month

from service.client import ServiceError


def _scored_agent(client, name="grader", robust=True):
    return client.create_agent(
        name, kind="scored", outcomes=["yes", "no", "maybe"], gate={"test": "anytime", "alpha": 0.05}, robust=robust
    )


def test_implausible_returns_and_prices_are_refused_naming_the_asset(client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    plan = decide_month(client, agent["id"])
    ordinary = {"TLT": [0.001, 0.002], "GLD": [0.0, 0.01], "BIL": [0.0001, 0.0001]}
    with pytest.raises(ServiceError) as error:
        client.settle(agent["id"], plan["decision_id"], returns={"SPY": [1e100, 0.0], **ordinary})
    assert (error.value.status, error.value.field) == (
        422,
        "returns.SPY",
    ) and "MEMTRIAL_MAX_SESSION_RETURN" in error.value.message
    with pytest.raises(ServiceError) as error:
        client.settle(
            agent["id"],
            plan["decision_id"],
            prices={"SPY": [100, 101, 5e9], "TLT": [1, 1, 1], "GLD": [1, 1, 1], "BIL": [1, 1, 1]},
        )
    assert (error.value.status, error.value.field) == (422, "prices.SPY")
    assert client.get_decision(agent["id"], plan["decision_id"])["status"] == "decided"  # nothing was settled


def test_settle_must_give_the_decisions_horizon_and_a_portfolio_matures_after_its_decision(client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    plan = decide_month(client, agent["id"], horizon=20)
    with pytest.raises(ServiceError) as error:
        client.settle(agent["id"], plan["decision_id"], returns={a: [0.001] * 10_000 for a in ASSETS})
    assert (error.value.status, error.value.field) == (422, "returns") and "holds 20 sessions" in error.value.message
    with pytest.raises(ServiceError) as error:
        client.settle(agent["id"], plan["decision_id"], prices={a: [1.0, 1.01] for a in ASSETS})
    assert error.value.status == 422 and "21 closes" in error.value.message
    assert (
        client.settle(agent["id"], plan["decision_id"], returns={a: [0.001] * 20 for a in ASSETS})["status"]
        == "settled"
    )
    with pytest.raises(ServiceError) as error:
        client.create_decision(
            agent["id"],
            MONTH_ZERO + dt.timedelta(days=60),
            MONTH_ZERO + dt.timedelta(days=60),
            "same instant",
            horizon=20,
        )
    assert (error.value.status, error.value.field) == (422, "maturity")


def test_implausible_utilities_are_refused_and_exact_is_not_a_rule_for_probability_forecasts(client):
    agent = _scored_agent(client)
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    plan = client.create_decision(agent["id"], MONTH_ZERO, MONTH_ZERO + dt.timedelta(hours=1), "will it rain?")
    forecast = {"yes": 0.5, "no": 0.3, "maybe": 0.2}
    client.submit_drafts(agent["id"], plan["decision_id"], [forecast] * len(plan["subsets"]))
    with pytest.raises(ServiceError) as error:
        client.settle(agent["id"], plan["decision_id"], utilities=[1e150] + [0.0] * (len(plan["subsets"]) - 1))
    assert (error.value.status, error.value.field) == (
        422,
        "utilities.0",
    ) and "MEMTRIAL_MAX_ABS_UTILITY" in error.value.message
    with pytest.raises(ServiceError) as error:  # just above the bound: the message shows it above, not at it
        client.settle(
            agent["id"], plan["decision_id"], utilities=[1000000.0000001] + [0.0] * (len(plan["subsets"]) - 1)
        )
    assert error.value.message.startswith("utilities.0: a utility of 1000000.0000001 is beyond the plausible +-1e+06")
    with pytest.raises(ServiceError) as error:
        client.settle(agent["id"], plan["decision_id"], outcome="yes", rule="exact")
    assert (error.value.status, error.value.field) == (422, "rule")
