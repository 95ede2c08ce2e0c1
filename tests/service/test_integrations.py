"""The Mem0 and LangGraph adapters, against the real packages (Mem0's open-source Memory with the shipped
embedder and a FAISS store; a compiled LangGraph graph) and the service over its HTTP interface."""

import datetime as dt
import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import UNIVERSE, make_tenant

ROOT = Path(__file__).resolve().parents[2]
START = dt.datetime(2022, 1, 31, 21, tzinfo=dt.UTC)
MEMORIES = [
    "When the central bank cut rates, overweight TLT: long bonds rallied.",
    "After an inflation surprise, overweight GLD: gold held its value.",
    "In a strong earnings season, overweight SPY: stocks climbed.",
    "In a volatile month, overweight BIL: cash waited it out.",
    "When the dollar weakened, overweight GLD: gold rose.",
]
RETURNS = {"SPY": [0.01, -0.004], "TLT": [-0.002, 0.003], "GLD": [0.0, 0.002], "BIL": [0.0001, 0.0001]}
EVEN = dict.fromkeys([a["asset"] for a in UNIVERSE], 0.25)


@pytest.fixture(scope="module")
def mem0_memory_class():
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    mem0 = pytest.importorskip("mem0", reason="the [mem0] extra (mem0ai) is not installed")
    return mem0.Memory


@pytest.fixture
def memory(mem0_memory_class, tmp_path):
    from service.integrations.mem0 import offline_config

    store = mem0_memory_class.from_config(offline_config(str(tmp_path / "mem0")))
    for text in MEMORIES:
        store.add(text, user_id="fund", infer=False)
    return store


def month(t):
    time = START + dt.timedelta(days=30 * t)
    return time, time + dt.timedelta(days=7)


def test_mem0_plans_on_memtrials_picks_among_mem0s_hits_mirrored_once_by_external_id(client, agent, memory):
    from service.integrations.mem0 import Mem0Credit

    credit = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    query = "The central bank cut interest rates."
    found = credit.hits(query)  # Mem0's own hits: nothing sent to memtrial
    assert len(found) == 5 and client.list_experiences(agent["id"]).total == 0
    hits = credit.search(query)
    assert client.list_experiences(agent["id"]).total == 5  # every candidate mirrored, once
    # similarity retrieval: memtrial's picks are Mem0's top k in Mem0's order, each with Mem0's score
    assert [h["id"] for h in hits] == [h["id"] for h in found[:4]]
    assert [h["memtrial"]["similarity"] for h in hits] == [h["score"] for h in found[:4]]
    assert {h["memtrial"]["reason"] for h in hits} == {"similarity"}
    plan = credit.plan(*month(0), query, horizon=2)
    assert plan.retrieval == "client"
    assert [r.external_id for r in plan.retrieved] == [h["id"] for h in hits]
    assert [r.text for r in plan.retrieved] == [h["memory"] for h in hits]
    assert client.list_experiences(agent["id"]).total == 5
    client.submit_drafts(agent["id"], plan.decision_id, [EVEN] * len(plan.subsets))
    client.settle(agent["id"], plan.decision_id, returns=RETURNS)
    again = credit.plan(*month(1), query, horizon=2)  # the same hits: nothing copied again
    assert [r.id for r in again.retrieved] == [r.id for r in plan.retrieved]
    assert client.list_experiences(agent["id"]).total == 5
    memory.update(hits[0]["id"], text="When the central bank cut rates, overweight TLT and GLD.")
    credit.plan(*month(2), query, horizon=2)  # a rewritten memory updates its mirror, keeping its id
    mirrored = client.list_experiences(agent["id"], external_id=hits[0]["id"]).items
    assert [(m.id, m.text) for m in mirrored] == [
        (plan.retrieved[0].id, "When the central bank cut rates, overweight TLT and GLD.")
    ]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"k": 8}, "k: at most the agent's k (4): a plan on 8 memories would be refused, got 8"),
        ({"k": "3"}, "k: a whole number, got '3'"),
        ({"k": 2.5}, "k: a whole number, got 2.5"),
        ({"candidates": True}, "candidates: a whole number, got True"),
    ],
)
def test_mem0_credit_refuses_a_k_the_agent_would_refuse_before_anything_is_mirrored(
    client, agent, memory, settings, message
):
    """A k above the agent's was taken, and every plan then failed after mirroring its hits (the agent kept them);
    a k given as a text raised Python's own TypeError."""
    from service.integrations.mem0 import Mem0Credit

    with pytest.raises(ValueError) as error:
        Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, **settings)
    assert str(error.value) == message and client.list_experiences(agent["id"]).total == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"top_k": 3}, "search_options: 'top_k' is Mem0Credit's own (set candidates instead), got {'top_k': 3}"),
        (
            {"filters": {"user_id": "desk"}},
            "search_options: 'filters' is Mem0Credit's own (set filters instead), got {'filters': {'user_id': 'desk'}}",
        ),
        ({"query": "x"}, "search_options: 'query' is Mem0Credit's own (search's argument), got {'query': 'x'}"),
    ],
)
def test_mem0_credit_refuses_search_options_it_sets_itself_naming_the_field(client, agent, memory, options, message):
    """They were taken, and the first search failed with Python's own TypeError (multiple values for an argument)."""
    from service.integrations.mem0 import Mem0Credit

    with pytest.raises(ValueError) as error:
        Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options=options)
    assert str(error.value) == message


