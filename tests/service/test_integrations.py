"""The Mem0 and LangGraph adapters, against the real packages (Mem0's open-source Memory with the shipped
embedder and a FAISS store; a compiled LangGraph graph) and the service over its HTTP interface."""

import datetime as dt
import os
import threading

import pytest
from support import UNIVERSE

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


def test_mem0_plans_on_exactly_mem0s_hits_mirrored_once_by_external_id(client, agent, memory):
    from service.integrations.mem0 import Mem0Credit

    credit = Mem0Credit(memory, client, agent["id"], filters={"user_id": "fund"}, search_options={"threshold": 0.0})
    query = "The central bank cut interest rates."
    hits = credit.search(query)
    assert len(hits) == 4
    plan = credit.plan(*month(0), query, horizon=2)
    assert plan.retrieval == "client"
    assert [r.external_id for r in plan.retrieved] == [h["id"] for h in hits]
    assert [r.text for r in plan.retrieved] == [h["memory"] for h in hits]
    assert client.list_experiences(agent["id"]).total == 4
    client.submit_drafts(agent["id"], plan.decision_id, [EVEN] * len(plan.subsets))
    client.settle(agent["id"], plan.decision_id, returns=RETURNS)
    again = credit.plan(*month(1), query, horizon=2)  # the same hits: nothing copied again
    assert [r.id for r in again.retrieved] == [r.id for r in plan.retrieved]
    assert client.list_experiences(agent["id"]).total == 4
    memory.update(hits[0]["id"], text="When the central bank cut rates, overweight TLT and GLD.")
    credit.plan(*month(2), query, horizon=2)  # a rewritten memory updates its mirror, keeping its id
    mirrored = client.list_experiences(agent["id"], external_id=hits[0]["id"]).items
    assert [(m.id, m.text) for m in mirrored] == [
        (plan.retrieved[0].id, "When the central bank cut rates, overweight TLT and GLD.")
    ]


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
    for value in values.values():
        meta = memory.get(value.external_id)["metadata"]
        assert meta["memtrial_value"] == value.mean and meta["memtrial_sd"] == value.sd
        assert (meta["memtrial_lower_90"], meta["memtrial_upper_90"]) == (value.lower, value.upper)
        assert meta["memtrial_p_positive"] == value.p_positive and meta["memtrial_uses"] == value.n == 3
        assert meta["memtrial_agent"] == agent["id"]
        assert memory.get(value.external_id)["memory"] == value.text  # the text is left as it was
    ranked = [m for m in credit.ranked() if (m.get("metadata") or {}).get("memtrial_value") is not None]
    assert [m["metadata"]["memtrial_value"] for m in ranked] == sorted((v.mean for v in values.values()), reverse=True)
    gone = next(iter(values.values())).external_id
    memory.delete(gone)
    assert credit.write_back().missing == [gone]


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
