"""Value-aware retrieval (method 4.12): the pure ranking, and the engine's retrieval and ``rank``."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from memtrial.curation import DEMOTION, Pick, Posterior, QuarantineConfig, RetrievalMode, rank
from memtrial.drafting.retrieval import top_k
from memtrial.engine.config import SCORED_DESIGN
from memtrial.engine.lifecycle import MemTrial
from memtrial.errors import ConfigError, InputError
from memtrial.trust.gate import GateConfig, GateTest
from tests.world import World, new_engine, paper_rule, run

# the state of a default engine after tests.world's run (fixtures/make_pre_curation_state.py), and the plans of
# a default engine retrieving by embedding, as written by the engine before value-aware retrieval and quarantine
# existed
PRE_CURATION_STATE = Path(__file__).resolve().parents[1] / "fixtures" / "pre_curation_state.json.gz"
CHAIN_KEYS = {"hash", "prev_hash", "log_head"}  # the trust log's hash chain: hashes of payloads that hold floats
DEFAULT_PLANS = [
    ("x8", "x11", "x5", "x2"),
    ("x10", "x8", "x4", "x2"),
    ("x7", "x5", "x2", "x3"),
    ("x4", "x2", "x5", "x7"),
    ("x5", "x4", "x2", "x7"),
]


def _embedded_plans(**settings) -> list[tuple[str, ...]]:
    engine = MemTrial(gamma=5.0, **paper_rule(**settings))  # the engine as it was before curation
    rng = np.random.default_rng(5)
    for i in range(12):
        engine.add_experience(f"x{i}", rng.normal(size=6))
    return [
        engine.plan(f"p{t}", t, t + 1, context_embedding=rng.normal(size=6), kind="scored").experience_ids
        for t in range(5)
    ]


def _posteriors(means, sds=None, n=5):
    sds = sds or [0.1] * len(means)
    return {f"e{i}": Posterior(m, s, n) for i, (m, s) in enumerate(zip(means, sds, strict=True))}


def _differences(now, before, path="") -> tuple[list[str], bool]:
    """Where two states differ, and whether every float is equal bit for bit.

    NumPy picks its vectorised code by what the CPU offers, so the same engine may write floats a few ulps apart
    on two machines (a hash of this state, pinned on one, failed on another): within 1e-9 relative is the same
    state. The chain's hashes cover those floats, so they must match only where every float does.
    """
    if isinstance(before, dict):
        if not isinstance(now, dict) or now.keys() != before.keys():
            return [f"{path}: keys {sorted(now) if isinstance(now, dict) else now!r} != {sorted(before)}"], False
        found, exact = [], True
        for key in before:
            if key in CHAIN_KEYS:
                continue
            more, same = _differences(now[key], before[key], f"{path}/{key}")
            found, exact = found + more, exact and same
        return found, exact
    if isinstance(before, list):
        if not isinstance(now, list) or len(now) != len(before):
            return [f"{path}: {now!r} != {before!r}"], False
        found, exact = [], True
        for i, (a, b) in enumerate(zip(now, before, strict=True)):
            more, same = _differences(a, b, f"{path}[{i}]")
            found, exact = found + more, exact and same
        return found, exact
    if isinstance(before, float) and isinstance(now, float):
        close = math.isclose(now, before, rel_tol=1e-9, abs_tol=1e-12)
        return ([] if close else [f"{path}: {now!r} != {before!r}"]), now == before
    return ([] if type(now) is type(before) and now == before else [f"{path}: {now!r} != {before!r}"]), True


def _chain_hashes(state, found=None) -> list[str]:
    found = [] if found is None else found
    if isinstance(state, dict):
        for key, value in state.items():
            found.extend([f"{key}={value}"] if key in CHAIN_KEYS else _chain_hashes(value, []))
    elif isinstance(state, list):
        for value in state:
            found.extend(_chain_hashes(value, []))
    return found


def test_default_engine_state_and_plans_are_those_before_curation():
    world = World(3, n_dates=30)
    engine = new_engine(k=4)
    run(engine, world, range(30))
    text = engine.to_json()
    before = json.loads(gzip.decompress(PRE_CURATION_STATE.read_bytes()))
    now = json.loads(text)
    found, exact = _differences(now, before)
    assert found == [], found[:10]
    assert engine.verify().ok  # the chain holds over this machine's floats
    if exact:  # the machine's floats are the fixture's: so is every hash of the chain
        assert _chain_hashes(now) == _chain_hashes(before)
    assert "curation" not in text and "quarantine" not in text and "retrieval" not in text
    assert _embedded_plans() == DEFAULT_PLANS


def test_value_aware_engine_at_zero_trust_plans_as_similarity():
    # the anytime gate has no score yet: omega = 0, the ranking is the similarity ranking
    assert _embedded_plans(retrieval="value_aware", gate=GateConfig(test=GateTest.ANYTIME)) == DEFAULT_PLANS


def test_rank_at_zero_omega_equals_top_k_bit_for_bit():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 12))
        vectors = rng.normal(size=(n, 5))
        vectors[rng.random(n) < 0.3] = vectors[0]  # ties keep the given order
        context = rng.normal(size=5)
        ids = [f"e{i}" for i in range(n)]
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(context)
        similarity = list(vectors @ context / norms)
        posteriors = _posteriors(list(rng.normal(size=n)), list(rng.random(n)))
        picks = rank(ids, similarity, posteriors, 0.0, 4)
        assert [p.experience_id for p in picks] == top_k(context, list(zip(ids, vectors, strict=True)), 4)
        assert all(p.reason is Pick.SIMILARITY for p in picks)


def test_rank_at_full_trust_prefers_a_valuable_experience_over_a_closer_one():
    picks = rank(["e0", "e1", "e2"], [0.9, 0.8, 0.7], _posteriors([-1.0, 0.0, 2.0]), 1.0, 2)
    assert [p.experience_id for p in picks] == ["e2", "e1"]
    assert [p.reason for p in picks] == [Pick.VALUE, Pick.SIMILARITY]
    assert picks[0].lower == pytest.approx(2.0 - 1.6448536269514722 * 0.1)  # the central 90% interval


def test_rank_picks_an_uncertain_experience_by_exploration():
    # e2 has the lowest mean but a wide posterior: only the optimism bonus brings it in
    posteriors = {"e0": Posterior(0.5, 0.01, 50), "e1": Posterior(0.2, 0.01, 50), "e2": Posterior(0.0, 2.0, 1)}
    picks = rank(["e0", "e1", "e2"], [0.5, 0.5, 0.4], posteriors, 1.0, 2, exploration=1.0)
    assert {p.experience_id: p.reason for p in picks} == {"e2": Pick.EXPLORATION, "e0": Pick.SIMILARITY}
    without = rank(["e0", "e1", "e2"], [0.5, 0.5, 0.4], posteriors, 1.0, 2, exploration=0.0)
    assert [p.experience_id for p in without] == ["e0", "e1"]


def test_rank_at_full_trust_puts_a_credibly_harmful_experience_below_every_other():
    # e0 is by far the closest (an attacker's bonus) but mean + z sd = -0.2 + 1.5 * 0.1 < 0 after 5 contributions
    posteriors = _posteriors([-0.2, 0.0, 0.0, 0.0])
    similarity = [3.0, 0.5, 0.4, -0.9]
    picks = rank(["e0", "e1", "e2", "e3"], similarity, posteriors, 1.0, 4)
    assert DEMOTION == 1.5 and [p.experience_id for p in picks] == ["e1", "e2", "e3", "e0"]
    three = rank(["e0", "e1", "e2", "e3"], similarity, posteriors, 1.0, 3)
    assert [p.reason for p in three] == [Pick.SIMILARITY, Pick.SIMILARITY, Pick.VALUE]
    assert [p.experience_id for p in rank(["e0", "e1", "e2", "e3"], similarity, posteriors, 1.0, 1, demotion=None)] == [
        "e0"
    ]
    # at a partial trust the push is a share omega of the span: e0 (3.0 - 0.3 * (3.9 + 2) - 0.3) falls to 0.93
    assert [p.experience_id for p in rank(["e0", "e1", "e2", "e3"], similarity, posteriors, 0.3, 4)][:2] == [
        "e0",
        "e1",
    ]


@pytest.mark.parametrize(
    ("posterior", "demoted"),
    [
        (Posterior(-0.2, 0.1, 2), True),
        (Posterior(-0.2, 0.1, 1), False),  # one contribution: not yet credible
        (Posterior(-0.2, None, 5), False),  # no noise scale yet
        (Posterior(-0.2, 0.2, 5), False),  # -0.2 + 1.5 * 0.2 >= 0: the interval reaches 0
    ],
)
def test_rank_demotes_only_a_value_whose_upper_bound_is_below_zero(posterior, demoted):
    posteriors = {"bad": posterior, "near": Posterior(0.0, 0.1, 5)}
    picks = rank(["bad", "near"], [3.0, 0.0], posteriors, 1.0, 1)
    assert (picks[0].experience_id == "near") == demoted


def test_rank_bad_demotion_is_rejected():
    with pytest.raises(ConfigError) as error:
        rank(["e0"], [1.0], _posteriors([0.0]), 1.0, 1, demotion=-1.0)
    assert str(error.value) == "demotion must be finite and >= 0 (or None), got -1.0"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((["e0", "e0"], [1.0, 1.0], 0.0, 1), "candidates must be distinct ids, got ['e0', 'e0']"),
        ((["e0"], [1.0, 2.0], 0.0, 1), "similarities must hold one score per candidate (1), got 2"),
        ((["e0"], [1.0], 1.5, 1), "omega must be in [0, 1], got 1.5"),
        ((["e0"], [float("nan")], 0.0, 1), "similarities must be finite"),
        (
            (["e0", "e1"], [1e308, -1e308], 0.0, 1),  # each finite, their range not: the terms would be NaN
            "similarities must span a finite range (the largest minus the smallest overflows)",
        ),
        ((["e9"], [1.0], 0.0, 1), "no posterior for candidates ['e9']"),
        (("e0", [1.0, 1.0], 0.0, 1), "candidates must be a sequence of experience ids, got 'e0'"),
        ((["e0"], ["1.0"], 0.0, 1), "similarities must be one number per candidate, got ['1.0']"),
        ((["e0"], [True], 0.0, 1), "similarities must be one number per candidate, got [True]"),
        ((["e0"], [[1.0]], 0.0, 1), "similarities must be one number per candidate, got [[1.0]]"),
    ],
)
def test_rank_bad_input_is_rejected(args, message):
    candidates, similarities, omega, k = args
    with pytest.raises(InputError) as error:
        rank(candidates, similarities, _posteriors([0.0]), omega, k)
    assert str(error.value) == message


def test_engine_rank_without_scores_keeps_the_given_order_and_leaves_quarantined_out():
    engine = MemTrial(gamma=5.0, retrieval=RetrievalMode.VALUE_AWARE, quarantine=QuarantineConfig(enabled=True))
    for name in ("a", "b", "c"):
        engine.add_experience(name)
    assert [p.experience_id for p in engine.rank(["c", "a", "b"], 2)] == ["c", "a"]
    engine.curator.force("c", None)  # as a replayed log would mark it
    picks = engine.rank(["c", "a", "b"], 2)
    assert [p.experience_id for p in picks] == ["a", "b"]
    assert [p.similarity for p in picks] == [-1.0, -2.0]
    with pytest.raises(InputError) as error:
        engine.rank(["a"], 1, similarities=[1.0, 2.0])
    assert str(error.value) == "similarities must hold one score per candidate (1), got 2"


def test_value_aware_engine_state_round_trips():
    engine = MemTrial(gamma=5.0, retrieval="value_aware")
    engine.add_experience("a")
    restored = MemTrial.from_json(engine.to_json())
    assert restored.config.retrieval is RetrievalMode.VALUE_AWARE
    assert restored.to_json() == engine.to_json()


def test_value_aware_engine_at_full_trust_retrieves_a_valuable_distant_experience():
    # without a gate omega = 1: after learning, the valuable but least similar experience is retrieved
    values = {"a": -0.5, "b": 0.0, "c": 0.0, "d": 0.0, "e": 0.0, "far": 1.0}
    rng = np.random.default_rng(7)
    context = np.array([1.0, 0.0, 0.0])
    engines = {
        mode: MemTrial(
            gamma=5.0,
            k=4,
            retrieval=mode,
            gate=GateConfig(test=GateTest.NONE),
            design=SCORED_DESIGN,
            quarantine=QuarantineConfig(),  # the retrieval alone: "a" stays retrievable
        )
        for mode in ("similarity", "value_aware")
    }
    for engine in engines.values():
        for i, name in enumerate(values):
            engine.add_experience(name, [1.0, 0.1 * i, 0.0] if name != "far" else [0.0, 1.0, 0.0])
    for t in range(40):
        retrieved = [str(e) for e in rng.choice(list(values), size=4, replace=False)]
        noise = rng.normal(0.0, 0.3, size=8)
        for engine in engines.values():
            plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
            engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
            utilities = [sum(values[e] for e in s) + noise[i] for i, s in enumerate(plan.subsets)]
            engine.settle_scored(f"d{t}", utilities=utilities)
    similar = engines["similarity"].plan("x", 100, 100, context_embedding=context, kind="scored")
    valued = engines["value_aware"].plan("x", 100, 100, context_embedding=context, kind="scored")
    assert "far" not in similar.experience_ids and "far" in valued.experience_ids
    assert "a" in similar.experience_ids and "a" not in valued.experience_ids
    picks = engines["value_aware"].rank(list(values), 4, similarities=[1.0, 0.99, 0.98, 0.97, 0.96, 0.0])
    assert {p.experience_id: p.reason for p in picks}["far"] is Pick.VALUE


def test_rank_reports_no_interval_for_a_point_posterior():
    picks = rank(
        ["tried", "untried"], [1.0, 0.5], {"tried": Posterior(0.1, 0.05, 9), "untried": Posterior(0.0, 0.0, 0)}, 1.0, 2
    )
    assert [(p.experience_id, p.lower is None, p.upper is None) for p in picks] == [
        ("tried", False, False),
        ("untried", True, True),
    ]


def test_an_untried_experience_reads_no_interval_while_the_learner_reads_every_value_as_equal():
    # pure-noise drafts: the learner estimates no spread between experiences (tau2 = 0), so its prior for an
    # experience without contributions is the point 0; a tried one's interval counts the uncertainty of tau2
    engine = MemTrial(gamma=5.0, k=4, retrieval=RetrievalMode.VALUE_AWARE, design=SCORED_DESIGN)
    names = [f"e{i}" for i in range(8)]
    for name in names:
        engine.add_experience(name)
    rng = np.random.default_rng(0)
    for t in range(30):
        retrieved = [str(e) for e in rng.choice(names, size=4, replace=False)]
        plan = engine.plan(f"d{t}", t, t, retrieved=retrieved, kind="scored")
        engine.decide_scored(f"d{t}", n_drafts=len(plan.masks))
        engine.settle_scored(f"d{t}", utilities=list(rng.normal(0.0, 0.3, size=len(plan.masks))))
    engine.add_experience("untried")
    assert engine.learner.fits_[engine.learner.selected_mode].model.tau2 == 0.0
    assert engine.posterior("untried") == (0.0, 0.0, 0)
    picks = {p.experience_id: p for p in engine.rank(["untried", "e0"], 2)}
    assert picks["untried"].lower is None and picks["untried"].upper is None and picks["untried"].n == 0
    tried = picks["e0"]
    assert tried.sd is not None and tried.sd > 0.0 and tried.lower is not None and tried.upper is not None
    assert tried.lower < tried.mean < tried.upper


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        ("plan", "retrieved", "retrieved must be a sequence of experience ids in rank order, got 'ab'"),
        ("plan_set", "retrieved", "retrieved must be a sequence of experience ids in rank order, got {'a'}"),
        ("rank_set", "candidate_ids", "candidate_ids must be a sequence of experience ids, got {'a'}"),
        ("plan_unknown", "retrieved", "retrieved: unknown experiences ['zz']"),
        ("rank_text", "similarities", "similarities must be one number per candidate, got ['0.5', 1, 2]"),
        ("rank_flag", "similarities", "similarities must be one number per candidate, got [True, 0.0, 1.0]"),
        ("rank_string", "similarities", "similarities must be one number per candidate, got '123'"),
        ("rank_nested", "similarities", "similarities must be one number per candidate, got [[1, 2], [3, 4], [5, 6]]"),
    ],
)
def test_an_engine_refuses_ids_and_scores_of_the_wrong_kind_naming_the_field(call, field, message):
    engine = MemTrial(gamma=5.0, retrieval=RetrievalMode.VALUE_AWARE)
    for name in ("a", "b", "ab"):
        engine.add_experience(name)
    before = engine.to_json()
    calls = {
        "plan": lambda: engine.plan("d", 0, 1, retrieved="ab", kind="scored"),  # not the ids "a" and "b"
        "plan_unknown": lambda: engine.plan("d", 0, 1, retrieved=["a", "zz"], kind="scored"),
        "plan_set": lambda: engine.plan("d", 0, 1, retrieved={"a"}, kind="scored"),
        "rank_set": lambda: engine.rank({"a"}, 1),
        "rank_text": lambda: engine.rank(["a", "b", "ab"], 2, similarities=["0.5", 1, 2]),
        "rank_flag": lambda: engine.rank(["a", "b", "ab"], 2, similarities=[True, 0.0, 1.0]),
        "rank_string": lambda: engine.rank(["a", "b", "ab"], 2, similarities="123"),
        "rank_nested": lambda: engine.rank(["a", "b", "ab"], 2, similarities=[[1, 2], [3, 4], [5, 6]]),
    }
    with pytest.raises(InputError) as error:
        calls[call]()
    assert (error.value.field, str(error.value)) == (field, message)
    assert engine.to_json() == before


def test_similarities_given_as_an_iterator_are_read_once():
    engine = MemTrial(gamma=5.0, design="half")  # a scored plan drafts its memory-free reference
    for name in "abc":
        engine.add_experience(name)
    picks = engine.rank(["a", "b", "c"], 2, similarities=(s for s in [0.1, 0.9, 0.5]))
    assert [p.experience_id for p in picks] == ["b", "c"]
    plan = engine.plan("d", 0, 1, candidates=["a", "b", "c"], similarities=map(float, [0.1, 0.9, 0.5]), kind="scored")
    assert set(plan.experience_ids) == {"a", "b", "c"}
