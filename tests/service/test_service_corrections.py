"""Service: corrections. A corrected agent equals one settled right from the start."""

import datetime as dt
import json

import numpy as np
import pytest
from support import ASSETS, MONTH_ZERO, MONTHLY_LESSONS, UNIVERSE, decide_month, plan_month, raw

from service.client import ServiceError


def _world_portfolio(client, agent_id, wrong_at=None, n=10):
    rng = np.random.default_rng(4)
    outcomes = []
    for t in range(n):
        plan = plan_month(client, agent_id, t)
        drafts = []
        for subset in plan["subsets"]:
            lean = 0.3 * sum("Bonds" in x for x in subset["texts"])
            drafts.append({"SPY": 0.3, "TLT": 0.2 + lean, "GLD": 0.2, "BIL": 0.3 - lean})
        client.submit_drafts(agent_id, plan["decision_id"], drafts)
        returns = {a: rng.normal([0.004, 0.01, 0.0, 0.0001][i], 0.01, 2).tolist() for i, a in enumerate(ASSETS)}
        given = {a: [v * 5 for v in r] for a, r in returns.items()} if t == wrong_at else returns
        client.settle(agent_id, plan["decision_id"], returns=given)
        outcomes.append((plan["decision_id"], returns))
    return outcomes


def _comparable(client, agent_id, t):
    values = client.values(agent_id)["values"]
    texts = {e["id"]: e["text"] for e in client.list_experiences(agent_id, limit=100)["items"]}
    trust = client.trust(agent_id)
    nxt = plan_month(
        client, agent_id, t
    )  # a plan freezes q, the gate state and the dial: the fallback's and the gate's state
    return (
        {texts[e]: (v["mean"], v["sd"], v["n"]) for e, v in values.items()},
        (trust["n_scores"], trust["state"]["statistic"], trust["state"]["status"]),
        nxt["q"],
        None
        if nxt["dial"] is None
        else (nxt["dial"]["trust_weight"], nxt["dial"]["log_evidence"], nxt["dial"]["noise_cost"]),
        sorted(nxt["predictions"].values()),
    )


def _assert_same(first, second):
    flat = lambda x: np.array([v for v in json.loads(json.dumps(x, default=list)) if v is not None], dtype=object)  # noqa: E731
    assert first[0].keys() == second[0].keys()
    for text in first[0]:
        np.testing.assert_allclose(
            np.array(first[0][text], dtype=float), np.array(second[0][text], dtype=float), atol=1e-12, rtol=0
        )
    assert first[1][0] == second[1][0] and first[1][2] == second[1][2]
    np.testing.assert_allclose(float(first[1][1] or 0.0), float(second[1][1] or 0.0), atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(first[2], second[2], atol=1e-12, rtol=0)
    if first[3] is not None:
        np.testing.assert_allclose(
            np.array(first[3], dtype=float), np.array(second[3], dtype=float), atol=1e-12, rtol=0
        )
    np.testing.assert_allclose(first[4], second[4], atol=1e-12, rtol=0)
    del flat


@pytest.mark.parametrize("action", ["gate", "dial"])
def test_correcting_the_second_of_ten_portfolio_decisions_equals_a_right_settlement_from_the_start(client, action):
    gate = (
        {"test": "anytime", "alpha": 0.05}
        if action == "dial"
        else {"test": "prequential", "alpha": 0.05, "min_scores": 3}
    )
    # retrieval by similarity: the plans made after the wrong outcome are those a right settlement would have
    # made (value-aware retrieval ranks by the values of its time, and a plan made stands: method 4.10)
    settings = {"gate": gate, "action": action, "retrieval": "similarity"}
    corrected = client.create_agent(f"corrected-{action}", "balanced", UNIVERSE, **settings)
    truthful = client.create_agent(f"truthful-{action}", "balanced", UNIVERSE, **settings)
    for agent in (corrected, truthful):
        client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS])
    outcomes = _world_portfolio(client, corrected["id"], wrong_at=1)
    _world_portfolio(client, truthful["id"])
    decision_id, right = outcomes[1]
    before = client.values(corrected["id"])
    answer = client.correct(
        corrected["id"], decision_id, returns=right, reason="the feed multiplied every return by five"
    )
    assert answer["corrections"][0]["reason"] == "the feed multiplied every return by five"
    assert answer["corrections"][0]["superseded"]["draft_utilities"] != answer["draft_utilities"]
    assert client.values(corrected["id"]) != before
    _assert_same(_comparable(client, corrected["id"], 10), _comparable(client, truthful["id"], 10))
    check = client.verify(corrected["id"])
    assert check["ok"]
    page = client.trust_log(corrected["id"], limit=1000)
    log = page["items"]
    correction = next(e for e in log if e["kind"] == "correction")
    superseded = log[correction["payload"]["supersedes"]]
    assert superseded["kind"] == "score" and superseded["payload"]["date"] == decision_id
    assert page["superseded"] == {str(superseded["index"]): correction["index"]}  # marked, outside the hashed entries
    # the same correction again is a no-op; the old outcome is now a conflict; the corrected one a no-op settle
    assert (
        client.correct(corrected["id"], decision_id, returns=right, reason="again")["corrections"]
        == answer["corrections"]
    )
    assert client.settle(corrected["id"], decision_id, returns=right)["draft_utilities"] == answer["draft_utilities"]
    assert client.verify(corrected["id"])["n_entries"] == check["n_entries"]