def test_mem0_with_no_hit_plans_the_memory_free_draft_alone_not_the_agents_other_experiences(client, agent, memory):
    from service.integrations.mem0 import Mem0Credit

    client.add_experiences(agent["id"], [{"text": "A lesson from another store.", "external_id": "other-store-1"}])
    credit = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    credit.search("The central bank cut interest rates.")  # some Mem0 memories are mirrored too
    nothing = Mem0Credit(memory, client, agent["id"], filters={"user_id": "nobody"})
    plan = nothing.plan(*month(0), "The central bank cut interest rates.", horizon=2)
    assert plan.retrieval == "client" and plan.retrieved == []
    assert [s.mask for s in plan.subsets] == [0]


def test_mem0_a_quarantined_memory_does_not_take_a_candidates_place(client, agent, mem0_memory_class, tmp_path):
    from service.integrations.mem0 import STATUS_KEY, Mem0Credit, offline_config

    store = mem0_memory_class.from_config(offline_config(str(tmp_path / "slots")))
    for i, text in enumerate(MEMORIES[:3]):
        metadata = {STATUS_KEY: "quarantined"} if i == 0 else {}
        store.add(text, user_id="fund", infer=False, metadata=metadata)
    credit = Mem0Credit(
        store, client, agent["id"], filters={"user_id": "fund"}, k=2, candidates=2, search_options={"threshold": 0.0}
    )
    found = credit.hits(MEMORIES[0])  # the quarantined memory is the nearest
    assert [h["memory"] for h in found] == MEMORIES[1:3]


def test_mem0_search_leaves_out_a_memory_retired_in_memtrial_after_it_was_mirrored(client, agent, memory):
    from service.integrations.mem0 import Mem0Credit

    credit = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    query = "The central bank cut interest rates."
    first = credit.search(query)
    client.retire_experience(agent["id"], first[0]["memtrial"]["experience_id"])
    again = credit.search(query)  # rank refuses the retired id (422): the adapter learns it and ranks the rest
    assert [h["id"] for h in again] == [h["id"] for h in credit.hits(query) if h["id"] != first[0]["id"]][:4]
    fresh = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    assert [h["id"] for h in fresh.search(query)] == [h["id"] for h in again]  # a new adapter learns it at its mirror
    assert client.list_experiences(agent["id"]).total == 5


def test_mem0_write_back_puts_each_value_interval_and_use_count_into_its_metadata(client, agent, memory):
    from service.integrations.mem0 import Mem0Credit

    credit = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    for t in range(3):
        plan = credit.plan(*month(t), "Rates were cut; the dollar weakened.", horizon=2)
        drafts = [draft_for(s.texts) for s in plan.subsets]
        client.submit_drafts(agent["id"], plan.decision_id, drafts)
        client.settle(agent["id"], plan.decision_id, returns=RETURNS)
    result = credit.write_back()
    values = client.values(agent["id"]).values
    assert sorted(result.updated) == sorted(v.external_id for v in values.values()) and result.missing == []
    assert sorted(v.n for v in values.values()) == [0, 3, 3, 3, 3]  # five candidates mirrored, the same four picked
    for value in values.values():
        meta = memory.get(value.external_id)["metadata"]
        assert meta["memtrial_value"] == value.mean and meta["memtrial_sd"] == value.sd
        assert (meta["memtrial_lower_90"], meta["memtrial_upper_90"]) == (value.lower, value.upper)
        assert meta["memtrial_p_positive"] == value.p_positive and meta["memtrial_uses"] == value.n
        assert meta["memtrial_agent"] == agent["id"]
        assert memory.get(value.external_id)["memory"] == value.text  # the text is left as it was
    ranked = [m for m in credit.ranked() if (m.get("metadata") or {}).get("memtrial_value") is not None]
    assert [m["metadata"]["memtrial_value"] for m in ranked] == sorted((v.mean for v in values.values()), reverse=True)
    gone = next(iter(values.values())).external_id
    memory.delete(gone)
    assert credit.write_back().missing == [gone]


def test_mem0_ranked_and_prune_candidates_read_every_memory_of_the_scope(client, agent, memory, monkeypatch):
    # Mem0's get_all answers 20 memories unless asked for more: a scope's 21st and later were never ranked
    from service.integrations import mem0 as adapter

    for index in range(21):
        memory.add(f"Lesson number {index} about markets.", user_id="fund", infer=False)
    credit = adapter.Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"})
    assert len(credit.ranked()) == len(MEMORIES) + 21
    monkeypatch.setattr(adapter, "ALL_PAGE", 4)  # asked again for more while a page comes back full
    assert len(credit.ranked()) == len(MEMORIES) + 21


def test_mem0_sync_and_write_back_touch_only_the_memories_this_scope_mirrored(client, agent, memory):
    """They took every experience of the agent with an external id for a memory of their own: one added over REST
    was reported missing, and the adapter of one scope wrote into the memories another scope had mirrored."""
    from service.integrations.mem0 import STATUSES_KEY, Mem0Credit

    desk = [memory.add(text, user_id="desk", infer=False)["results"][0]["id"] for text in MEMORIES[:2]]
    client.add_experiences(agent["id"], [{"text": "A lesson from another store.", "external_id": "mem-17"}])
    fund = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    other = Mem0Credit(memory, client, agent["id"], filters={"user_id": "desk"}, search_options={"threshold": 0.0})
    mirrored = [h["id"] for h in fund.hits("The central bank cut interest rates.")]
    fund.mirror(fund.hits("The central bank cut interest rates."))
    other.mirror(other.hits("The central bank cut interest rates."))
    [first] = client.list_experiences(agent["id"], external_id=desk[0]).items
    assert first.metadata == {"source": "mem0", "scope": {"user_id": "desk"}}  # what mirrored it
    synced = fund.sync_status()
    assert sorted(synced.active) == sorted(mirrored) and synced.missing == []
    assert sorted(synced.not_mirrored) == sorted(["mem-17", *desk])  # left alone, and said so
    written = fund.write_back()
    assert sorted(written.updated) == sorted(mirrored) and written.missing == []
    assert sorted(written.not_mirrored) == sorted(["mem-17", *desk])
    for memory_id in desk:  # the other scope's memories: nothing written by this one
        assert STATUSES_KEY not in (memory.get(memory_id).get("metadata") or {})
        assert "memtrial_value" not in (memory.get(memory_id).get("metadata") or {})
    assert sorted(other.sync_status().active) == sorted(desk)
    assert fund.sync_status().active == [] and sorted(other.write_back().updated) == sorted(desk)


