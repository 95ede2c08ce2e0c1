"""Service: the decision lifecycle over REST (client and server drafting), validation and conflicts."""

import datetime as dt
import json

import pytest
from support import UNIVERSE

from service.client import ServiceError

ASSETS = [a["asset"] for a in UNIVERSE]
START = dt.datetime(2021, 1, 29, 21, 0, tzinfo=dt.UTC)
LESSONS = [
    "Bonds rallied when rates were cut.",
    "Equities dropped after an inflation surprise.",
    "Gold held up in a banking scare.",
    "Cash protected the book in a volatile month.",
    "Momentum in equities persisted for a quarter.",
]
DRAFT = {"SPY": 0.4, "TLT": 0.3, "GLD": 0.1, "BIL": 0.2}
RETURNS = {
    "SPY": [0.01, -0.004, 0.006],
    "TLT": [-0.002, 0.003, 0.001],
    "GLD": [0.0, 0.002, -0.001],
    "BIL": [0.0001, 0.0001, 0.0001],
}


def plan(client, agent, t=0, **kwargs):
    time = START + dt.timedelta(days=30 * t)
    kwargs.setdefault("horizon", 3)  # RETURNS holds three sessions
    return client.create_decision(
        agent["id"], time, time + dt.timedelta(days=28), f"month {t}: rates fell, equities volatile", **kwargs
    )


@pytest.fixture
def stocked(client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in LESSONS])
    return agent


def drafts_for(plan_body):
    rows = []
    for subset in plan_body["subsets"]:
        tilt = len(subset["experience_ids"]) * 0.05
        rows.append({"SPY": 0.3 + tilt, "TLT": 0.3, "GLD": 0.2 - tilt, "BIL": 0.2})
    return rows


def test_plan_returns_four_retrieved_experiences_and_eight_subsets_with_texts(client, stocked):
    body = plan(client, stocked)
    assert body["status"] == "planned" and len(body["retrieved"]) == 4
    # the default odd half: every experience alone, then every three of the four; no memory-free run
    assert [s["mask"] for s in body["subsets"]] == [1, 2, 4, 7, 8, 11, 13, 14]
    assert [len(s["texts"]) for s in body["subsets"]] == [1, 1, 1, 3, 1, 3, 3, 3]
    assert body["subsets"][0]["texts"] == [body["retrieved"][0]["text"]]
    assert set(body["predictions"]) == {r["id"] for r in body["retrieved"]}
    assert body["trust"]["status"] == "insufficient_evidence" and body["q"] == 1.0  # closed on the reference
    assert body["dial"]["trust_weight"] == 0.0


def test_drafts_give_a_decision_with_weights_and_explanation(client, stocked):
    body = plan(client, stocked)
    decision = client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    assert decision["action"] == "dial" and decision["q"] == 1.0
    assert set(decision["weights"]) == set(ASSETS)
    assert sum(decision["weights"].values()) == pytest.approx(1.0)
    assert decision["weights"] == pytest.approx(dict.fromkeys(ASSETS, 0.25))  # at trust 0: the reference, 1/N
    assert decision["explanation"].startswith(
        "gate anytime: insufficient evidence (0 scores); trust weight 0 from log e-value 0: all on the anchored mixture"
    )


def test_settle_returns_contributions_and_is_idempotent(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    first = client.settle(stocked["id"], body["decision_id"], returns=RETURNS)
    assert set(first["contributions"]) == {r["id"] for r in body["retrieved"]}
    assert sum(first["centred"].values()) == pytest.approx(0.0, abs=1e-15)
    assert client.settle(stocked["id"], body["decision_id"], returns=RETURNS) == first
    history = client.get_experience(stocked["id"], body["retrieved"][0]["id"])["contributions"]
    assert len(history) == 1 and history[0]["decision_id"] == body["decision_id"]


def test_settle_with_a_different_payload_is_409(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    client.settle(stocked["id"], body["decision_id"], returns=RETURNS)
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns={**RETURNS, "SPY": [0.02, 0.0, 0.0]})
    assert (error.value.status, error.value.code) == (409, "settlement_conflict")
    # a body it could never have been settled with is refused as invalid first, naming its field
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns={"SPY": [0.01, 0.0, 0.0]})
    assert (error.value.status, error.value.field) == (422, "returns") and "missing assets" in error.value.message
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], outcome="up", rule="exact")
    assert (error.value.status, error.value.field) == (422, "rule")


