"""Service: values that curate memory (method 4.12-4.14). The retrieval and quarantine settings, rank of a
client's candidates, plans on candidates, a harmful experience quarantined through settlements, listed,
kept out of rank and retrieval and released by hand, every refusal naming its field and writing nothing."""

import datetime as dt
import json
import math

import httpx
import numpy as np
import pytest
from support import UNIVERSE, LoseFirstAnswer, raw

from memtrial.curation import QuarantineConfig
from service.client import ServiceError
from service.schemas import QUARANTINE_DEFAULT, RETRIEVAL_DEFAULT, core_default

START = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC)
# what each lesson adds to a draft's utility: one is harmful, the others help
VALUES = {"harmful": -1.0, "a": 0.3, "b": 0.3, "c": 0.3, "d": 0.3, "e": 0.3}
TEXTS = {
    "harmful": "Buy every dip on margin, whatever the news.",
    "a": "Rate cuts were followed by rallies.",
    "b": "Inflation surprises hurt bonds.",
    "c": "Quiet months stayed flat.",
    "d": "Earnings beats lifted prices.",
    "e": "Credit spreads lead equities.",
}


def scored_agent(client, name="curator", **settings):
    agent = client.create_agent(name, kind="scored", **settings)
    added = client.add_experiences(agent["id"], [{"text": TEXTS[n], "external_id": n} for n in VALUES])["items"]
    return agent, {item["external_id"]: item["id"] for item in added}


def send(http, client, method, path, body):
    return raw(http, client, method, path, json.dumps(body))


def written(client, agent_id):
    """What an agent holds, as its reader sees it: the log, the values, the experiences, the decisions."""
    return (
        client.trust_log(agent_id, limit=1000).model_dump(),
        client.values(agent_id).model_dump(),
        client.list_experiences(agent_id, limit=500).model_dump(),
        client.list_decisions(agent_id, limit=200).model_dump(),
    )


def settle_by_values(client, agent_id, plan, names, rng, t):
    """Decide and settle a scored plan: each draft's utility is the sum of its subset's values plus noise."""
    by_id = {i: n for n, i in names.items()}
    utilities = [
        sum(VALUES[by_id[e]] for e in subset["experience_ids"]) + rng.normal(0.0, 0.05) for subset in plan["subsets"]
    ]
    client.submit_drafts(agent_id, plan["decision_id"], [f"draft {i}" for i in range(len(utilities))])
    client.settle(agent_id, plan["decision_id"], utilities=utilities, settled_at=START + dt.timedelta(days=t))


def drive_until_quarantined(client, agent_id, names, limit):
    """Plan on candidates (the harmful lesson first, the others rotating), settle, until a quarantine;
    the number of decisions it took."""
    rng = np.random.default_rng(4)
    others = [n for n in VALUES if n != "harmful"]
    for t in range(limit):
        order = ["harmful", *others[t % 5 :], *others[: t % 5]]
        when = START + dt.timedelta(days=t)
        plan = client.create_decision(agent_id, when, when, f"day {t}", candidate_ids=[names[n] for n in order])
        settle_by_values(client, agent_id, plan, names, rng, t)
        if client.list_experiences(agent_id, status="quarantined")["items"]:
            return t + 1
    return limit


def test_new_agents_take_the_cores_curation_defaults_and_show_them(client):
    assert core_default("retrieval") == RETRIEVAL_DEFAULT and core_default("quarantine") == QUARANTINE_DEFAULT
    agent = client.create_agent("plain", kind="scored")
    assert agent["retrieval"] == RETRIEVAL_DEFAULT.value
    assert agent["quarantine"].model_dump() == QUARANTINE_DEFAULT.to_dict()
    chosen = client.create_agent(
        "curated", kind="scored", retrieval="value_aware", quarantine={"enabled": True, "level": 0.1}
    )
    assert chosen["retrieval"] == "value_aware"
    assert chosen["quarantine"].model_dump() == QuarantineConfig(enabled=True, level=0.1).to_dict()