def test_langgraph_drafts_once_per_subset_in_parallel_each_on_exactly_its_lessons(client, agent):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph, settle_node

    client.add_experiences(agent["id"], MEMORIES[:4])
    calls, lock, running = [], threading.Lock(), {"now": 0, "most": 0}
    overlapping = threading.Event()

    def draft(task):
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
            calls.append(task)
            if running["now"] > 1:
                overlapping.set()
        overlapping.wait(10)  # a draft runs until another runs beside it (never, if the graph drafted one at a time)
        with lock:
            running["now"] -= 1
        return {**EVEN, "TLT": 0.25 + 0.05 * len(task.lessons), "BIL": 0.25 - 0.05 * len(task.lessons)}

    graph = decision_graph(client, agent["id"], draft)
    decision_time, maturity = month(0)
    state = graph.invoke(
        {
            "decision_time": decision_time.isoformat(),
            "maturity": maturity.isoformat(),
            "context_text": "Rates were cut.",
            "options": {"horizon": 2},
        }
    )
    subsets = state["plan"]["subsets"]
    assert len(calls) == len(subsets) == 8 and running["most"] > 1
    assert sorted((c.index, c.lessons) for c in calls) == sorted((s["index"], tuple(s["texts"])) for s in subsets)
    assert state["decision"]["status"] == "decided"
    posted = client.get_decision(agent["id"], state["plan"]["decision_id"]).decision["drafts"]
    expected = [draft_for(s["texts"]) for s in subsets]
    assert [pytest.approx(d) for d in posted] == expected
    settled = settle_node(client, agent["id"])(
        {"decision_id": state["plan"]["decision_id"], "outcome": {"returns": RETURNS}}
    )
    assert settled["settlement"]["status"] == "settled"


def draft_for(texts):
    return {**EVEN, "TLT": 0.25 + 0.05 * len(texts), "BIL": 0.25 - 0.05 * len(texts)}


def test_langgraph_decisions_on_a_checkpointed_thread_keep_only_the_decision_in_hands_drafts(client, agent):
    """A thread whose state a checkpointer keeps ran decision after decision: its drafts were added up across
    runs (8 more each), so the state grew without bound and a run could read a former decision's draft."""
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from langgraph.checkpoint.memory import InMemorySaver

    from service.integrations.langgraph import decision_graph

    client.add_experiences(agent["id"], MEMORIES[:4])
    seen = []

    def draft(task):
        seen.append(task.index)
        return draft_for(task.lessons)

    graph = decision_graph(client, agent["id"], draft, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "desk-1"}}
    for t in range(3):
        decision_time, maturity = month(t)
        state = graph.invoke(
            {
                "decision_time": decision_time.isoformat(),
                "maturity": maturity.isoformat(),
                "context_text": f"Month {t}: rates were cut.",
                "options": {"horizon": 2},
            },
            thread,
        )
        subsets = state["plan"]["subsets"]
        assert sorted(i for i, _ in state["drafts"]) == sorted(s["index"] for s in subsets)  # this decision's alone
        posted = client.get_decision(agent["id"], state["plan"]["decision_id"]).decision["drafts"]
        assert [pytest.approx(d) for d in posted] == [draft_for(s["texts"]) for s in subsets]
    kept = graph.get_state(thread).values
    assert len(kept["drafts"]) == 8 and kept["decision"]["decision_id"] == state["plan"]["decision_id"]
    assert len(seen) == 24


def test_langgraph_a_failed_run_on_a_checkpointed_thread_holds_its_own_plan_alone_and_resumes(client, agent, caplog):
    """A run whose draft failed left the thread's state pairing its new plan with the former decision; resuming
    it read our task type back from the checkpoint unregistered (LangGraph warns it will refuse that)."""
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from langgraph.checkpoint.memory import InMemorySaver

    from service.integrations.langgraph import decision_graph

    client.add_experiences(agent["id"], MEMORIES[:4])
    failing = {"on": False}

    def draft(task):
        if failing["on"] and task.index == 3:
            raise RuntimeError("the model timed out")
        return draft_for(task.lessons)

    graph = decision_graph(client, agent["id"], draft, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "desk-2"}}
    states = []
    for t in range(2):
        decision_time, maturity = month(t)
        failing["on"] = t == 1
        given = {
            "decision_time": decision_time.isoformat(),
            "maturity": maturity.isoformat(),
            "context_text": f"Month {t}: rates were cut.",
            "options": {"horizon": 2},
        }
        if t == 0:
            states.append(graph.invoke(given, thread))
            continue
        with pytest.raises(RuntimeError, match="the model timed out"):
            graph.invoke(given, thread)
    held = graph.get_state(thread).values
    assert held["plan"]["decision_id"] != states[0]["plan"]["decision_id"] and held.get("decision") is None
    caplog.set_level(logging.WARNING)
    failing["on"] = False
    resumed = graph.invoke(None, thread)  # the failed branch runs again; the others' drafts are kept
    assert resumed["decision"]["decision_id"] == held["plan"]["decision_id"]
    assert resumed["decision"]["status"] == "decided"
    assert not [r for r in caplog.records if "unregistered type" in r.getMessage()]


