"""Scored decisions through the service: forecasts and answers, settled by a rule or by utilities,
equal to the library engine fed the same retrieved experiences, drafts and outcomes."""

import datetime as dt

import numpy as np
import pytest
from support import UNIVERSE

from memtrial.engine.config import SCORED_DESIGN
from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.outcomes.display import name_experiences
from memtrial.outcomes.scoring import score
from service.client import ServiceError
from service.embeddings import get_embedder
from service.views import plan_labels

OUTCOMES = ["up", "flat", "down"]
LESSONS = [
    "Rate cuts were followed by rallies.",
    "Inflation surprises hurt the market.",
    "Quiet months stayed flat.",
    "Earnings beats lifted prices.",
    "Tariff news caused selloffs.",
    "Holidays were calm.",
]
START = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def forecast_world(n_dates, seed=0):
    """Each date: the realised outcome and, per designed subset, a forecast that leans on lesson 0's hint."""
    rng = np.random.default_rng(seed)
    for t in range(n_dates):
        truth = int(rng.integers(3))
        yield t, truth, rng


def drafts_for(subsets_texts, truth, rng):
    forecasts = []
    for texts in subsets_texts:
        p = rng.dirichlet(np.full(3, 4.0))
        if LESSONS[0] in texts:  # the useful lesson points at the truth
            p = 0.6 * p + 0.4 * np.eye(3)[truth]
        forecasts.append({name: float(v) for name, v in zip(OUTCOMES, p / p.sum(), strict=True)})
    return forecasts


def test_scored_forecasts_through_the_service_equal_the_library_engine(client):
    body = {
        "name": "forecaster",
        "kind": "scored",
        "outcomes": OUTCOMES,
        "action": "dial",
        "credit": "raw",
        "gate": {"test": "anytime"},
    }
    agent = client._request("POST", "/v1/agents", body)
    assert agent["kind"] == "scored" and agent["investor"] is None and agent["outcomes"] == OUTCOMES
    added = client.add_experiences(agent["id"], [{"text": text} for text in LESSONS])
    ids = {item["text"]: item["id"] for item in added["items"]}
    engine = MemTrial(EngineConfig(gamma=0.0, design=SCORED_DESIGN))  # a scored agent's defaults, as the body's
    for text, embedding in zip(
        LESSONS, get_embedder().encode(LESSONS), strict=True
    ):  # the service's embeddings feed its content learner
        engine.add_experience(ids[text], embedding)
    for t, truth, rng in forecast_world(24):
        when, maturity = START + dt.timedelta(days=t), START + dt.timedelta(days=t, hours=1)
        plan = client.create_decision(agent["id"], when, maturity, f"question {t}: {LESSONS[t % 6]}")
        local = engine.plan(
            plan["decision_id"], when, maturity, retrieved=[r["id"] for r in plan["retrieved"]], kind="scored"
        )
        assert [list(map(str, s)) for s in local.subsets] == [s["experience_ids"] for s in plan["subsets"]]
        forecasts = drafts_for([s["texts"] for s in plan["subsets"]], truth, rng)
        decision = client.submit_drafts(agent["id"], plan["decision_id"], forecasts)
        mine = engine.decide_scored(plan["decision_id"], vectors=[[f[o] for o in OUTCOMES] for f in forecasts])
        assert decision["action"] == mine.action.value and decision["explanation"] == name_experiences(
            mine.explanation, plan_labels(plan.model_dump())
        )
        assert [decision["chosen"][o] for o in OUTCOMES] == mine.weights.tolist()
        settled = client.settle(
            agent["id"], plan["decision_id"], outcome=OUTCOMES[truth], rule="brier", settled_at=maturity
        )
        theirs = engine.settle_scored(plan["decision_id"], outcome=truth, rule="brier", at=maturity)
        assert settled["draft_utilities"] == theirs.draft_utilities.tolist()
        assert settled["chosen_utility"] == theirs.chosen_utility and settled["score"] == theirs.score
        assert settled["contributions"] == {str(e): v for e, v in theirs.contributions.items()}
    values = client.values(agent["id"])["values"]
    assert {e: v["mean"] for e, v in values.items()} == pytest.approx(
        {str(e): v for e, v in engine.values().items()}, abs=0
    )
    assert decision["dial"]["trust_weight"] == mine.dial.trust_weight > 0.0
    assert values[ids[LESSONS[0]]]["mean"] == max(v["mean"] for v in values.values())  # the useful lesson is found
    assert client.verify(agent["id"])["ok"]


