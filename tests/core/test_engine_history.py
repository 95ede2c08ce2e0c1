"""memtrial.engine.lifecycle over a long life: running state against recomputation from the whole history.

The engine keeps only running statistics; these tests recompute everything from
the full history it handed to its store (every contribution record, every
logged score) and require the same decisions and statistics, at 2,000
decisions, with a state whose size does not grow.
"""

import json

import numpy as np
import pytest
from world import World, new_engine, run

from memtrial.engine.history import InMemoryHistory
from memtrial.engine.lifecycle import MemTrial
from memtrial.records import Action
from memtrial.trust.gate import GateConfig, GateTest, anytime_log_wealth, prequential_p_values
from memtrial.values import EmpiricalBayesLearner, LearnerMode

N_DECISIONS = 2000


@pytest.fixture(scope="module")
def world():
    return World(seed=21, n_dates=N_DECISIONS, beta=0.5)


def compact_size(engine: MemTrial) -> int:
    return len(engine.to_json(history=False))


@pytest.mark.parametrize("test", ["prequential", "anytime"])
def test_two_thousand_decisions_equal_a_recomputation_from_the_whole_history(world, test):
    engine = new_engine(gate=GateConfig(test=test))
    sizes = {}
    decisions = []
    for stop in (100, 1000, N_DECISIONS):
        decisions += run(engine, world, range(len(decisions), stop))
        sizes[stop] = compact_size(engine)
        scores = [
            e.payload["score"] for e in engine.history.log if e.kind == "score" and e.payload["score"] is not None
        ]
        statistics = engine.gate.statistics
        assert statistics.n_scored == len(scores)
        if test == "prequential":
            assert (
                statistics.p_value() == prequential_p_values(scores)[-1]
            )  # running sums = the cumulative sums, bit for bit
        else:
            assert statistics.log_e_value() == anytime_log_wealth(scores)[-1]
        assert statistics.mean_score == pytest.approx(np.mean(scores), rel=1e-12)
        batch = EmpiricalBayesLearner("auto").fit(engine.records)
        for experience_id in engine.experiences:
            for mode in (LearnerMode.IDENTITY, LearnerMode.CONTENT):
                assert engine.learner.predict(experience_id, mode) == pytest.approx(
                    batch.predict(experience_id, mode), rel=1e-9, abs=1e-15
                )
            assert engine.learner.count(experience_id) == batch.count(experience_id)
    assert len(decisions) == N_DECISIONS
    assert engine.verify().ok and engine.verify().n_entries == 2 * N_DECISIONS - 2  # the last two are not settled yet
    # the running state does not grow with the number of decisions (digits of the numbers aside)
    assert sizes[N_DECISIONS] <= 1.05 * sizes[100]
    assert any(d.action is Action.SUBSET for d in decisions), "the gate never opened: the test checks too little"


def test_an_engine_restored_from_its_compact_state_and_store_continues_identically(world):
    engine = new_engine(gate=GateConfig(test="anytime"))
    run(engine, world, range(300))
    compact = engine.to_json(history=False)
    store = InMemoryHistory.from_dict(json.loads(json.dumps(engine.history.to_dict())))
    resumed = MemTrial.from_json(compact, history=store)
    first = run(engine, world, range(300, 500))
    second = run(resumed, world, range(300, 500))
    assert [d.to_dict() for d in first] == [d.to_dict() for d in second]
    assert resumed.to_json() == engine.to_json()


def test_the_log_goes_to_the_store_entry_by_entry():
    received = []

    class Store(InMemoryHistory):
        def append_log(self, entry):
            received.append(entry.index)
            super().append_log(entry)

    engine = MemTrial(gamma=5.0, history=Store())
    for experience_id in ("a", "b", "c", "d"):
        engine.add_experience(experience_id)
    world = World(seed=2, n_dates=6)
    world_ids = dict(zip("abcd", ("e00", "e03", "e06", "e09"), strict=True))
    for t in range(6):
        plan = engine.plan(f"d{t}", t, t + 0.5, retrieved=list("abcd"), n_assets=4)
        assert received[-1] == engine.gate.log.length - 1
        engine.decide(plan.decision_id, world.drafts(t, [tuple(world_ids[e] for e in s) for s in plan.subsets]))
        engine.settle(plan.decision_id, world.rel[t], at=t + 1)
    assert received == list(range(12))
    assert engine.gate.state_dict()["log_length"] == 12