def test_langgraph_with_your_own_retrieval_and_a_budget_makes_only_the_listed_calls(client):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph

    budgeted = client.create_agent("budget", "balanced", UNIVERSE, draft_budget=2)
    client.add_experiences(budgeted["id"], [{"text": t, "external_id": f"m{i}"} for i, t in enumerate(MEMORIES)])
    calls = []
    graph = decision_graph(
        client,
        budgeted["id"],
        lambda task: calls.append(task) or draft_for(task.lessons),
        retrieve=lambda context: ["m4", "m1"],
        by_external_id=True,
    )
    made = []
    for t in range(4):
        decision_time, maturity = month(t)
        state = graph.invoke(
            {
                "decision_time": decision_time.isoformat(),
                "maturity": maturity.isoformat(),
                "context_text": "x",
                "options": {"horizon": 2},
            }
        )
        assert [r["external_id"] for r in state["plan"]["retrieved"]] == ["m4", "m1"]
        made.append(len(state["plan"]["subsets"]))
        assert state["decision"]["draft_calls"] == made[-1]
    assert len(calls) == sum(made) <= 2 * 4 and 1 in made


LESSONS = {  # a lesson in a draft moves the forecast of a number whose outcome is 1 by exactly this
    "Release dates slip when the design review is skipped.": 0.125,
    "Small teams ship on time.": 0.125,
    "Ship on Fridays: nothing ever breaks.": -0.25,
}
HARMFUL = "Ship on Fridays: nothing ever breaks."
QUESTION = "Will the release ship on time?"
DAY_ZERO = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def lessons(mem0_memory_class, tmp_path):
    """A Mem0 store of the three lessons (scope user "team") and their Mem0 ids by text."""
    from service.integrations.mem0 import offline_config

    store = mem0_memory_class.from_config(offline_config(str(tmp_path / "lessons")))
    ids = {text: store.add(text, user_id="team", infer=False)["results"][0]["id"] for text in LESSONS}
    return store, ids


def forecast(texts):
    """0.5 plus the effects of the lessons given: always <= 1, so abs_error's utility is the forecast - 1 and
    every contrast is exactly a lesson's effect (binary fractions)."""
    return 0.5 + sum(LESSONS[text] for text in texts)


def settle_day(credit, client, agent_id, t, outcome=1.0, **decision):
    """One decision planned on the Mem0 picks, drafted, decided and settled; the plan. With ``outcome`` 0 each
    lesson's effect on the utility is the opposite: the harmful lesson helps, the others hurt."""
    when = DAY_ZERO + dt.timedelta(days=t)
    plan = credit.plan(when, when + dt.timedelta(hours=1), QUESTION, **decision)
    client.submit_drafts(agent_id, plan.decision_id, [forecast(s.texts) for s in plan.subsets])
    settled_at = when + dt.timedelta(hours=1)
    client.settle(agent_id, plan.decision_id, outcome=outcome, rule="abs_error", settled_at=settled_at)
    return plan


#: the plain sign test with the level's shares 1 / (j (j + 1)) (spread 0, no weighting) under the family-wise
#: rule, whose thresholds the test below counts on
SIGN_TEST = {"enabled": True, "level": 0.05, "spread": 0, "clip": None, "control": "fwer"}