def test_a_correction_of_a_decision_not_settled_says_what_to_do(client, stocked):
    body = plan(client, stocked)
    with pytest.raises(ServiceError) as error:
        client.correct(stocked["id"], body["decision_id"], returns=RETURNS, reason="wrong prices")
    assert (error.value.status, error.value.field) == (409, "decision_id")
    assert error.value.message.endswith("is planned, not settled: post its drafts, then settle it")
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    with pytest.raises(ServiceError) as error:
        client.correct(stocked["id"], body["decision_id"], returns=RETURNS, reason="wrong prices")
    assert error.value.message.endswith("is decided, not settled: settle it instead of correcting it")


def test_settle_before_maturity_is_409(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns=RETURNS, settled_at=START + dt.timedelta(days=27))
    assert (error.value.status, error.value.code, error.value.field) == (409, "premature_settlement", "settled_at")


def test_settle_at_a_future_time_is_422(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    with pytest.raises(ServiceError) as error:
        client.settle(
            stocked["id"],
            body["decision_id"],
            returns=RETURNS,
            settled_at=dt.datetime.now(dt.UTC) + dt.timedelta(days=3),
        )
    assert (error.value.status, error.value.message) == (422, "settled_at: cannot be in the future")


def test_settle_before_drafts_is_409(client, stocked):
    body = plan(client, stocked)
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns=RETURNS)
    assert error.value.status == 409
    assert error.value.message == f"decision {body['decision_id']!r} has no drafts yet: post its drafts before settling"


def test_planning_earlier_than_a_settled_outcome_is_409(client, stocked):
    body = plan(client, stocked, t=2)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    client.settle(stocked["id"], body["decision_id"], returns=RETURNS)
    with pytest.raises(ServiceError) as error:
        plan(client, stocked, t=1)
    assert (error.value.status, error.value.code, error.value.field) == (409, "time_order", "decision_time")


def test_prices_and_returns_settle_the_same(client, stocked):
    closes = {asset: [100.0] for asset in ASSETS}
    for asset, returns in RETURNS.items():
        for r in returns:
            closes[asset].append(closes[asset][-1] * (1 + r))
    outcomes = []
    for t, kwargs in ((0, {"returns": RETURNS}), (1, {"prices": closes})):
        body = plan(client, stocked, t=t)
        client.submit_drafts(stocked["id"], body["decision_id"], [DRAFT] * 8)
        outcomes.append(client.settle(stocked["id"], body["decision_id"], **kwargs)["reference_utility"])
    assert outcomes[0] == pytest.approx(outcomes[1], abs=1e-14)


@pytest.mark.parametrize(
    ("drafts", "status", "field", "message"),
    [
        ([DRAFT] * 7, 422, "drafts", "drafts: give one per designed subset (8), got 7"),
        # every error of a draft is named by its place, dotted as the body's other fields are
        ([DRAFT, {**DRAFT, "QQQ": 0.0}] * 4, 422, "drafts.1", "drafts.1: unknown assets ['QQQ']"),
        (
            [DRAFT, {**DRAFT, "SPY": -0.1, "TLT": 0.8}] * 4,
            422,
            "drafts.1.SPY",
            "drafts.1.SPY: a weight must be >= 0 (long only), got -0.1",
        ),
        ([DRAFT, {**DRAFT, "GLD": "0.2"}] * 4, 422, "drafts.1.GLD", "drafts.1.GLD: Input should be a valid number"),
        ([DRAFT, {**DRAFT, "SPY": 0.5}] * 4, 422, "drafts.1", "drafts.1: weights must sum to 1, got 1.1"),
    ],
)
def test_bad_drafts_are_rejected_naming_the_field(client, stocked, drafts, status, field, message):
    body = plan(client, stocked)
    with pytest.raises(ServiceError) as error:
        client.submit_drafts(stocked["id"], body["decision_id"], drafts)
    assert (error.value.status, error.value.field, error.value.message) == (status, field, message)
    assert client.get_decision(stocked["id"], body["decision_id"])["status"] == "planned"