def test_correcting_a_recent_decision_of_a_long_lived_agent_replays_from_a_checkpoint_and_equals_a_right_settlement(
    client, database_url
):
    from sqlalchemy import create_engine, text

    from service.db import normalise_url

    # the paper's rule: the prequential gate on centred values over the even half, closed on the mixture
    paper = {"action": "gate", "credit": "centred", "design": "half", "fallback": "ftrl"}
    gate = {"test": "prequential", "alpha": 0.05, "min_scores": 3}
    corrected = client.create_agent("corrected-long", "balanced", UNIVERSE, gate=gate, **paper)
    truthful = client.create_agent("truthful-long", "balanced", UNIVERSE, gate=gate, **paper)
    for agent in (corrected, truthful):
        client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS])
    n, wrong_at = 40, 37
    outcomes = _world_portfolio(client, corrected["id"], wrong_at=wrong_at, n=n)
    _world_portfolio(client, truthful["id"], n=n)
    database = create_engine(normalise_url(database_url))

    def checkpoints():
        with database.connect() as connection:
            return (
                connection.execute(
                    text("SELECT position FROM checkpoints WHERE agent_id = :agent ORDER BY position"),
                    {"agent": corrected["id"]},
                )
                .scalars()
                .all()
            )

    before = checkpoints()
    assert 1 <= len(before) <= 8 and before[-1] <= 2 * n  # written as the agent settled, bounded
    decision_id, right = outcomes[wrong_at]
    client.correct(corrected["id"], decision_id, returns=right, reason="the feed multiplied every return by five")
    _assert_same(_comparable(client, corrected["id"], n), _comparable(client, truthful["id"], n))
    page = client.trust_log(corrected["id"], limit=1000)
    correction = next(e for e in page["items"] if e["kind"] == "correction")
    supersedes = correction["payload"]["supersedes"]
    # the checkpoints before the corrected score stay (the replay started at the last of them); none is stale
    assert [p for p in checkpoints() if p <= supersedes] == [p for p in before if p <= supersedes] != []
    assert client.verify(corrected["id"])["ok"]
    database.dispose()