def test_retrieval_and_quarantine_change_mid_life_logged_and_kept_across_restarts(client, app):
    agent = client.create_agent("fund", "balanced", UNIVERSE, retrieval="similarity", quarantine={"enabled": False})
    updated = client.update_agent(agent["id"], retrieval="value_aware", quarantine={"enabled": True})
    assert updated["retrieval"] == "value_aware" and updated["gate_hash"] == agent["gate_hash"]
    assert updated["quarantine"].model_dump() == QuarantineConfig(enabled=True).to_dict()
    updated = client.update_agent(agent["id"], quarantine={"level": 0.2})  # the other fields stay
    assert updated["quarantine"].model_dump() == QuarantineConfig(enabled=True, level=0.2).to_dict()
    client.update_agent(agent["id"], retrieval="value_aware")  # unchanged: nothing to log
    log = client.trust_log(agent["id"])["items"]
    assert [entry["payload"]["changes"] for entry in log if entry["kind"] == "settings"] == [
        {
            "retrieval": {"old": "similarity", "new": "value_aware"},
            "quarantine": {"old": QuarantineConfig().to_dict(), "new": QuarantineConfig(enabled=True).to_dict()},
        },
        {
            "quarantine": {
                "old": QuarantineConfig(enabled=True).to_dict(),
                "new": QuarantineConfig(enabled=True, level=0.2).to_dict(),
            }
        },
    ]
    app.state.services.engines.forget(agent["id"])  # the engine comes back from the stored state
    assert client.get_agent(agent["id"])["quarantine"]["level"] == 0.2
    from service.db import transaction
    from service.models import Agent

    with transaction(app.state.services.sessions) as session:
        engine = app.state.services.engines.checkout(session, session.get(Agent, agent["id"]))
        assert engine.config.quarantine == QuarantineConfig(enabled=True, level=0.2)
        assert engine.config.retrieval == "value_aware" and engine.curator is not None
    assert client.verify(agent["id"])["ok"]


def test_quarantine_control_is_chosen_at_creation_changed_by_patch_and_an_older_agent_reads_as_fwer(client, app):
    from service.api_types import QuarantineStatePublic
    from service.db import transaction
    from service.models import Agent

    agent = client.create_agent("fwer", kind="scored", quarantine={"enabled": True, "control": "fwer"})
    assert agent["quarantine"].control == "fwer"
    updated = client.update_agent(agent["id"], quarantine={"control": "fdr"})
    assert updated["quarantine"].model_dump() == QuarantineConfig(enabled=True, control="fdr").to_dict()
    app.state.services.engines.forget(agent["id"])
    with transaction(app.state.services.sessions) as session:
        engine = app.state.services.engines.checkout(session, session.get(Agent, agent["id"]))
        assert engine.config.quarantine.control == "fdr"
    stored_before = {"enabled": True, "level": 0.05, "change_threshold": 1000.0, "spread": 0.0, "clip": None}
    assert QuarantineStatePublic(**stored_before).control == "fwer"  # what an agent made before it ran


def test_curation_settings_chosen_at_creation_come_back_from_the_stored_state(client, app):
    from service.db import transaction
    from service.models import Agent

    chosen = {
        "off": ("similarity", QuarantineConfig(enabled=False)),
        "on": ("value_aware", QuarantineConfig(enabled=True, level=0.1, change_threshold=50.0)),
    }
    agents = {
        name: client.create_agent(name, kind="scored", retrieval=retrieval, quarantine=quarantine.to_dict())
        for name, (retrieval, quarantine) in chosen.items()
    }
    for name, agent in agents.items():
        app.state.services.engines.forget(agent["id"])
        with transaction(app.state.services.sessions) as session:
            engine = app.state.services.engines.checkout(session, session.get(Agent, agent["id"]))
            assert (engine.config.retrieval, engine.config.quarantine) == chosen[name]
            assert (engine.curator is not None) == chosen[name][1].enabled