def test_a_compact_state_without_its_store_refuses_to_act():
    engine = new_engine()
    restored = MemTrial.from_json(engine.to_json(history=False))
    with pytest.raises(Exception, match="history lives in an external store that is not attached"):
        restored.plan("d", 0, 1, retrieved=["e00", "e01"], n_assets=4)


def test_a_version_one_state_is_upgraded_with_its_history(world):
    engine = new_engine(gate=GateConfig(test=GateTest.PREQUENTIAL))
    run(engine, world, range(60))
    state = engine.to_dict()
    history = state["history"]
    scores = [
        e["payload"]["score"] for e in history["log"] if e["kind"] == "score" and e["payload"]["score"] is not None
    ]
    v1 = {
        "embeddings_included": True,
        "version": 1,
        "config": {k: v for k, v in state["config"].items() if k != "diagnostics"},
        "gate_hash": state["gate_hash"],
        "clock": state["clock"],
        "experiences": state["experiences"],
        "entries": history["entries"],
        "records": history["records"],
        "auto_scores": {"identity": [], "content": []},
        "gate": {"pending": [], "scores": scores, "score_dates": [], "scored_dates": [], "log": history["log"]},
        "fallback": state["fallback"],
    }
    upgraded = MemTrial.from_dict(v1)
    assert upgraded.verify().ok
    assert upgraded.gate.decision() == engine.gate.decision()
    for experience_id in engine.experiences:
        assert upgraded.learner.predict(experience_id, "identity") == pytest.approx(
            engine.learner.predict(experience_id, "identity"), rel=1e-12, abs=1e-15
        )


def test_a_dropped_engine_is_freed_at_once_without_the_garbage_collector():
    """No reference cycle keeps an engine alive: a worker's evicted engines free their memory at once."""
    import gc
    import weakref

    import numpy as np

    from memtrial import EngineConfig, MemTrial

    rng = np.random.default_rng(0)
    engine = MemTrial(EngineConfig(investor="balanced"))
    for i in range(6):
        engine.add_experience(f"e{i}", rng.normal(size=8))
    for t in range(3):
        plan = engine.plan(f"d{t}", time=t, maturity=t + 1, retrieved=["e0", "e1", "e2", "e3"], n_assets=3)
        engine.decide(f"d{t}", rng.dirichlet(np.ones(3), size=len(plan.subsets)))
        engine.settle(f"d{t}", np.cumprod(1 + rng.normal(0, 0.01, size=(5, 3)), axis=0), at=t + 1)
    restored = MemTrial.from_json(engine.to_json())
    restored.values()
    gc.disable()
    try:
        dropped = weakref.ref(restored)
        del restored
        assert dropped() is None
    finally:
        gc.enable()


def test_the_engines_entries_and_records_cannot_be_edited_behind_its_back():
    """``engine.entries`` and ``engine.records`` handed out the history's own dict and list: a caller's
    ``records.clear()`` or ``entries.pop(...)`` changed what the engine settles, corrects and saves."""
    engine = new_engine()
    run(engine, World(seed=3, n_dates=6), range(6))
    saved, n_records = engine.to_json(), len(engine.records)
    assert n_records > 0 and isinstance(engine.records, tuple)
    first = next(iter(engine.entries))
    with pytest.raises(AttributeError):
        engine.entries.pop(first)  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        engine.entries[first] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        engine.records.clear()  # type: ignore[attr-defined]
    assert engine.to_json() == saved and len(engine.records) == n_records
    assert engine.entries[first] is engine.memory_history().entries[first]  # a view: the same entries, read