@pytest.mark.parametrize("action", ["gate", "dial"])
def test_correcting_a_scored_decision_equals_a_right_settlement_from_the_start(client, action):
    gate = {"test": "anytime", "alpha": 0.05}
    agents = [
        client.create_agent(f"{name}-{action}", kind="scored", outcomes=["yes", "no"], gate=gate, action=action)
        for name in ("corrected", "truthful")
    ]
    for agent in agents:
        client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS])
    ids = {}
    for index, agent in enumerate(agents):
        for t in range(10):
            when = MONTH_ZERO + dt.timedelta(days=t)
            plan = client.create_decision(agent["id"], when, when + dt.timedelta(hours=1), f"question {t}")
            drafts = [
                {
                    "yes": 0.3 + 0.1 * sum("Bonds" in x for x in s["texts"]),
                    "no": 0.7 - 0.1 * sum("Bonds" in x for x in s["texts"]),
                }
                for s in plan["subsets"]
            ]
            client.submit_drafts(agent["id"], plan["decision_id"], drafts)
            truth = "yes" if t % 3 else "no"
            client.settle(
                agent["id"],
                plan["decision_id"],
                outcome=("no" if truth == "yes" else "yes") if (index == 0 and t == 1) else truth,
                rule="brier",
            )
            ids.setdefault(index, []).append(plan["decision_id"])
    client.correct(agents[0]["id"], ids[0][1], outcome="yes", rule="brier", reason="mis-graded")
    listed = {d["decision_id"]: d for d in client.list_decisions(agents[0]["id"])["items"]}
    assert [d for d, item in listed.items() if item["corrections"]] == [ids[0][1]]
    settlement = client.get_decision(agents[0]["id"], ids[0][1])["settlement"]
    assert listed[ids[0][1]]["chosen_utility"] == settlement["chosen_utility"] and len(settlement["corrections"]) == 1
    values = [client.values(a["id"])["values"] for a in agents]
    texts = [{e["id"]: e["text"] for e in client.list_experiences(a["id"])["items"]} for a in agents]
    for (e0, v0), (e1, v1) in zip(
        sorted(values[0].items(), key=lambda i: texts[0][i[0]]),
        sorted(values[1].items(), key=lambda i: texts[1][i[0]]),
        strict=True,
    ):
        assert texts[0][e0] == texts[1][e1]
        np.testing.assert_allclose([v0["mean"], v0["sd"] or 0.0], [v1["mean"], v1["sd"] or 0.0], atol=1e-12, rtol=0)
    trust = [client.trust(a["id"]) for a in agents]
    assert trust[0]["n_scores"] == trust[1]["n_scores"]
    np.testing.assert_allclose(trust[0]["state"]["statistic"] or 0.0, trust[1]["state"]["statistic"] or 0.0, atol=1e-12)
    assert client.verify(agents[0]["id"])["ok"]


def test_a_correction_needs_a_settled_decision_and_a_reason(client, agent, http):
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    plan = decide_month(client, agent["id"])
    returns = {a: [0.001, 0.002] for a in ASSETS}
    with pytest.raises(ServiceError) as error:
        client.correct(agent["id"], plan["decision_id"], returns=returns, reason="too early")
    assert (error.value.status, error.value.field) == (409, "decision_id")
    client.settle(agent["id"], plan["decision_id"], returns=returns)
    path = f"/v1/agents/{agent['id']}/decisions/{plan['decision_id']}/corrections"
    response = raw(http, client, "POST", path, json.dumps({"returns": returns}))
    assert response.status_code == 422 and response.json()["error"]["field"] == "reason"
    response = raw(http, client, "POST", path, json.dumps({"returns": returns, "reason": " \u200b "}))
    assert response.status_code == 422 and response.json()["error"]["field"] == "reason"