def test_a_harmful_experience_is_quarantined_listed_kept_out_and_released_with_verified_log_entries(client, app):
    # similarity retrieval keeps trying the harmful lesson (value-aware retrieval would demote it untested)
    agent, names = scored_agent(client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2})
    harmful = names["harmful"]
    taken = drive_until_quarantined(client, agent["id"], names, limit=40)
    assert taken < 40, taken
    app.state.services.engines.forget(agent["id"])  # the book comes back from the stored state
    listed = client.list_experiences(agent["id"], status="quarantined")["items"]
    assert [item["id"] for item in listed] == [harmful]
    evidence = listed[0]["quarantine"]
    assert listed[0]["status"] == "quarantined" and evidence["e_value"] >= evidence["threshold"]
    assert evidence["mean"] < 0 and evidence["n"] >= 1
    active = client.list_experiences(agent["id"], status="active")["items"]
    assert harmful not in {item["id"] for item in active} and len(active) == 5
    assert client.values(agent["id"])["values"][harmful]["status"] == "quarantined"
    log = client.trust_log(agent["id"], limit=1000)["items"]
    quarantines = [entry for entry in log if entry["kind"] == "quarantine"]
    assert [q["payload"]["experience_id"] for q in quarantines] == [harmful]
    assert quarantines[0]["index"] == evidence["log_index"] and quarantines[0]["payload"]["date"] == evidence["date"]
    assert client.verify(agent["id"])["ok"]

    # kept out of rank, of plans on candidates and of server retrieval (the context is its own text)
    everyone = [names[n] for n in VALUES]
    ranked = client.rank_experiences(agent["id"], k=6, candidate_ids=everyone)["items"]
    assert harmful not in {r["id"] for r in ranked} and len(ranked) == 5
    when = START + dt.timedelta(days=100)
    on_candidates = client.create_decision(agent["id"], when, when, "candidates", candidate_ids=everyone)
    searched = client.create_decision(agent["id"], when, when, TEXTS["harmful"])
    assert (on_candidates["retrieval"], searched["retrieval"]) == ("candidates", "server")
    for plan in (on_candidates, searched):
        assert harmful not in {r["id"] for r in plan["retrieved"]} and len(plan["retrieved"]) == 4
    hits = client.search_experiences(agent["id"], TEXTS["harmful"], k=6)["hits"]  # the search retrieval serves
    assert harmful not in {h["id"] for h in hits} and len(hits) == 5
    before = written(client, agent["id"])
    with pytest.raises(ServiceError) as error:
        client.create_decision(agent["id"], when, when, "own retrieval", retrieved_external_ids=["harmful", "a"])
    assert (error.value.status, error.value.field) == (422, "retrieved_external_ids")
    assert error.value.message == (  # named as the request named it: by its external id
        "retrieved_external_ids: ['harmful'] are quarantined experiences and cannot be retrieved (release them first)"
    )
    assert written(client, agent["id"]) == before

    released = client.release_experience(agent["id"], harmful, reason="reviewed: the lesson was rewritten")
    assert released["status"] == "active" and released["quarantine"] is None
    log = client.trust_log(agent["id"], limit=1000)["items"]
    release = log[-1]
    assert release["kind"] == "release" and release["payload"]["experience_id"] == harmful
    assert release["payload"]["reason"] == "reviewed: the lesson was rewritten"
    assert release["payload"]["e_value"] >= release["payload"]["threshold"]
    assert client.verify(agent["id"])["ok"]
    assert client.list_experiences(agent["id"], status="quarantined")["items"] == []
    ranked = client.rank_experiences(agent["id"], k=6, candidate_ids=everyone)["items"]
    assert ranked[0]["id"] == harmful  # retrieved again: first in the given order
    assert client.search_experiences(agent["id"], TEXTS["harmful"], k=1)["hits"][0]["id"] == harmful

    before = written(client, agent["id"])
    with pytest.raises(ServiceError) as error:
        client.release_experience(agent["id"], harmful, reason="again")
    assert (error.value.status, error.value.code, error.value.field) == (409, "not_quarantined", "experience_id")
    assert written(client, agent["id"]) == before


def test_a_quarantined_experience_retired_by_hand_is_retired_and_cannot_be_released(client, http):
    """Retiring wins: a retired experience reads as retired whatever its evidence, and releasing it is a 409
    that writes nothing, as for any experience not in quarantine."""
    agent, names = scored_agent(client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2})
    harmful = names["harmful"]
    assert drive_until_quarantined(client, agent["id"], names, limit=40) < 40
    client.retire_experience(agent["id"], harmful)
    assert client.values(agent["id"])["values"][harmful]["status"] == "retired"
    assert client.list_experiences(agent["id"], status="quarantined")["items"] == []
    before = written(client, agent["id"])
    with pytest.raises(ServiceError) as error:
        client.release_experience(agent["id"], harmful, reason="reviewed")
    assert (error.value.status, error.value.code, error.value.field) == (409, "not_quarantined", "experience_id")
    assert "is retired, not quarantined" in error.value.message
    assert written(client, agent["id"]) == before