def test_scored_answers_play_the_reference_until_trusted_and_are_scored_by_exact_match(client):
    agent = client._request("POST", "/v1/agents", {"name": "answers", "kind": "scored", "gate": {"test": "anytime"}})
    client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "what is 6 x 7?")
    answers = ["42", "41", "42", {"answer": 42}, "42", "40", "42", "42"][: len(plan["subsets"])]
    decision = client.submit_drafts(agent["id"], plan["decision_id"], answers, reference=2)
    assert decision["action"] == "reference" and decision["played"] == 2 and decision["chosen"] == "42"
    assert "the reference draft" in decision["explanation"]
    settled = client.settle(
        agent["id"], plan["decision_id"], outcome="42", rule="exact", settled_at=START + dt.timedelta(hours=1)
    )
    assert settled["draft_utilities"] == score("exact", "42", answers=answers).tolist()
    assert settled["chosen_utility"] == 1.0 and settled["draft_mean_utility"] is None
    again = client.settle(
        agent["id"], plan["decision_id"], outcome="42", rule="exact", settled_at=START + dt.timedelta(hours=1)
    )
    assert again == settled  # the same outcome again is a no-op
    with pytest.raises(ServiceError) as conflict:
        client.settle(
            agent["id"], plan["decision_id"], outcome="41", rule="exact", settled_at=START + dt.timedelta(hours=1)
        )
    assert conflict.value.status == 409


def test_answers_posted_again_must_be_the_answers_decided_on(client):
    # answers carry no numbers for the engine to compare: the service compares them with those it stored
    agent = client._request("POST", "/v1/agents", {"name": "answers again", "kind": "scored"})
    client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "what is 6 x 7?")
    answers = ["42", "41", "42", {"answer": 42}, "42", "40", "42", "42"][: len(plan["subsets"])]
    decision = client.submit_drafts(agent["id"], plan["decision_id"], answers, reference=2)
    assert client.submit_drafts(agent["id"], plan["decision_id"], answers, reference=2) == decision
    for other in (["Z"] * len(answers), answers[::-1]):
        with pytest.raises(ServiceError) as conflict:
            client.submit_drafts(agent["id"], plan["decision_id"], other, reference=2)
        assert (conflict.value.status, conflict.value.field) == (409, "drafts")
        assert "already decided with other drafts" in conflict.value.message
    stored = client._request("GET", f"/v1/agents/{agent['id']}/decisions/{plan['decision_id']}")["decision"]
    assert stored["drafts"] == answers and stored["chosen"] == decision["chosen"]


