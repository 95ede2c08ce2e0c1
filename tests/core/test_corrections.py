"""Corrected outcomes: the engine relearns as if it had been settled with the corrected outcome from the start."""

import numpy as np
import pytest
from support import assert_snapshots_close, engine_snapshot
from world import paper_rule

from memtrial import MemTrial
from memtrial.errors import InputError, LifecycleError

EXPERIENCES = [f"e{i}" for i in range(6)]


def _engine(action: str, robust: bool) -> MemTrial:
    gate = (
        {"test": "anytime", "alpha": 0.05}
        if action == "dial"
        else {"test": "prequential", "alpha": 0.05, "min_scores": 3}
    )
    from memtrial.trust.gate import GateConfig

    engine = MemTrial(gamma=2.0, **paper_rule(action=action, gate=GateConfig(**gate), robust=robust))
    rng = np.random.default_rng(7)
    for experience in EXPERIENCES:
        engine.add_experience(experience, rng.normal(size=8))
    return engine


def _world(seed: int, n: int = 10):
    rng = np.random.default_rng(seed)
    retrieved = [list(rng.choice(EXPERIENCES, size=4, replace=False)) for _ in range(n)]
    drafts = [rng.dirichlet(np.ones(3), size=8) for _ in range(n)]
    prices = [np.cumprod(1 + rng.normal([0.01, 0.0, -0.01], 0.01, size=(5, 3)), axis=0) for _ in range(n)]
    return retrieved, drafts, prices


def _planted(plan, base: np.ndarray) -> np.ndarray:
    """Drafts that lean on the first asset (which drifts up) when e0 or e2 is in their subset, on the last when e1 is."""
    rows = []
    for subset, row in zip(plan.subsets, base, strict=True):
        lean = np.zeros(3)
        lean[0] += 0.4 * ("e0" in subset) + 0.2 * ("e2" in subset)
        lean[2] += 0.4 * ("e1" in subset)
        rows.append((row + lean) / (1.0 + lean.sum()))
    return np.array(rows)


def _run_portfolio(engine: MemTrial, world, wrong: dict[int, np.ndarray] | None = None) -> None:
    retrieved, drafts, prices = world
    for t in range(len(retrieved)):
        plan = engine.plan(f"d{t}", 2 * t, 2 * t + 1, retrieved=retrieved[t], n_assets=3)
        engine.decide(plan.decision_id, _planted(plan, drafts[t]))
        engine.settle(plan.decision_id, (wrong or {}).get(t, prices[t]))