def test_releasing_on_an_agent_without_quarantine_is_a_409_that_writes_nothing(client):
    agent, names = scored_agent(client, quarantine={"enabled": False})
    before = written(client, agent["id"])
    with pytest.raises(ServiceError) as error:
        client.release_experience(agent["id"], names["a"], reason="reviewed")
    assert (error.value.status, error.value.code, error.value.field) == (409, "not_quarantined", "experience_id")
    assert written(client, agent["id"]) == before


def test_after_a_detected_change_values_show_the_value_learnt_since_it_as_rank_reads_it(client):
    """A lesson that helped and now hurts (method 4.14): once its change is detected, ``/values`` reports the
    value learnt since the change (its mean, interval and n), the very value rank shows and retrieval uses."""
    agent, names = scored_agent(
        client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2, "change_threshold": 20.0}
    )
    lesson = names["a"]
    rng = np.random.default_rng(6)
    order = [names[n] for n in ("a", "b", "c", "d", "e", "harmful")]  # the lesson always among the four
    by_id = {i: n for n, i in names.items()}
    changed_at, t = None, 0
    while changed_at is None and t < 80:
        worth = {**dict.fromkeys(VALUES, 0.0), "a": 0.3 if t < 15 else -0.3}
        when = START + dt.timedelta(days=t)
        plan = client.create_decision(agent["id"], when, when, f"day {t}", candidate_ids=order)
        utilities = [
            sum(worth[by_id[e]] for e in subset["experience_ids"]) + rng.normal(0.0, 0.05) for subset in plan["subsets"]
        ]
        client.submit_drafts(agent["id"], plan["decision_id"], [f"draft {i}" for i in range(len(utilities))])
        client.settle(agent["id"], plan["decision_id"], utilities=utilities, settled_at=when)
        t += 1
        changed_at = client.values(agent["id"])["values"][lesson]["changed_at"]
    assert changed_at is not None, "no change detected: the check is weak"
    for _ in range(3):  # a few contributions since the change
        when = START + dt.timedelta(days=t)
        plan = client.create_decision(agent["id"], when, when, f"day {t}", candidate_ids=order)
        utilities = [-0.3 * (names["a"] in s["experience_ids"]) + rng.normal(0.0, 0.05) for s in plan["subsets"]]
        client.submit_drafts(agent["id"], plan["decision_id"], [f"draft {i}" for i in range(len(utilities))])
        client.settle(agent["id"], plan["decision_id"], utilities=utilities, settled_at=when)
        t += 1
    entry = client.values(agent["id"])["values"][lesson]
    ranked = {r["id"]: r for r in client.rank_experiences(agent["id"], k=6, candidate_ids=order)["items"]}[lesson]
    assert 3 <= entry["n"] < t  # contributions since the change, not every settlement that credited it
    assert (entry["mean"], entry["n"]) == (ranked["value"], ranked["n"])
    # one interval everywhere: rank's is the 90% interval the values show (it was a 95% one beside their 90%)
    assert ranked["interval"] == pytest.approx([entry["lower"], entry["upper"]], abs=1e-12)
    assert entry["mean"] < 0 and entry["upper"] is not None and entry["interval"] == "empirical_bayes"
    assert client.get_experience(agent["id"], lesson)["value"] == {
        key: entry[key] for key in ("mean", "sd", "n", "lower", "upper", "p_positive", "interval")
    }


def test_rank_under_similarity_follows_the_given_similarities_and_value_aware_without_evidence_equals_it(client):
    rng = np.random.default_rng(2)
    similarities = list(rng.normal(size=6))
    ranked = {}
    for retrieval in ("similarity", "value_aware"):
        agent, names = scored_agent(client, name=retrieval, retrieval=retrieval)
        ids = [names[n] for n in VALUES]
        items = client.rank_experiences(agent["id"], k=6, candidate_ids=ids, similarities=similarities)["items"]
        assert all(item["reason"] == "similarity" and item["interval"] is None for item in items)
        assert [item["similarity"] for item in items] == sorted(similarities, reverse=True)
        ranked[retrieval] = [item["external_id"] for item in items]
        by_external = client.rank_experiences(agent["id"], k=2, candidate_external_ids=["e", "a", "b"])["items"]
        assert [(item["external_id"], item["id"]) for item in by_external] == [("e", names["e"]), ("a", names["a"])]
    order = sorted(range(6), key=lambda i: -similarities[i])
    assert ranked["similarity"] == ranked["value_aware"] == [list(VALUES)[i] for i in order]