def test_numbers_blend_and_client_utilities_settle_a_scored_decision(client):
    paper = {"action": "gate", "credit": "centred", "fallback": "ftrl", "gate": {"test": "prequential"}}
    agent = client._request("POST", "/v1/agents", {"name": "numbers", "kind": "scored", **paper})  # the mixture
    client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "how many?")
    numbers = [10.0 + i for i in range(len(plan["subsets"]))]
    decision = client.submit_drafts(agent["id"], plan["decision_id"], numbers)
    assert decision["action"] == "mixture" and decision["played"] is None
    assert decision["chosen"] == pytest.approx(decision["q"] * numbers[0] + (1 - decision["q"]) * np.mean(numbers))
    settled = client.settle(
        agent["id"], plan["decision_id"], outcome=12.0, rule="abs_error", settled_at=START + dt.timedelta(hours=1)
    )
    assert settled["chosen_utility"] == pytest.approx(-abs(decision["chosen"] - 12.0))
    plan = client.create_decision(
        agent["id"], START + dt.timedelta(days=1), START + dt.timedelta(days=1, hours=1), "and now?"
    )
    client.submit_drafts(agent["id"], plan["decision_id"], numbers)
    utilities = [float(-i) for i in range(len(plan["subsets"]))]
    settled = client.settle(
        agent["id"], plan["decision_id"], utilities=utilities, settled_at=START + dt.timedelta(days=1, hours=1)
    )
    assert settled["draft_utilities"] == utilities and settled["chosen_utility"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "kind": "scored", "investor": "balanced"}, "investor"),
        ({"name": "x", "kind": "portfolio", "universe": [{"asset": "SPY", "asset_class": "equities"}]}, "investor"),
        ({"name": "x", "kind": "scored", "outcomes": ["a", "a"]}, "outcomes"),
        ({"name": "x", "kind": "scored", "drafter": {"provider": "p", "model": "m"}}, "drafter.provider"),
        ({"name": "x", "universe": UNIVERSE, "investor": "balanced", "answer": {"type": "number"}}, "answer"),
    ],
)
def test_each_kind_of_agent_gets_what_it_needs(client, body, field):
    with pytest.raises(ServiceError) as refused:
        client._request("POST", "/v1/agents", body)
    assert refused.value.status == 422 and refused.value.field == field


@pytest.mark.parametrize("rule", ["brier", "log"])
def test_a_probability_rule_on_number_drafts_is_422_naming_the_rule_and_writes_nothing(client, rule):
    agent = client._request("POST", "/v1/agents", {"name": "numbers", "kind": "scored"})
    client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "how likely?")
    client.submit_drafts(agent["id"], plan["decision_id"], [0.5 + 0.01 * i for i in range(len(plan["subsets"]))])
    before = client.trust_log(agent["id"], limit=1000).model_dump()
    with pytest.raises(ServiceError) as refused:
        client.settle(agent["id"], plan["decision_id"], outcome=1, rule=rule, settled_at=START + dt.timedelta(hours=1))
    assert (refused.value.status, refused.value.field) == (422, "rule")
    assert "scores probability forecasts; this decision's drafts are not probability vectors" in refused.value.message
    assert client.trust_log(agent["id"], limit=1000).model_dump() == before
    assert client.get_decision(agent["id"], plan["decision_id"]).status == "decided"