def test_after_corrections_the_trust_answer_the_log_and_every_decision_agree_on_each_score(client):
    """A correction derives the later plans' predictions again, so later scores change: its log entry lists
    them (``rescored``), the trust answer shows each decision's score in force once (its count and mean those
    of the gate), each decision shows it, and a correction a later one of the same decision replaced is
    marked superseded. Before, the answer listed scores the gate no longer counted and left out those it did."""
    agent = client.create_agent("audited", "balanced", UNIVERSE, retrieval="similarity")
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS])
    rng = np.random.default_rng(9)
    outcomes = []
    for t in range(8):  # each lesson leans the drafts its own way, with noise: scores of every sign and size
        plan = plan_month(client, agent["id"], t)
        drafts = []
        for subset in plan["subsets"]:
            tilt = rng.normal(0.0, 0.05, 4) + sum(
                np.eye(4)[i % 4] * 0.1 * (-1) ** i for i, text in enumerate(MONTHLY_LESSONS) if text in subset["texts"]
            )
            weights = np.clip(np.full(4, 0.25) + tilt, 0.01, None)
            drafts.append(dict(zip(ASSETS, (weights / weights.sum()).tolist(), strict=True)))
        client.submit_drafts(agent["id"], plan["decision_id"], drafts)
        returns = {a: rng.normal([0.004, 0.01, 0.0, 0.0001][i], 0.01, 2).tolist() for i, a in enumerate(ASSETS)}
        given = {a: [v * 5 for v in r] for a, r in returns.items()} if t == 1 else returns
        client.settle(agent["id"], plan["decision_id"], returns=given)
        outcomes.append((plan["decision_id"], returns))
    (first_id, right), (third_id, third) = outcomes[1], outcomes[3]
    twice = {a: [v * 2 for v in r] for a, r in right.items()}
    client.correct(agent["id"], third_id, returns={a: [v * 3 for v in r] for a, r in third.items()}, reason="new feed")
    client.correct(agent["id"], first_id, returns=twice, reason="a first fix, still wrong")
    client.correct(agent["id"], first_id, returns=right, reason="the right returns")  # rescores the third's
    client.correct(agent["id"], third_id, returns={a: [v * 2 for v in r] for a, r in third.items()}, reason="again")
    page = client.trust_log(agent["id"], limit=1000)
    log = page["items"]
    in_force: dict[str, float | None] = {}
    for entry in log:  # fold the log: scores, then each correction's own score and the scores it changed
        if entry["kind"] in ("score", "correction"):
            in_force[entry["payload"]["date"]] = entry["payload"]["score"]
        if entry["kind"] == "correction":
            in_force.update(dict(entry["payload"]["rescored"]))
    corrections = [e for e in log if e["kind"] == "correction"]
    assert sum(len(c["payload"]["rescored"]) for c in corrections) > 0  # the corrections moved later scores
    trust = client.trust(agent["id"], limit=100)
    shown = {s["decision_id"]: s["score"] for s in trust["scores"]}
    assert len(trust["scores"]) == len(shown) == trust["n_scores"] == trust["state"]["n_scored"]
    assert shown == {d: s for d, s in in_force.items() if s is not None}
    assert np.mean(list(shown.values())) == pytest.approx(trust["state"]["mean_score"], abs=1e-12)
    assert len({round(v, 6) for v in shown.values()}) > 3  # scores of many values, not only +-1
    # in the order the gate took them, each with the gate's statistic after it as the gate now holds it (the
    # replay changed every statistic after a changed score): the last is the gate's own, none is missing
    scored = [e["payload"]["date"] for e in log if e["kind"] == "score" and in_force[e["payload"]["date"]] is not None]
    assert [s["decision_id"] for s in trust["scores"]] == scored
    assert all(s["statistic"] is not None for s in trust["scores"])
    assert trust["scores"][-1]["statistic"] == trust["state"]["statistic"]
    for decision_id, score in in_force.items():
        assert client.get_decision(agent["id"], decision_id)["settlement"]["score"] == score
    score_entry = next(e for e in log if e["kind"] == "score" and e["payload"]["date"] == first_id)
    chain = [c["index"] for c in corrections if c["payload"]["date"] == first_id]
    assert page["superseded"][str(score_entry["index"])] == chain[0]
    assert page["superseded"][str(chain[0])] == chain[1] and str(chain[1]) not in page["superseded"]
    # an entry in force whose score a later correction changed names that correction (the latest)
    expected: dict[str, int] = {}
    for correction in corrections:
        for decision_id, _ in correction["payload"]["rescored"]:
            holder = max(
                e["index"]
                for e in log
                if e["kind"] in ("score", "correction")
                and e["payload"]["date"] == decision_id
                and e["index"] < correction["index"]
            )
            expected[str(holder)] = correction["index"]
    expected = {i: c for i, c in expected.items() if i not in page["superseded"]}
    assert expected and page["rescored"] == expected
    assert client.verify(agent["id"])["ok"]