def test_a_value_aware_agent_without_trust_evidence_retrieves_as_a_similarity_agent(client):
    plans = {}
    for retrieval in ("similarity", "value_aware"):
        agent, names = scored_agent(client, name=retrieval, retrieval=retrieval)
        plan = client.create_decision(agent["id"], START, START, "prices rallied after the rate cut")
        by_id = {i: n for n, i in names.items()}
        plans[retrieval] = [(by_id[r["id"]], r["score"]) for r in plan["retrieved"]]
    assert plans["similarity"] == plans["value_aware"] and len(plans["similarity"]) == 4


def _rank_refusals(names, other):
    ids = [names[n] for n in VALUES]
    return [
        ({"candidate_ids": [ids[0], "f" * 32], "k": 1}, "candidate_ids"),  # unknown
        ({"candidate_ids": [ids[0], names["a"]], "k": 1, "_retire": True}, "candidate_ids"),  # retired
        ({"candidate_ids": [ids[0], other], "k": 1}, "candidate_ids"),  # another agent's
        ({"candidate_ids": [ids[0], ids[0]], "k": 1}, "candidate_ids"),  # repeated
        ({"candidate_ids": [ids[0], f" {ids[1]}"], "k": 1}, "candidate_ids.1"),  # an id with a leading space
        ({"candidate_external_ids": ["a", "nope"], "k": 1}, "candidate_external_ids"),
        ({"candidate_ids": [f"{i:032x}" for i in range(101)], "k": 1}, "candidate_ids"),  # more than 100
        ({"candidate_ids": ids, "k": 0}, "k"),
        ({"candidate_ids": ids, "k": 101}, "k"),
        ({"candidate_ids": ids[:2], "k": 3}, "k"),  # more than the candidates
        ({"candidate_ids": ids[:2], "similarities": [1.0], "k": 1}, "similarities"),
        ({"candidate_ids": ids[:2], "similarities": [1e308, -1e308], "k": 1}, "similarities"),  # range overflows
        ({"candidate_ids": ids[:2], "candidate_external_ids": ["a"], "k": 1}, "candidate_external_ids"),
        ({"k": 1}, "candidate_external_ids"),
        ({"candidate_ids": [], "k": 1}, "candidate_ids"),
    ]


def test_every_bad_rank_is_refused_naming_the_field_and_writes_nothing(client, http):
    agent, names = scored_agent(client, quarantine={"enabled": True})
    other, _ = scored_agent(client, name="other")
    other_id = client.list_experiences(other["id"])["items"][0]["id"]
    client.retire_experience(agent["id"], names["a"])
    path = f"/v1/agents/{agent['id']}/experiences/rank"
    before = written(client, agent["id"])
    for body, field in _rank_refusals(names, other_id):
        body.pop("_retire", None)
        response = send(http, client, "POST", path, body)
        assert response.status_code == 422, (body, response.text)
        error = response.json()["error"]
        assert error["field"] == field and error["message"].startswith(f"{field}: "), (body, error)
    assert written(client, agent["id"]) == before


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"candidate_ids": ["f" * 32]}, "candidate_ids"),
        ({"candidate_external_ids": ["a", "a"]}, "candidate_external_ids"),
        ({"candidate_external_ids": ["a"], "similarities": [0.1, 0.2]}, "similarities"),
        ({"similarities": [0.1]}, "similarities"),
        ({"candidate_external_ids": ["a", "b"], "similarities": [1e308, -1e308]}, "similarities"),
        ({"candidate_external_ids": ["a"], "retrieved_external_ids": ["b"]}, "candidate_external_ids"),
    ],
)
def test_a_plan_on_bad_candidates_is_refused_naming_the_field_and_writes_nothing(client, http, extra, field):
    agent, _ = scored_agent(client)
    before = written(client, agent["id"])
    body = {"decision_time": START.isoformat(), "maturity": START.isoformat(), "context_text": "x", **extra}
    response = send(http, client, "POST", f"/v1/agents/{agent['id']}/decisions", body)
    assert response.status_code == 422 and response.json()["error"]["field"] == field, response.text
    assert written(client, agent["id"]) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"retrieval": "nearest"}, "retrieval"),
        ({"retrieval": None}, "retrieval"),
        ({"quarantine": {"level": 1.5}}, "quarantine.level"),
        ({"quarantine": {"level": 1e-310}}, "quarantine.level"),  # its bars would overflow: no release could be logged
        ({"quarantine": {"change_threshold": 1.0}}, "quarantine.change_threshold"),
        ({"quarantine": {"enabled": "yes"}}, "quarantine.enabled"),
        ({"quarantine": {"control": "bonferroni"}}, "quarantine.control"),
        ({"quarantine": None}, "quarantine"),
    ],
)
def test_a_bad_curation_setting_is_refused_naming_the_field_and_changes_nothing(client, http, body, field):
    agent, _ = scored_agent(client)
    before = (written(client, agent["id"]), client.get_agent(agent["id"]).model_dump())
    response = send(http, client, "PATCH", f"/v1/agents/{agent['id']}", body)
    assert response.status_code == 422 and response.json()["error"]["field"] == field, response.text
    assert (written(client, agent["id"]), client.get_agent(agent["id"]).model_dump()) == before
    created = send(http, client, "POST", "/v1/agents", {"name": "x", "kind": "scored", **body})
    assert created.status_code == 422 and created.json()["error"]["field"] == field, created.text


