"""Bring-your-own candidates (method 4.12): a plan that picks k of the client's candidates itself, and the
retrieval and quarantine settings changed mid-life."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memtrial.curation import QuarantineConfig, RetrievalMode
from memtrial.drafting.retrieval import cosine_similarities
from memtrial.engine.lifecycle import MemTrial
from memtrial.errors import ConfigError, InputError
from memtrial.trust.gate import GateConfig, GateTest
from memtrial.trust.log import LogKind

NAMES = [f"x{i}" for i in range(8)]


def _engine(**settings) -> MemTrial:
    settings.setdefault("design", "half")  # scored plans: the even half drafts the memory-free reference
    engine = MemTrial(gamma=5.0, **settings)
    rng = np.random.default_rng(3)
    for name in NAMES:
        engine.add_experience(name, rng.normal(size=5))
    return engine


def _snapshot(engine: MemTrial) -> str:
    return engine.to_json()


def test_plan_with_candidates_picks_the_k_most_similar_as_retrieval_by_embedding_does():
    context = np.random.default_rng(9).normal(size=5)
    by_embedding = _engine().plan("d", 0, 1, context_embedding=context, kind="scored")
    engine = _engine()
    ids, similarity = cosine_similarities(context, [(e, x.embedding) for e, x in engine.experiences.items()])
    plan = engine.plan("d", 0, 1, candidates=ids, similarities=list(similarity), kind="scored")
    assert plan.experience_ids == by_embedding.experience_ids
    assert len(plan.experience_ids) == engine.config.k


def test_plan_with_candidates_without_similarities_keeps_the_given_order():
    plan = _engine().plan("d", 0, 1, candidates=["x5", "x1", "x7", "x0", "x3"], kind="scored")
    assert plan.experience_ids == ("x5", "x1", "x7", "x0")


def test_plan_with_fewer_candidates_than_k_plans_on_all_of_them():
    plan = _engine(k=4).plan("d", 0, 1, candidates=["x2", "x6"], similarities=[0.1, 0.9], kind="scored")
    assert plan.experience_ids == ("x6", "x2")


def test_plan_with_candidates_leaves_quarantined_ones_out():
    engine = _engine(quarantine=QuarantineConfig(enabled=True))
    engine.curator.force("x5", None)  # as a replayed quarantine entry marks it
    plan = engine.plan("d", 0, 1, candidates=["x5", "x1", "x7", "x0", "x3"], kind="scored")
    assert plan.experience_ids == ("x1", "x7", "x0", "x3")


def test_value_aware_plan_with_candidates_and_no_trust_evidence_equals_the_similarity_plan():
    # the anytime gate has no score yet: omega = 0
    similarities = [0.3, 0.9, -0.2, 0.5, 0.5, 0.1, 0.8, 0.0]
    plans = {
        mode: _engine(retrieval=mode, gate=GateConfig(test=GateTest.ANYTIME)).plan(
            "d", 0, 1, candidates=NAMES, similarities=similarities, kind="scored"
        )
        for mode in RetrievalMode
    }
    assert plans[RetrievalMode.VALUE_AWARE].experience_ids == plans[RetrievalMode.SIMILARITY].experience_ids
    assert plans[RetrievalMode.SIMILARITY].experience_ids == ("x1", "x6", "x3", "x4")


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"candidates": ["x1", "x1"]}, "candidates", "candidates must be distinct ids, repeated: ['x1']"),
        ({"candidates": ["x1", "nope"]}, "candidates", "candidates: unknown experiences ['nope']"),
        (
            {"candidates": ["x1", "x2"], "similarities": [1.0]},
            "similarities",
            "similarities must hold one score per candidate (2), got 1",
        ),
        (
            {"candidates": ["x1", "x2"], "similarities": [1.0, float("nan")]},
            "similarities",
            "similarities must be finite",
        ),
        (
            {"retrieved": ["x1"], "similarities": [1.0]},
            "similarities",
            "similarities score candidates: give them with candidates",
        ),
        (
            {"retrieved": ["x1"], "candidates": ["x2"]},
            "candidates",
            "give exactly one of retrieved, context_embedding or candidates, got ['retrieved', 'candidates']",
        ),
        ({}, "retrieved", "give exactly one of retrieved, context_embedding or candidates, got none"),
    ],
)
def test_plan_with_bad_candidates_names_the_field_and_plans_nothing(arguments, field, message):
    engine = _engine()
    before = _snapshot(engine)
    with pytest.raises(InputError) as error:
        engine.plan("d", 0, 1, kind="scored", **arguments)
    assert (error.value.field, str(error.value)) == (field, message)
    assert engine.history.get("d") is None and _snapshot(engine) == before


def test_plan_and_rank_refuse_a_retired_candidate():
    engine = _engine()
    engine.retire_experience("x3")
    with pytest.raises(InputError) as error:
        engine.plan("d", 0, 1, candidates=["x1", "x3"], kind="scored")
    assert str(error.value) == "candidates: experiences ['x3'] are retired and cannot be retrieved"
    with pytest.raises(InputError) as error:
        engine.rank(["x3"], 1)
    assert error.value.field == "candidate_ids"


def test_retrieval_changed_mid_life_is_logged_and_survives_the_state():
    engine = _engine(retrieval="similarity")
    entry = engine.change_settings({"retrieval": "value_aware"})
    assert entry is not None and entry.kind == LogKind.SETTINGS
    assert entry.payload["changes"] == {"retrieval": {"old": "similarity", "new": "value_aware"}}
    restored = MemTrial.from_json(engine.to_json())
    assert restored.config.retrieval is RetrievalMode.VALUE_AWARE
    assert restored.verify().ok


def test_quarantine_turned_on_and_off_mid_life_is_logged_as_json_and_the_book_follows():
    engine = _engine(quarantine=QuarantineConfig())
    assert engine.curator is None
    entry = engine.change_settings({"quarantine": {"enabled": True, "level": 0.2}})
    assert entry is not None
    change = entry.payload["changes"]["quarantine"]
    assert change == {
        "old": QuarantineConfig().to_dict(),
        "new": QuarantineConfig(enabled=True, level=0.2).to_dict(),
    }
    json.dumps(entry.payload)  # the log's payloads are JSON
    assert engine.curator is not None and engine.curator.config.level == 0.2
    engine.curator.force("x1", None)
    restored = MemTrial.from_json(engine.to_json())
    assert restored.quarantined == ("x1",) and restored.config.quarantine.level == 0.2
    engine.change_settings({"quarantine": {"level": 0.1}})
    assert engine.quarantined == ("x1",) and engine.curator.config.level == 0.1
    engine.change_settings({"quarantine": {"enabled": False}})
    assert engine.curator is None and engine.quarantined == ()
    assert engine.verify().ok


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"quarantine": {"level": 1.5}}, "quarantine.level"),
        ({"quarantine": {"colour": 1}}, "quarantine.colour"),
        ({"retrieval": "nearest"}, "retrieval"),
    ],
)
def test_a_bad_curation_setting_names_the_field_and_changes_nothing(changes, field):
    engine = _engine()
    before = _snapshot(engine)
    with pytest.raises(ConfigError) as error:
        engine.change_settings(changes)
    assert error.value.field == field
    assert _snapshot(engine) == before


def test_a_correction_replays_the_quarantine_book_only_from_where_it_was_turned_on():
    values = {"bad": -1.0, "g1": 0.3, "g2": 0.3, "g3": 0.3}
    engine = MemTrial(gamma=5.0, design="half", quarantine=QuarantineConfig())
    for name in values:
        engine.add_experience(name)
    rng = np.random.default_rng(0)

    def trial(t: int) -> None:
        plan = engine.plan(f"d{t}", t, t, retrieved=list(values), kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        utilities = [sum(values[e] for e in s) + rng.normal(0.0, 0.05) for s in plan.subsets]
        engine.settle_scored(f"d{t}", utilities=utilities)

    for t in range(10):
        trial(t)
    engine.change_settings({"quarantine": {"enabled": True, "level": 0.01}})
    for t in range(10, 13):
        trial(t)
    book = engine.curator.to_dict()
    assert book["evidence"] and engine.quarantined == ()  # three trials are not enough evidence at 0.01
    engine.correct("d2", reason="mis-graded", utilities=[0.0] * 8)  # a decision before the quarantine was on
    assert engine.curator.to_dict() == book and engine.quarantined == ()
    assert engine.verify().ok