def test_mem0_quarantined_memory_is_marked_in_mem0_left_out_of_searches_and_released_by_hand(client, lessons):
    from service.client import ServiceError
    from service.integrations.mem0 import STATUS_KEY, STATUSES_KEY, Mem0Credit, StatusSync

    memory, ids = lessons
    agent = client.create_agent("curated", kind="scored", credit="raw", quarantine=SIGN_TEST)
    credit = Mem0Credit(memory, client, agent.id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
    for t in range(16):
        plan = settle_day(credit, client, agent.id, t)
        assert sorted(r.text for r in plan.retrieved) == sorted(LESSONS)  # k = 4 >= 3: every lesson, every day
        quarantined = client.list_experiences(agent.id, status="quarantined").items
        if quarantined:
            break
    # slot j needs an e-value of j (j + 1) / 0.05; a sign of +1 every day reaches slot 3's 240 on day 11
    assert [e.external_id for e in quarantined] == [ids[HARMFUL]] and t <= 10
    evidence = quarantined[0]["quarantine"]
    assert evidence["e_value"] >= evidence["threshold"] and evidence["n"] == t + 1 and evidence["mean"] == -0.25
    assert evidence["date"] == plan.decision_id
    assert STATUS_KEY not in (memory.get(ids[HARMFUL]).get("metadata") or {})  # Mem0 does not know yet...
    assert ids[HARMFUL] in [h["id"] for h in credit.hits(QUESTION)]
    assert ids[HARMFUL] not in [h["id"] for h in credit.search(QUESTION)]  # ...but memtrial never picks it

    synced = credit.sync_status()
    assert synced.quarantined == [ids[HARMFUL]] and synced.missing == []
    assert sorted(synced.active) == sorted(i for text, i in ids.items() if text != HARMFUL)
    assert {text: memory.get(i)["metadata"][STATUS_KEY] for text, i in ids.items()} == {
        text: "quarantined" if text == HARMFUL else "active" for text in LESSONS
    }
    assert memory.get(ids[HARMFUL])["metadata"][STATUSES_KEY] == {agent.id: "quarantined"}
    assert credit.sync_status() == StatusSync()  # nothing changed since: nothing written
    assert ids[HARMFUL] not in [h["id"] for h in credit.hits(QUESTION)]  # Mem0's own search leaves it out now
    plan = settle_day(credit, client, agent.id, t + 1)
    assert sorted(r.text for r in plan.retrieved) == sorted(text for text in LESSONS if text != HARMFUL)

    # another agent on the same store keeps its own status: the first one's quarantine does not hide the
    # memory from it, and its sync does not mark the memory active for the first (their statuses flipped)
    other = client.create_agent("other", kind="scored", credit="raw", quarantine=SIGN_TEST)
    second = Mem0Credit(memory, client, other.id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
    assert ids[HARMFUL] in [h["id"] for h in second.hits(QUESTION)]
    assert ids[HARMFUL] in [h["id"] for h in second.search(QUESTION)]  # mirrored into the other agent
    assert ids[HARMFUL] in second.sync_status().active
    metadata = memory.get(ids[HARMFUL])["metadata"]
    assert metadata[STATUSES_KEY] == {agent.id: "quarantined", other.id: "active"}
    assert metadata[STATUS_KEY] == "quarantined"  # while any agent holds it in quarantine
    assert ids[HARMFUL] not in [h["id"] for h in credit.hits(QUESTION)] and credit.sync_status() == StatusSync()

    released = credit.release(ids[HARMFUL], reason="we stopped shipping on Fridays")
    assert released["status"] == "active" and memory.get(ids[HARMFUL])["metadata"][STATUS_KEY] == "active"
    assert ids[HARMFUL] in [h["id"] for h in credit.search(QUESTION)]
    with pytest.raises(ServiceError) as refused:
        credit.release(ids[HARMFUL], reason="again")
    assert (refused.value.status, refused.value.code) == (409, "not_quarantined")
    assert memory.get(ids[HARMFUL])["metadata"][STATUS_KEY] == "active"
    kinds = [entry.kind for entry in client.iter_log(agent.id)]
    assert (kinds.count("quarantine"), kinds.count("release")) == (1, 1)
    with pytest.raises(ValueError, match="memory_id: 'no-such-memory' was never mirrored"):
        credit.release("no-such-memory", reason="x")


def quarantined_by(client, memory, name, **settings):
    """A new agent that settled days on the three lessons until the harmful one was quarantined (as the test
    above shows), and its adapter, synced."""
    from service.integrations.mem0 import Mem0Credit

    agent = client.create_agent(name, kind="scored", credit="raw", quarantine=SIGN_TEST)
    credit = Mem0Credit(memory, client, agent.id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
    for t in range(16):
        settle_day(credit, client, agent.id, t)
        if client.list_experiences(agent.id, status="quarantined").items:
            break
    credit.sync_status()
    return agent, credit


def test_mem0_a_quarantined_memory_the_agent_retires_is_marked_retired_and_no_longer_counts_as_quarantined(
    client, lessons
):
    """sync_status skipped retired experiences: the memory read "quarantined" in Mem0 for ever."""
    from service.integrations.mem0 import STATUS_KEY, STATUSES_KEY, StatusSync

    memory, ids = lessons
    agent, credit = quarantined_by(client, memory, "retiring")
    assert memory.get(ids[HARMFUL])["metadata"][STATUSES_KEY] == {agent.id: "quarantined"}
    [experience] = client.list_experiences(agent.id, external_id=ids[HARMFUL]).items
    client.retire_experience(agent.id, experience.id)
    synced = credit.sync_status()
    metadata = memory.get(ids[HARMFUL])["metadata"]
    assert metadata[STATUSES_KEY] == {agent.id: "retired"} and metadata[STATUS_KEY] == "active"
    assert synced == StatusSync(retired=[ids[HARMFUL]])
    assert credit.sync_status() == StatusSync()  # nothing changed since: nothing written
    assert ids[HARMFUL] not in [h["id"] for h in credit.hits(QUESTION)]  # retired: no candidate's place taken
    memory.delete(ids[HARMFUL])  # retired here and deleted from Mem0: no news at every sync
    assert credit.sync_status() == StatusSync()


def test_mem0_the_quarantine_of_a_deleted_agent_stops_counting_at_another_agents_next_sync(client, lessons):
    """Another agent's sync kept every other entry: a deleted agent's quarantine counted for ever."""
    from service.integrations.mem0 import STATUS_KEY, STATUSES_KEY, Mem0Credit, StatusSync

    memory, ids = lessons
    agent, _ = quarantined_by(client, memory, "deleted")
    staying = client.create_agent("staying", kind="scored", credit="raw")
    credit = Mem0Credit(memory, client, staying.id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
    credit.search(QUESTION)
    assert ids[HARMFUL] in credit.sync_status().active
    assert memory.get(ids[HARMFUL])["metadata"][STATUS_KEY] == "quarantined"
    client.delete_agent(agent.id)
    assert credit.sync_status() == StatusSync(active=[ids[HARMFUL]])  # written again: its summary changed
    metadata = memory.get(ids[HARMFUL])["metadata"]
    assert metadata[STATUSES_KEY] == {staying.id: "active"} and metadata[STATUS_KEY] == "active"
    assert credit.sync_status() == StatusSync()


def test_mem0_shared_across_tenants_keeps_the_quarantine_of_an_agent_this_key_cannot_see(
    client, http, database_url, lessons
):
    """The service answers 404 for another tenant's agent as for a deleted one: an adapter told that other tenants
    share the store keeps their entries; one that is not takes them for a deleted agent's, until theirs syncs."""
    from service.client import MemtrialClient
    from service.integrations.mem0 import STATUS_KEY, STATUSES_KEY, Mem0Credit, StatusSync

    memory, ids = lessons
    other_tenant = MemtrialClient(api_key=make_tenant(database_url, "globex"), http=http)
    theirs, their_credit = quarantined_by(other_tenant, memory, "theirs")
    ours = client.create_agent("ours", kind="scored", credit="raw")
    shared = Mem0Credit(
        memory,
        client,
        ours.id,
        filters={"user_id": "team"},
        search_options={"threshold": 0.0},
        shared_across_tenants=True,
    )
    shared.search(QUESTION)
    assert ids[HARMFUL] in shared.sync_status().active and shared.sync_status() == StatusSync()
    metadata = memory.get(ids[HARMFUL])["metadata"]
    assert metadata[STATUSES_KEY] == {theirs.id: "quarantined", ours.id: "active"}
    assert metadata[STATUS_KEY] == "quarantined"
    alone = Mem0Credit(memory, client, ours.id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
    assert alone.sync_status() == StatusSync(active=[ids[HARMFUL]])  # their entry taken for a deleted agent's
    assert memory.get(ids[HARMFUL])["metadata"][STATUSES_KEY] == {ours.id: "active"}
    assert their_credit.sync_status() == StatusSync(quarantined=[ids[HARMFUL]])  # theirs writes it back
    assert memory.get(ids[HARMFUL])["metadata"][STATUS_KEY] == "quarantined"
    with pytest.raises(ValueError, match=r"^shared_across_tenants: True or False, got 'yes'$"):
        Mem0Credit(memory, client, ours.id, filters={"user_id": "team"}, shared_across_tenants="yes")


def test_mem0_agents_sharing_a_store_each_rank_and_prune_by_their_own_values(client, lessons):
    """write_back wrote one value per memory (the last writer's), and ranked and prune_candidates read it whoever
    asked: one agent's prune list came from another agent's measurements."""
    from service.integrations.mem0 import VALUES_KEY, Mem0Credit

    memory, ids = lessons
    outcomes = {client.create_agent(name, kind="scored", credit="raw").id: o for name, o in (("ones", 1), ("zeros", 0))}
    credits = {
        agent_id: Mem0Credit(memory, client, agent_id, filters={"user_id": "team"}, search_options={"threshold": 0.0})
        for agent_id in outcomes
    }
    for agent_id, outcome in outcomes.items():
        for t in range(6):
            settle_day(credits[agent_id], client, agent_id, t, outcome=outcome)
        assert sorted(credits[agent_id].write_back().updated) == sorted(ids.values())
    useful = sorted(ids[text] for text in LESSONS if text != HARMFUL)
    for agent_id, outcome in outcomes.items():
        values = {v.external_id: v for v in client.values(agent_id).values.values()}
        for memory_id in ids.values():
            entry = memory.get(memory_id)["metadata"][VALUES_KEY][agent_id]
            value = values[memory_id]
            assert (entry["value"], entry["sd"], entry["p_positive"], entry["uses"]) == (
                value.mean,
                value.sd,
                value.p_positive,
                value.n,
            )
            assert credits[agent_id].measured(memory.get(memory_id)) == entry
        ranked = [m["id"] for m in credits[agent_id].ranked()]
        pruned = sorted(m["id"] for m in credits[agent_id].prune_candidates(min_uses=5))
        if outcome == 1:  # the harmful lesson hurts this agent's decisions
            assert ranked[-1] == ids[HARMFUL] and pruned == [ids[HARMFUL]]
        else:  # it helps this one's, and the others hurt
            assert ranked[0] == ids[HARMFUL] and pruned == useful


def test_mem0_values_written_before_agents_kept_their_own_count_only_for_the_agent_named(
    client, agent, mem0_memory_class, tmp_path
):
    """Metadata written by an earlier release (one set of values, memtrial_agent naming whose) is read for that
    agent alone."""
    from service.integrations.mem0 import Mem0Credit, offline_config

    store = mem0_memory_class.from_config(offline_config(str(tmp_path / "earlier")))

    def add(text, value, p_positive):
        old = {"memtrial_value": value, "memtrial_p_positive": p_positive, "memtrial_uses": 9}
        metadata = {**old, "memtrial_sd": 0.05, "memtrial_agent": agent["id"], "memtrial_unit": "U"}
        return store.add(text, user_id="fund", infer=False, metadata=metadata)["results"][0]["id"]

    bad, good = add(MEMORIES[0], -0.2, 0.01), add(MEMORIES[1], 0.1, 0.95)
    plain = store.add(MEMORIES[2], user_id="fund", infer=False)["results"][0]["id"]
    credit = Mem0Credit(store, client, agent["id"], filters={"user_id": "fund"})
    assert [m["id"] for m in credit.ranked()] == [good, bad, plain]
    assert [m["id"] for m in credit.prune_candidates()] == [bad]
    assert credit.measured(store.get(bad)) == {
        "value": -0.2,
        "sd": 0.05,
        "lower_90": None,
        "upper_90": None,
        "p_positive": 0.01,
        "uses": 9,
        "unit": "U",
    }
    other = client.create_agent("other", "balanced", UNIVERSE)
    elsewhere = Mem0Credit(store, client, other["id"], filters={"user_id": "fund"})
    assert elsewhere.prune_candidates() == [] and elsewhere.measured(store.get(bad)) is None


def test_mem0_search_under_value_aware_retrieval_drops_the_harmful_nearest_memory_for_a_useful_one(client, lessons):
    from service.integrations.mem0 import Mem0Credit

    memory, ids = lessons
    agent = client.create_agent("valued", kind="scored", credit="raw", retrieval="value_aware", gate={"test": "none"})
    credit = Mem0Credit(memory, client, agent.id, filters={"user_id": "team"}, k=2, search_options={"threshold": 0.0})
    found = credit.hits(HARMFUL)  # the harmful lesson is its own nearest memory
    assert found[0]["id"] == ids[HARMFUL] and len(found) == 3
    first = credit.search(HARMFUL)  # no value learnt yet: Mem0's top two, in its order
    assert [h["id"] for h in first] == [h["id"] for h in found[:2]]
    assert [h["memtrial"]["reason"] for h in first] == ["similarity", "similarity"]
    for t in range(8):
        picked = credit.search(HARMFUL)
        if ids[HARMFUL] not in [h["id"] for h in picked]:
            break
        settle_day(credit, client, agent.id, t, query=HARMFUL)
    third = found[2]["id"]
    assert ids[HARMFUL] not in [h["id"] for h in picked] and third in [h["id"] for h in picked], picked
    by_id = {h["id"]: h["memtrial"] for h in picked}
    assert by_id[third]["reason"] in ("value", "exploration")  # similarity alone would not pick it
    assert by_id[third]["similarity"] == found[2]["score"]  # Mem0's score is the similarity memtrial ranked
    answer = client.rank_experiences(
        agent.id, k=2, candidate_external_ids=[h["id"] for h in found], similarities=[h["score"] for h in found]
    )
    assert [item["external_id"] for item in answer["items"]] == [h["id"] for h in picked]


def test_langgraph_rank_node_puts_memtrials_picks_into_the_state_of_a_real_graph(client, agent):
    graph_module = pytest.importorskip("langgraph.graph", reason="the [langgraph] extra is not installed")
    from service.client import ServiceError
    from service.integrations.langgraph import RankState, rank_node

    client.add_experiences(agent["id"], [{"text": t, "external_id": f"m{i}"} for i, t in enumerate(MEMORIES)])
    found = {"candidates": ["m3", "m0", "m4"], "similarities": [0.2, 0.9, 0.5]}
    builder = graph_module.StateGraph(RankState)
    builder.add_node("search", lambda state: found)
    builder.add_node("rank", rank_node(client, agent["id"], k=2, by_external_id=True))
    builder.add_edge(graph_module.START, "search")
    builder.add_edge("search", "rank")
    builder.add_edge("rank", graph_module.END)
    state = builder.compile().invoke({})
    assert [item["external_id"] for item in state["ranked"]] == ["m0", "m4"]  # by the scores, not the given order
    answer = client.rank_experiences(
        agent["id"], k=2, candidate_external_ids=found["candidates"], similarities=found["similarities"]
    )
    assert state["ranked"] == [item.model_dump(mode="json") for item in answer["items"]]
    assert {item["reason"] for item in state["ranked"]} == {"similarity"}
    assert [item["similarity"] for item in state["ranked"]] == [0.9, 0.5]

    by_id = rank_node(client, agent["id"], k=8)  # fewer candidates than k: all of them, in the given order
    ids = [item["id"] for item in state["ranked"]]
    assert [item["id"] for item in by_id({"candidates": ids})["ranked"]] == ids
    assert by_id({"candidates": []}) == {"ranked": []}
    found["candidates"] = ["m3", "m0", "nowhere"]
    with pytest.raises(ServiceError) as refused:
        builder.compile().invoke({})
    assert refused.value.status == 422 and refused.value.field.startswith("candidate_external_ids")
    with pytest.raises(ValueError, match="k: the number of memories to pick must be an integer >= 1, got 0"):
        rank_node(client, agent["id"], k=0)


def test_langgraph_decision_graph_with_rank_k_plans_on_memtrials_picks_of_your_candidates(client, agent):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph

    client.add_experiences(agent["id"], [{"text": t, "external_id": f"m{i}"} for i, t in enumerate(MEMORIES)])
    calls = []
    graph = decision_graph(
        client,
        agent["id"],
        lambda task: calls.append(task) or draft_for(task.lessons),
        retrieve=lambda context: [("m1", 0.3), ("m2", 0.8), ("m4", 0.6)],
        by_external_id=True,
        rank_k=2,
    )
    decision_time, maturity = month(0)
    state = graph.invoke(
        {
            "decision_time": decision_time.isoformat(),
            "maturity": maturity.isoformat(),
            "context_text": "x",
            "options": {"horizon": 2},
        }
    )
    assert state["candidates"] == ["m1", "m2", "m4"] and state["similarities"] == [0.3, 0.8, 0.6]
    assert [item["external_id"] for item in state["ranked"]] == ["m2", "m4"]
    assert [r["external_id"] for r in state["plan"]["retrieved"]] == ["m2", "m4"]
    assert state["decision"]["status"] == "decided" and len(calls) == len(state["plan"]["subsets"])
    with pytest.raises(ValueError, match="rank_k: memtrial ranks the candidates retrieve finds; give retrieve too"):
        decision_graph(client, agent["id"], draft_for, rank_k=2)


def _graph_state(graph, t=0):
    decision_time, maturity = month(t)
    return graph.invoke(
        {"decision_time": decision_time.isoformat(), "maturity": maturity.isoformat(), "context_text": "x"}
    )


def test_langgraph_with_nothing_retrieved_drafts_without_memory_and_never_searches_the_agent(client, agent):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph

    client.add_experiences(agent["id"], [{"text": t, "external_id": f"m{i}"} for i, t in enumerate(MEMORIES)])
    for rank_k in (None, 2):
        graph = decision_graph(
            client, agent["id"], lambda task: draft_for(task.lessons), retrieve=lambda context: [], rank_k=rank_k
        )
        state = _graph_state(graph)
        assert state["plan"]["retrieved"] == [] and [s["mask"] for s in state["plan"]["subsets"]] == [0], rank_k
        assert state["plan"]["retrieval"] == "client" and state["decision"]["status"] == "decided"


def test_langgraph_input_without_its_context_or_a_retriever_answering_none_is_refused_naming_it(client, agent):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph

    before = client.list_decisions(agent["id"])
    for retrieve, rank_k in ((lambda context: [], None), (None, None), (lambda context: [], 2)):
        graph = decision_graph(
            client, agent["id"], lambda task: draft_for(task.lessons), retrieve=retrieve, rank_k=rank_k
        )
        decision_time, maturity = month(0)
        with pytest.raises(ValueError, match=r"^context_text: the graph's input must hold it"):
            graph.invoke({"decision_time": decision_time.isoformat(), "maturity": maturity.isoformat()})
    for rank_k in (None, 2):
        graph = decision_graph(
            client, agent["id"], lambda task: draft_for(task.lessons), retrieve=lambda c: None, rank_k=rank_k
        )
        with pytest.raises(ValueError, match=r"^retrieve: a list of ids or \(id, similarity\) pairs, got None"):
            _graph_state(graph)
    assert client.list_decisions(agent["id"]) == before  # nothing planned


def test_langgraph_own_retrieval_plans_on_the_others_once_one_is_quarantined(client):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from service.integrations.langgraph import decision_graph

    agent = client.create_agent("graph-curated", kind="scored", credit="raw", quarantine=SIGN_TEST)
    names = [f"l{i}" for i in range(len(LESSONS))]
    client.add_experiences(agent.id, [{"text": t, "external_id": n} for n, t in zip(names, LESSONS, strict=True)])
    for t in range(40):  # plan on all three until the harmful lesson is quarantined
        when = DAY_ZERO + dt.timedelta(days=t)
        plan = client.create_decision(
            agent.id, when, when + dt.timedelta(hours=1), QUESTION, retrieved_external_ids=names
        )
        client.submit_drafts(agent.id, plan.decision_id, [forecast(s.texts) for s in plan.subsets])
        client.settle(
            agent.id, plan.decision_id, outcome=1.0, rule="abs_error", settled_at=when + dt.timedelta(hours=1)
        )
        if client.list_experiences(agent.id, status="quarantined")["items"]:
            break
    [quarantined] = [e.external_id for e in client.iter_experiences(agent.id, status="quarantined")]
    assert quarantined == names[list(LESSONS).index(HARMFUL)]
    graph = decision_graph(
        client,
        agent.id,
        lambda task: forecast(task.lessons),
        retrieve=lambda context: [(n, 1.0 - 0.1 * i) for i, n in enumerate(names)],  # pairs: their ids are used
        by_external_id=True,
    )
    state = graph.invoke(
        {
            "decision_time": (DAY_ZERO + dt.timedelta(days=60)).isoformat(),
            "maturity": (DAY_ZERO + dt.timedelta(days=60, hours=1)).isoformat(),
            "context_text": QUESTION,
        }
    )
    assert [r["external_id"] for r in state["plan"]["retrieved"]] == [n for n in names if n != quarantined]


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ({"candidates": "m1"}, "candidates: a list of ids, got the text 'm1'"),
        ({"candidates": ["m0", "m1"], "similarities": ["a", "b"]}, "similarities: similarities are numbers"),
        (
            {"candidates": ["m0", "m1"], "similarities": [float("nan"), 1.0]},
            "similarities: similarities must be finite",
        ),
        ({"candidates": 5}, "candidates: a list of ids, got 5"),
        ({"candidates": [None, "m1"]}, "candidates: ids are texts, got [None, 'm1']"),
        ({"candidates": ["m0", "m1"], "similarities": 0.5}, "similarities: similarities are a list of numbers"),
    ],
)
def test_langgraph_rank_node_refuses_candidates_and_scores_of_the_wrong_kind_naming_them(client, agent, state, words):
    from service.integrations.langgraph import rank_node

    client.add_experiences(agent["id"], [{"text": t, "external_id": f"m{i}"} for i, t in enumerate(MEMORIES)])
    with pytest.raises(ValueError) as refused:
        rank_node(client, agent["id"], k=2, by_external_id=True)(state)
    assert str(refused.value).startswith(words)


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ({"outcome": {"utilities": [0.1]}}, "decision_id: the settle node's state must hold it"),
        ({"decision_id": "d"}, "outcome: the settle node's state must hold it"),
        ({"decision_id": "d", "outcome": 1.0}, "outcome: the settle body's fields as a mapping, got 1.0"),
        ({"decision_id": "d", "outcome": {"result": 1}}, "outcome: ['result'] are no fields of a settlement"),
    ],
)
def test_langgraph_settle_node_refuses_a_state_without_what_it_settles_naming_it(client, agent, state, words):
    """A state without its decision or outcome, or an outcome that is no settle body, raised Python's own errors."""
    from service.integrations.langgraph import settle_node

    with pytest.raises(ValueError) as refused:
        settle_node(client, agent["id"])(state)
    assert str(refused.value).startswith(words)


@pytest.mark.slow  # a live server, Mem0 with the embedding model, LangGraph
def test_the_curation_guide_examples_run_against_a_live_service(tmp_path, mem0_memory_class):
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from live_server import Server

    guide = (ROOT / "docs" / "integrations-curation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
    assert len(blocks) == 2
    url = f"sqlite:///{tmp_path / 'guide.db'}"
    server = Server(url)
    try:
        env = {**os.environ, "MEMTRIAL_URL": server.url, "MEMTRIAL_API_KEY": make_tenant(url, "guide")}
        outputs = []
        for block in blocks:
            run = subprocess.run(
                [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
            )
            assert run.returncode == 0, run.stderr[-3000:]
            outputs.append(run.stdout)
    finally:
        server.stop()
    mem0_lines, graph_lines = (out.splitlines() for out in outputs)
    picked = sorted(line.rsplit(" ", 2)[0] for line in mem0_lines[:2])  # "text reason value"
    assert picked == sorted(text for text in LESSONS if text != HARMFUL), outputs[0]
    assert len(mem0_lines) == 3 and mem0_lines[-1].startswith(f"quarantined: {HARMFUL} ")
    assert graph_lines == ["[('m3', 'similarity'), ('m1', 'similarity')]", "['m3', 'm1'] decided"], outputs[1]