def test_an_id_with_white_space_is_refused_as_an_id(client, http):
    agent, names = scored_agent(client)
    ids = [names[n] for n in VALUES]
    paths = {
        "rank": (f"/v1/agents/{agent['id']}/experiences/rank", {"k": 1}),
        "plan": (
            f"/v1/agents/{agent['id']}/decisions",
            {"decision_time": START.isoformat(), "maturity": START.isoformat(), "context_text": "x"},
        ),
    }
    for field, (path, base) in [
        ("candidate_ids", paths["rank"]),
        ("candidate_ids", paths["plan"]),
        ("retrieved_ids", paths["plan"]),
    ]:
        response = send(http, client, "POST", path, {**base, field: [ids[0], f" {ids[1]}"]})
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["field"] == f"{field}.1", error
        assert error["message"].startswith(f"{field}.1: an id must not begin or end with white space"), error


def _negative_zeros(text):
    """The paths of the numbers that a JSON text writes as a negative zero (-0.0)."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        elif isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0.0:
            found.append(path)

    walk(json.loads(text), "")
    return found


def test_values_ranks_and_plans_never_show_a_negative_zero(client, http):
    # drafts that differ by noise alone: early values shrink to exactly zero, some from a negative mean
    agent, names = scored_agent(client, retrieval="value_aware")
    rng = np.random.default_rng(0)
    ids = [names[n] for n in VALUES]
    shown = []
    for t in range(40):
        when = START + dt.timedelta(days=t)
        response = send(
            http,
            client,
            "POST",
            f"/v1/agents/{agent['id']}/decisions",
            {
                "decision_time": when.isoformat(),
                "maturity": when.isoformat(),
                "context_text": f"day {t}",
                "candidate_ids": ids,
            },
        )
        assert response.status_code == 201, response.text
        plan = response.json()
        shown.append(("plan", _negative_zeros(response.text)))
        decided = client.submit_drafts(
            agent["id"], plan["decision_id"], [f"d {i}" for i in range(len(plan["subsets"]))]
        )
        shown.append(("decision", _negative_zeros(json.dumps(decided.model_dump(mode="json")))))
        utilities = [float(u) for u in rng.normal(0.0, 0.3, size=len(plan["subsets"]))]
        client.settle(agent["id"], plan["decision_id"], utilities=utilities, settled_at=when)
        values = raw(http, client, "GET", f"/v1/agents/{agent['id']}/values", None)
        ranked = send(
            http, client, "POST", f"/v1/agents/{agent['id']}/experiences/rank", {"candidate_ids": ids, "k": 6}
        )
        shown += [("values", _negative_zeros(values.text)), ("rank", _negative_zeros(ranked.text))]
    assert [(what, paths) for what, paths in shown if paths] == []


def test_a_quarantined_experience_is_not_deleted_until_released_or_retired(client):
    # deleted, then added again under its external id, it would leave the quarantine without a log entry
    agent, names = scored_agent(client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2})
    assert drive_until_quarantined(client, agent["id"], names, limit=40) < 40
    harmful = names["harmful"]
    before = written(client, agent["id"])
    with pytest.raises(ServiceError) as refused:
        client.delete_experience(agent["id"], harmful)
    assert (refused.value.status, refused.value.code, refused.value.field) == (409, "quarantined", "experience_id")
    assert "release it (a logged release) or retire it before deleting it" in refused.value.message
    assert written(client, agent["id"]) == before
    client.release_experience(agent["id"], harmful, reason="reviewed: the lesson is wrong, forget it")
    client.delete_experience(agent["id"], harmful)
    assert harmful not in {e["id"] for e in client.list_experiences(agent["id"], limit=500)["items"]}
    log = client.trust_log(agent["id"], limit=1000)["items"]
    assert [e["kind"] for e in log if e["kind"] in ("quarantine", "release")] == ["quarantine", "release"]


def test_a_quarantined_experience_retired_by_hand_can_then_be_deleted_and_the_log_ends_its_quarantine(client):
    """The refusal to delete a quarantined experience offers two ways out, release or retire; retiring is one:
    a retired experience is never released (retiring wins), so refusing its deletion too would keep it forever.
    Its deletion is logged as the end of its quarantine: added again under its external id, it is active, and
    the log says why."""
    agent, names = scored_agent(client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2})
    assert drive_until_quarantined(client, agent["id"], names, limit=40) < 40
    harmful = names["harmful"]
    text = client.get_experience(agent["id"], harmful)["text"]
    client.retire_experience(agent["id"], harmful)
    client.delete_experience(agent["id"], harmful)
    assert harmful not in {e["id"] for e in client.list_experiences(agent["id"], limit=500)["items"]}
    assert harmful not in client.values(agent["id"])["values"]
    log = client.trust_log(agent["id"], limit=1000)["items"]
    ended = [e for e in log if e["kind"] in ("quarantine", "release")]
    assert [e["kind"] for e in ended] == ["quarantine", "release"]
    assert ended[1]["payload"]["experience_id"] == harmful
    assert ended[1]["payload"]["reason"] == "deleted after it was retired in quarantine"
    again = client.add_experience(agent["id"], text, external_id="harmful-again")
    assert again["status"] == "active" and client.verify(agent["id"])["ok"]


def test_a_release_whose_answer_was_lost_is_retried_with_its_key_and_logged_once(client, http):
    """The client sends a release with an ``Idempotency-Key``: a retry after a lost answer gets the first
    answer (not a 409 ``not_quarantined``), the log holds one release, and the key replays that answer."""
    from service.client import MemtrialClient

    agent, names = scored_agent(client, retrieval="similarity", quarantine={"enabled": True, "level": 0.2})
    harmful = names["harmful"]
    assert drive_until_quarantined(client, agent["id"], names, limit=40) < 40
    flaky = LoseFirstAnswer(http._transport, "/release")
    api_key = client._headers["Authorization"].removeprefix("Bearer ")
    with httpx.Client(transport=flaky, base_url=str(http.base_url)) as losing:
        released = MemtrialClient(api_key=api_key, http=losing, retries=2).release_experience(
            agent["id"], harmful, reason="reviewed"
        )
    assert released["status"] == "active" and flaky.lost == 1
    assert len(flaky.keys) == 2 and flaky.keys[0] == flaky.keys[1] is not None  # one key, reused by the retry
    releases = [entry for entry in client.trust_log(agent["id"], limit=1000)["items"] if entry["kind"] == "release"]
    assert [entry["payload"]["experience_id"] for entry in releases] == [harmful]

    path = f"/v1/agents/{agent['id']}/experiences/{harmful}/release"
    before = written(client, agent["id"])
    replayed = raw(http, client, "POST", path, json.dumps({"reason": "reviewed"}), {"Idempotency-Key": flaky.keys[0]})
    assert replayed.status_code == 200 and replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json() == released.model_dump(mode="json")
    other = raw(http, client, "POST", path, json.dumps({"reason": "other"}), {"Idempotency-Key": flaky.keys[0]})
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")
    unkeyed = send(http, client, "POST", path, {"reason": "reviewed"})
    assert (unkeyed.status_code, unkeyed.json()["error"]["code"]) == (409, "not_quarantined")
    assert written(client, agent["id"]) == before