def test_scored_drafts_and_settlements_are_checked_against_the_agent(client, agent):
    scored = client._request("POST", "/v1/agents", {"name": "f", "kind": "scored", "outcomes": OUTCOMES})
    client.add_experiences(scored["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(scored["id"], START, START + dt.timedelta(hours=1), "q")
    with pytest.raises(ServiceError) as refused:
        client.submit_drafts(scored["id"], plan["decision_id"], [{"up": 1.0}] * len(plan["subsets"]))
    assert refused.value.field == "drafts.0" and refused.value.message == (
        "drafts.0: must give a probability for each outcome ['up', 'flat', 'down'] and nothing else; "
        "missing ['flat', 'down']"
    )
    for count in (len(plan["subsets"]) - 1, len(plan["subsets"]) + 1):  # the count first, in the request's words
        with pytest.raises(ServiceError) as refused:
            client.submit_drafts(scored["id"], plan["decision_id"], [{"up": 1.0, "flat": 0.0, "down": 0.0}] * count)
        assert (refused.value.field, refused.value.message) == (
            "drafts",
            f"drafts: give one per designed subset ({len(plan['subsets'])}), got {count}",
        )
    for bad, field, got in (
        ({"up": "0.5", "flat": 0.3, "down": 0.2}, "drafts.1.up", "'0.5'"),
        ({"up": 1.2, "flat": 0.0, "down": -0.2}, "drafts.1.up", "1.2"),
        ({"up": 0.5, "flat": -0.1, "down": 0.6}, "drafts.1.flat", "-0.1"),
    ):
        with pytest.raises(ServiceError) as refused:  # each probability named by its draft and its outcome
            drafts = [{"up": 0.5, "flat": 0.3, "down": 0.2}, bad] + [{"up": 1.0, "flat": 0.0, "down": 0.0}] * 6
            client.submit_drafts(scored["id"], plan["decision_id"], drafts[: len(plan["subsets"])])
        assert (refused.value.field, refused.value.message) == (
            field,
            f"{field}: must be a probability from 0 to 1, got {got}",
        )
    with pytest.raises(ServiceError) as refused:
        client.submit_drafts(
            scored["id"], plan["decision_id"], [{"up": 0.5, "flat": 0.5, "down": 0.5}] * len(plan["subsets"])
        )
    assert refused.value.field == "drafts" and "must sum to 1" in refused.value.message
    forecast = {"up": 0.5, "flat": 0.3, "down": 0.2}
    client.submit_drafts(scored["id"], plan["decision_id"], [forecast] * len(plan["subsets"]))
    with pytest.raises(ServiceError) as refused:
        client.settle(
            scored["id"], plan["decision_id"], outcome="sideways", rule="log", settled_at=START + dt.timedelta(hours=1)
        )
    assert refused.value.field == "outcome"
    with pytest.raises(ServiceError) as refused:
        client.settle(
            scored["id"], plan["decision_id"], returns={"SPY": [0.01]}, settled_at=START + dt.timedelta(hours=1)
        )
    assert refused.value.field == "returns"
    with pytest.raises(ServiceError) as refused:  # the outcome is sent as given, and its missing rule is named
        client.settle(scored["id"], plan["decision_id"], outcome="up", settled_at=START + dt.timedelta(hours=1))
    assert (refused.value.status, refused.value.field) == (422, "rule")
    assert "an outcome needs the rule that scores it" in refused.value.message
    n = len(plan["subsets"])
    with pytest.raises(ServiceError) as refused:  # utilities and an outcome: the outcome is the one too many
        client.settle(scored["id"], plan["decision_id"], utilities=[0.1] * n, outcome="up", settled_at=START)
    assert (refused.value.status, refused.value.field) == (422, "outcome")
    assert "give it with its rule, or utilities alone, not both" in refused.value.message
    for utilities, field in (([True] * n, "utilities.0"), ([0.1, "0.5"] + [0.1] * (n - 2), "utilities.1")):
        with pytest.raises(ServiceError) as refused:  # sent as given, not made numbers by the client
            client.settle(
                scored["id"], plan["decision_id"], utilities=utilities, settled_at=START + dt.timedelta(hours=1)
            )
        assert (refused.value.status, refused.value.field) == (422, field)
    with pytest.raises(ValueError, match=r"^utilities\.2 must be a finite number \(JSON has no nan\)"):
        client.settle(
            scored["id"], plan["decision_id"], utilities=[0.1, 0.2, np.nan] + [0.1] * (n - 3), settled_at=START
        )
    assert client.get_decision(scored["id"], plan["decision_id"]).status == "decided"  # nothing was settled
    settled = client.settle(
        scored["id"], plan["decision_id"], outcome="up", rule="log", settled_at=START + dt.timedelta(hours=1)
    )
    assert settled["chosen_utility"] == pytest.approx(np.log(0.5))
    portfolio_plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "q")
    with pytest.raises(ServiceError) as refused:
        client.submit_drafts(agent["id"], portfolio_plan["decision_id"], ["an answer"] * len(portfolio_plan["subsets"]))
    assert refused.value.status == 422 and refused.value.field.startswith("drafts")


def test_drafts_and_outcomes_are_held_to_the_answer_the_agent_declared(client):
    """A declared answer is what server drafting asks the model for and what a client's drafts must be too: a
    number out of its range, a choice not in its list are refused naming the draft, and an exact outcome that is
    none of the choices (it would score every draft 0) naming the outcome; nothing is written on a refusal."""
    later = START + dt.timedelta(hours=1)
    for answer, bad, message, good in (
        (
            {"type": "number", "minimum": 0, "maximum": 10},
            50,
            "the answer 50 is outside [0.0, 10.0]",
            [3, 4, 5, 6, 7, 8, 9, 10],
        ),
        ({"type": "choice", "choices": ["A", "B"]}, "C", "the answer 'C' is not one of ['A', 'B']", ["A", "B"] * 4),
        ({"type": "text"}, "", "the answer must be a non-empty string, got ''", ["x"] * 8),
    ):
        agent = client._request("POST", "/v1/agents", {"name": answer["type"], "kind": "scored", "answer": answer})
        client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
        plan = client.create_decision(agent["id"], START, later, "q")
        n = len(plan["subsets"])
        with pytest.raises(ServiceError) as refused:
            client.submit_drafts(agent["id"], plan["decision_id"], [*good[: n - 1], bad])
        assert (refused.value.status, refused.value.field) == (422, f"drafts.{n - 1}")
        assert refused.value.message == f"drafts.{n - 1}: {message} (the agent's declared answer)"
        assert client.get_decision(agent["id"], plan["decision_id"]).status == "planned"
        client.submit_drafts(agent["id"], plan["decision_id"], good[:n])
        if answer["type"] == "choice":
            before = client.trust_log(agent["id"], limit=1000).model_dump()
            with pytest.raises(ServiceError) as refused:
                client.settle(agent["id"], plan["decision_id"], outcome="Z", rule="exact", settled_at=later)
            assert (refused.value.status, refused.value.field) == (422, "outcome")
            assert refused.value.message == "outcome: must be one of the agent's choices ['A', 'B'], got 'Z'"
            assert client.trust_log(agent["id"], limit=1000).model_dump() == before
            settled = client.settle(agent["id"], plan["decision_id"], outcome="B", rule="exact", settled_at=later)
            assert settled["draft_utilities"] == score("exact", "B", answers=good[:n]).tolist()
    forecasts = client._request("POST", "/v1/agents", {"name": "f", "kind": "scored", "outcomes": OUTCOMES})
    client.add_experiences(forecasts["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(forecasts["id"], START, later, "q")
    client.submit_drafts(forecasts["id"], plan["decision_id"], [{"up": 0.5, "flat": 0.3, "down": 0.2}] * 8)
    with pytest.raises(ServiceError) as refused:  # the rule is what is wrong, not the drafts
        client.settle(forecasts["id"], plan["decision_id"], outcome=1, rule="abs_error", settled_at=later)
    assert (refused.value.status, refused.value.field) == (422, "rule")
    assert refused.value.message.startswith("rule: 'abs_error' scores numbers; this agent's drafts are probability")


def test_a_number_in_the_millions_settles_by_abs_error_when_every_miss_is_plausible(client):
    """The outcome's own size was bounded (MEMTRIAL_MAX_ABS_UTILITY bounds utilities): a count of 25 million
    could not be settled by rule although each draft missed it by at most 100. Each miss is what is bounded."""
    agent = client._request("POST", "/v1/agents", {"name": "counts", "kind": "scored"})
    client.add_experiences(agent["id"], [{"text": text} for text in LESSONS[:4]])
    plan = client.create_decision(agent["id"], START, START + dt.timedelta(hours=1), "how many visitors?")
    drafts = [25_000_010.0 if i % 2 else 25_000_100.0 for i in range(len(plan["subsets"]))]
    client.submit_drafts(agent["id"], plan["decision_id"], drafts)
    at = START + dt.timedelta(hours=1)
    settled = client.settle(agent["id"], plan["decision_id"], outcome=25_000_000.0, rule="abs_error", settled_at=at)
    assert sorted(set(settled["draft_utilities"])) == [-100.0, -10.0]
    plan = client.create_decision(agent["id"], at, at + dt.timedelta(hours=1), "and far off?")
    client.submit_drafts(agent["id"], plan["decision_id"], [0.0] * len(plan["subsets"]))
    with pytest.raises(ServiceError) as error:  # a miss beyond the plausible utility is still refused
        client.settle(
            agent["id"], plan["decision_id"], outcome=5e6, rule="abs_error", settled_at=at + dt.timedelta(hours=1)
        )
    assert error.value.field == "outcome" and "a draft misses it by 5000000.0" in error.value.message