def test_nan_weights_are_rejected(http, client, stocked):
    body = plan(client, stocked)
    raw = json.dumps({"drafts": [{**DRAFT, "SPY": float("nan")}] * 8})
    response = http.post(
        f"/v1/agents/{stocked['id']}/decisions/{body['decision_id']}/drafts",
        content=raw,
        headers={"Authorization": client._headers["Authorization"], "content-type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "invalid_json",
        "message": "body: not valid JSON (NaN is not a number JSON allows)",
        "field": "body",
        "errors": [{"field": "body", "message": "body: not valid JSON (NaN is not a number JSON allows)"}],
    }


def test_settlement_missing_an_asset_is_422(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], [DRAFT] * 8)
    partial = {k: v for k, v in RETURNS.items() if k != "GLD"}
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns=partial)
    assert (error.value.status, error.value.field, error.value.message) == (
        422,
        "returns.GLD",
        "returns: missing assets ['GLD']",
    )
    several = {k: v for k, v in RETURNS.items() if k not in ("GLD", "BIL")}
    with pytest.raises(ServiceError) as error:
        client.settle(stocked["id"], body["decision_id"], returns=several)
    assert (error.value.field, error.value.message) == ("returns", "returns: missing assets ['GLD', 'BIL']")


def test_maturity_before_decision_time_is_422_naming_maturity(client, stocked):
    with pytest.raises(ServiceError) as error:
        client.create_decision(stocked["id"], START, START - dt.timedelta(days=1), "x")
    assert (error.value.status, error.value.field) == (422, "maturity")
    assert error.value.message == (
        "maturity: maturity must not be before decision_time "
        "(2021-01-28T21:00:00+00:00 is before 2021-01-29T21:00:00+00:00)"
    )


def test_naive_decision_time_is_422(client, stocked):
    with pytest.raises(ServiceError) as error:
        client.create_decision(stocked["id"], "2021-01-29T21:00:00", "2021-02-26T21:00:00", "x")
    assert (error.value.status, error.value.field) == (422, "decision_time")


def test_server_drafting_without_a_drafter_is_422(client, stocked):
    with pytest.raises(ServiceError) as error:
        plan(client, stocked, drafting="server")
    assert (error.value.status, error.value.field) == (422, "drafting")


def test_an_agent_without_experiences_plans_one_memory_free_draft(client, agent):
    body = plan(client, agent)
    assert body["retrieved"] == [] and [s["mask"] for s in body["subsets"]] == [0]
    decision = client.submit_drafts(agent["id"], body["decision_id"], [DRAFT])
    assert decision["action"] == "dial" and decision["dial"]["trust_weight"] == 0.0
    settled = client.settle(agent["id"], body["decision_id"], returns=RETURNS)
    assert settled["contributions"] == {} and settled["score"] is None