@pytest.mark.parametrize("action", ["gate", "dial"])
@pytest.mark.parametrize("robust", [False, True])
def test_correcting_the_second_of_ten_portfolio_decisions_equals_settling_it_right_from_the_start(action, robust):
    world = _world(3)
    wrong = world[2][1] * np.array([1.0, 3.0, 0.5])  # a bad price feed for decision 1
    corrected, truthful = _engine(action, robust), _engine(action, robust)
    _run_portfolio(corrected, world, {1: wrong})
    _run_portfolio(truthful, world)
    before = engine_snapshot(corrected, EXPERIENCES)
    settlement = corrected.correct("d1", rel_prices=world[2][1], reason="the feed doubled SPY's close")
    assert before != engine_snapshot(corrected, EXPERIENCES)
    assert any(abs(v) > 1e-6 for v in truthful.values().values())  # the world teaches something
    assert_snapshots_close(engine_snapshot(corrected, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    np.testing.assert_allclose(
        settlement.draft_utilities, truthful.entries["d1"].settlement.draft_utilities, atol=1e-15
    )
    assert settlement.score == pytest.approx(truthful.entries["d1"].settlement.score, abs=1e-12)
    check = corrected.verify()
    assert check.ok and check.n_entries == truthful.verify().n_entries + 1
    last = corrected.history.log[-1]
    assert last.kind == "correction" and last.payload["reason"] == "the feed doubled SPY's close"
    superseded = corrected.history.log[last.payload["supersedes"]]
    assert superseded.kind == "score" and superseded.payload["date"] == "d1"  # the wrong score stays in the chain
    assert corrected.entries["d1"].corrections[0]["reason"] == "the feed doubled SPY's close"
    records = [r for r in corrected.records if r[0] == "d1"]
    assert records == [r for r in truthful.records if r[0] == "d1"]
    # correcting again with the same outcome changes nothing; a later settle or plan goes on as usual
    assert corrected.correct("d1", rel_prices=world[2][1], reason="again") is corrected.entries["d1"].settlement
    assert corrected.gate.log.length == check.n_entries


def _run_scored(engine: MemTrial, utilities: list[np.ndarray], wrong: dict[int, np.ndarray] | None = None) -> None:
    rng = np.random.default_rng(11)
    for t, row in enumerate(utilities):
        plan = engine.plan(
            f"s{t}", 2 * t, 2 * t + 1, retrieved=list(rng.choice(EXPERIENCES, size=4, replace=False)), kind="scored"
        )
        engine.decide_scored(plan.decision_id, vectors=rng.dirichlet(np.ones(3), size=8))
        if t % 2:
            engine.settle_scored(plan.decision_id, outcome=int(t % 3), rule="brier")
        else:
            engine.settle_scored(plan.decision_id, utilities=(wrong or {}).get(t, row))


@pytest.mark.parametrize("action", ["gate", "dial"])
def test_correcting_a_scored_decision_equals_settling_it_right_from_the_start(action):
    rng = np.random.default_rng(5)
    utilities = [rng.normal(size=8) for _ in range(10)]
    corrected, truthful = _engine(action, True), _engine(action, True)
    wrong_utilities = list(utilities)
    _run_scored(corrected, utilities, {2: utilities[2] * 1e5})
    _run_scored(truthful, utilities)
    corrected.correct("s2", utilities=utilities[2], reason="mis-graded")
    assert_snapshots_close(engine_snapshot(corrected, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    # a rule-settled decision is corrected with another outcome
    corrected.correct("s3", outcome=2, rule="brier", reason="the answer key was wrong")
    truthful_again = _engine(action, True)
    rng_state = np.random.default_rng(11)
    for t, row in enumerate(wrong_utilities):
        plan = truthful_again.plan(
            f"s{t}",
            2 * t,
            2 * t + 1,
            retrieved=list(rng_state.choice(EXPERIENCES, size=4, replace=False)),
            kind="scored",
        )
        truthful_again.decide_scored(plan.decision_id, vectors=rng_state.dirichlet(np.ones(3), size=8))
        if t % 2:
            truthful_again.settle_scored(plan.decision_id, outcome=2 if t == 3 else int(t % 3), rule="brier")
        else:
            truthful_again.settle_scored(plan.decision_id, utilities=row)
    assert_snapshots_close(engine_snapshot(corrected, EXPERIENCES), engine_snapshot(truthful_again, EXPERIENCES))
    assert corrected.verify().ok


def test_a_correction_needs_a_settled_decision_a_reason_and_the_decision_kinds_outcome():
    engine = _engine("gate", False)
    retrieved, drafts, prices = _world(1, 2)
    plan = engine.plan("d0", 0, 1, retrieved=retrieved[0], n_assets=3)
    engine.decide("d0", _planted(plan, drafts[0]))
    with pytest.raises(LifecycleError, match="not settled yet"):
        engine.correct("d0", rel_prices=prices[0], reason="early")
    engine.settle(plan.decision_id, prices[0])
    with pytest.raises(InputError, match="reason"):
        engine.correct("d0", rel_prices=prices[0] * 1.01, reason=" ")
    with pytest.raises(InputError, match="rel_prices"):
        engine.correct("d0", utilities=np.zeros(8), reason="wrong kind")


def _scores_in_force(log) -> dict[str, float | None]:
    """Each scored decision's score as the log says it stands, in the order of the score entries: a
    correction replaces its own decision's score and the later scores its replay changed (``rescored``)."""
    in_force: dict[str, float | None] = {}
    for entry in log:
        if entry.kind == "score":
            in_force[entry.payload["date"]] = entry.payload["score"]
        elif entry.kind == "correction":
            in_force[entry.payload["date"]] = entry.payload["score"]
            for decision_id, score in entry.payload["rescored"]:
                assert decision_id in in_force  # a decision scored before the correction
                in_force[decision_id] = score
    return in_force


@pytest.mark.parametrize("action", ["gate", "dial"])
def test_the_log_holds_every_score_the_gate_is_made_of_after_corrections(action):
    """A correction derives the later plans' predictions again, so later scores change: its log entry lists
    them, and folding the log (scores, then each correction's score and ``rescored``) gives exactly the
    gate's statistics, and the score each settlement shows. Before, the gate counted scores the log did not
    hold (a later decision's score changed sign, another gained one) and an auditor could not rebuild it."""
    from memtrial.trust.gate import make_gate

    world = _world(3)
    wrong = world[2][1] * np.array([1.0, 3.0, 0.5])
    engine = _engine(action, False)
    _run_portfolio(engine, world, {1: wrong, 4: wrong})
    engine.correct("d1", rel_prices=world[2][1] * np.array([1.0, 2.0, 0.8]), reason="a first, still wrong fix")
    engine.correct("d1", rel_prices=world[2][1], reason="the right closes")
    engine.correct("d4", rel_prices=world[2][4], reason="the same glitch")
    log = list(engine.history.log_entries())
    corrections = [entry for entry in log if entry.kind == "correction"]
    assert len(corrections) == 3 and sum(len(c.payload["rescored"]) for c in corrections) > 0  # later scores moved
    in_force = _scores_in_force(log)
    rebuilt = make_gate(engine.config.gate).statistics
    for score in in_force.values():
        if score is not None:
            rebuilt.add(score)
    assert rebuilt.to_dict() == engine.gate.statistics.to_dict()
    assert {d: engine.entries[d].settlement.score for d in in_force} == in_force
    assert engine.verify().ok
    # and the scores in force are those of an engine settled right from the start
    truthful = _engine(action, False)
    _run_portfolio(truthful, world)
    assert in_force == pytest.approx(_scores_in_force(truthful.history.log_entries()), abs=1e-12)


def test_a_correction_refused_after_pruning_leaves_the_engine_as_it_was_however_often_it_is_tried():
    # the replay needs the pruned decisions: refused, and neither the fallback's sums, the noise cost nor the
    # checkpoints lose the old outcome on the way (each retry used to take one more observation away)
    from memtrial.errors import StateError

    engine = _engine("dial", robust=False)
    retrieved, drafts, prices = _world(5, n=4)
    for t in range(4):
        if t == 3:
            engine.prune_settled()
        engine.plan(f"m{t}", 5 * t, 5 * t + 5, retrieved=retrieved[t], n_assets=3)
        engine.decide(f"m{t}", drafts[t])
        engine.settle(f"m{t}", prices[t])
    before = engine.to_json()
    for _ in range(3):
        with pytest.raises(StateError):
            engine.correct("m3", rel_prices=np.ones((5, 3)), reason="bad feed")
        assert engine.to_json() == before


def test_a_correction_refused_after_pruning_keeps_the_checkpoints_written_after_its_score():
    # m1 and m2 pruned before m0 settles; m3 to m6 write checkpoints after m0's score: the correction of m0
    # needs the pruned decisions, is refused, and the checkpoints stay (they were dropped before the refusal)
    from memtrial.engine.checkpoints import CheckpointPolicy
    from memtrial.errors import StateError

    engine = _engine("dial", robust=False)
    engine.checkpoint_policy = CheckpointPolicy(every=6, kept=10)
    retrieved, drafts, prices = _world(5, n=8)
    engine.plan("m0", 0, 5, retrieved=retrieved[0], n_assets=3)
    engine.decide("m0", drafts[0])
    for t in (1, 2):
        engine.plan(f"m{t}", 5 * t, 5 * t + 5, retrieved=retrieved[t], n_assets=3)
        engine.decide(f"m{t}", drafts[t])
        engine.settle(f"m{t}", prices[t])
    engine.prune_settled()
    engine.settle("m0", prices[0], at=15)
    for t in range(3, 7):
        engine.plan(f"m{t}", 5 * t + 10, 5 * t + 15, retrieved=retrieved[t], n_assets=3)
        engine.decide(f"m{t}", drafts[t])
        engine.settle(f"m{t}", prices[t])
    written = [c.position for c in engine.history.checkpoints]
    assert written and min(written) > engine.history.score_index("m0")
    before = engine.to_json()
    with pytest.raises(StateError):
        engine.correct("m0", rel_prices=np.ones((5, 3)), reason="bad feed")
    assert [c.position for c in engine.history.checkpoints] == written and engine.to_json() == before