def test_returns_that_look_like_percentages_are_settled_with_a_warning_naming_the_asset(client, stocked):
    planned = plan(client, stocked)
    client.submit_drafts(stocked["id"], planned["decision_id"], [DRAFT] * len(planned["subsets"]))
    percent = {**RETURNS, "SPY": [1.2, -0.4, 0.6]}  # +1.2%, -0.4%, +0.6% given as percentages
    settled = client.settle(
        stocked["id"], planned["decision_id"], returns=percent, settled_at=START + dt.timedelta(days=29)
    )
    assert [(w.field, w.message) for w in settled.warnings] == [
        (
            "returns.SPY",
            "returns.SPY: session 1 has a return of 1.2 (+120.0000%): returns are fractions (0.012 for +1.2%); "
            "if these were percentages, post a correction",
        )
    ]
    corrected = client.correct(
        stocked["id"],
        planned["decision_id"],
        reason="percentages",
        returns=RETURNS,
        settled_at=START + dt.timedelta(days=29),
    )
    assert corrected.warnings == [] and corrected.corrections[0].superseded["warnings"][0]["field"] == "returns.SPY"
    # closes that imply such a move warn too, and ordinary ones do not
    later = plan(client, stocked, t=1)
    client.submit_drafts(stocked["id"], later["decision_id"], [DRAFT] * len(later["subsets"]))
    closes = {a: [100.0, 100.5, 101.0, 100.8] for a in ASSETS}
    settled = client.settle(
        stocked["id"],
        later["decision_id"],
        prices={**closes, "GLD": [100.0, 100.2, 45.0, 45.1]},
        settled_at=START + dt.timedelta(days=59),
    )
    assert [w.field for w in settled.warnings] == ["prices.GLD"] and "session 2" in settled.warnings[0].message


def test_a_decision_in_the_future_is_refused_and_does_not_lock_the_agent(client, agent):
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)
    with pytest.raises(ServiceError) as error:
        client.create_decision(agent["id"], ahead, ahead + dt.timedelta(days=1), "far ahead")
    assert (error.value.status, error.value.field) == (422, "decision_time")
    assert "later than now plus the allowed clock skew (300 s)" in error.value.message
    assert client.create_decision(agent["id"], START, START + dt.timedelta(days=1), "today")["status"] == "planned"


def test_a_draft_missing_an_asset_is_refused(client, agent):
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(days=1), "x")
    with pytest.raises(ServiceError) as error:
        client.submit_drafts(agent["id"], plan["decision_id"], [{"SPY": 0.5, "TLT": 0.5}])
    assert (error.value.status, error.value.field) == (422, "drafts.0")
    assert "missing assets ['GLD', 'BIL']" in error.value.message


def test_a_bad_reference_weight_is_named_by_its_asset(client, agent):
    for weight, rule in ((-0.1, ">= 0 (long only)"), (-0.0001, ">= 0 (long only)")):
        body = {"decision_time": START.isoformat(), "maturity": (START + dt.timedelta(days=1)).isoformat()}
        body |= {"context_text": "x", "reference_weights": {**DRAFT, "TLT": weight}}
        with pytest.raises(ServiceError) as error:
            client._request("POST", f"/v1/agents/{agent['id']}/decisions", body)
        assert (error.value.status, error.value.field) == (422, "reference_weights.TLT")
        assert error.value.message.startswith(f"reference_weights.TLT: a weight must be {rule}")


def test_an_impossible_return_or_close_is_named_by_its_asset_and_session(client, stocked):
    body = plan(client, stocked)
    client.submit_drafts(stocked["id"], body["decision_id"], drafts_for(body))
    prices = {asset: [100.0, *(100.0 * (1 + r) for r in values)] for asset, values in RETURNS.items()}
    refused = [
        ({"returns": {**RETURNS, "GLD": [0.0, -1.5, 0.0]}}, "returns.GLD", "got -1.5 for session 2"),
        ({"prices": {**prices, "TLT": [100.0, 99.0, 0.0, 98.0]}}, "prices.TLT", "got 0.0 for the close of session 2"),
        ({"prices": {**prices, "SPY": [-1.0, 99.0, 99.0, 98.0]}}, "prices.SPY", "got -1.0 for the entry close"),
    ]
    for outcome, field, detail in refused:
        with pytest.raises(ServiceError) as error:
            client.settle(stocked["id"], body["decision_id"], **outcome)
        assert (error.value.status, error.value.field) == (422, field) and error.value.message.endswith(detail)
    assert client.get_decision(stocked["id"], body["decision_id"])["status"] == "decided"
