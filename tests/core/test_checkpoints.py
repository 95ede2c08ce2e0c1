"""State checkpoints: a correction replayed from a checkpoint equals one replayed from the first decision,
and equals an engine settled right from the start, with plans awaiting their score at the correction."""

import numpy as np
import pytest
from support import assert_snapshots_close, engine_snapshot
from world import paper_rule

from memtrial import MemTrial
from memtrial.engine.checkpoints import Checkpoint, CheckpointPolicy
from memtrial.engine.history import InMemoryHistory
from memtrial.errors import ConfigError
from memtrial.trust.gate import GateConfig

EXPERIENCES = [f"e{i}" for i in range(8)]
LAG = 4  # a decision settles LAG steps after its plan: LAG plans await their score at any time
NEVER = CheckpointPolicy(every=10**9)  # no checkpoint: every correction replays from the first decision


class CountingHistory(InMemoryHistory):
    """An in-memory history that remembers where each replay started."""

    def __init__(self) -> None:
        super().__init__()
        self.replay_starts: list[int] = []

    def log_events(self, start=0):
        self.replay_starts.append(start)
        return super().log_events(start)


def _engine(policy: CheckpointPolicy, learner: str = "auto") -> MemTrial:
    engine = MemTrial(
        gamma=2.0,
        learner=learner,
        history=CountingHistory(),
        **paper_rule(gate=GateConfig(test="prequential", alpha=0.05, min_scores=3)),
    )
    engine.checkpoint_policy = policy
    rng = np.random.default_rng(7)
    for experience in EXPERIENCES:
        engine.add_experience(experience, rng.normal(size=8))
    return engine


def _world(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    retrieved = [list(rng.choice(EXPERIENCES, size=4, replace=False)) for _ in range(n)]
    drafts = [rng.dirichlet(np.ones(3), size=8) for _ in range(n)]
    prices = [np.cumprod(1 + rng.normal([0.01, 0.0, -0.01], 0.01, size=(5, 3)), axis=0) for _ in range(n)]
    return retrieved, drafts, prices


def _planted(plan, base: np.ndarray) -> np.ndarray:
    rows = []
    for subset, row in zip(plan.subsets, base, strict=True):
        lean = np.zeros(3)
        lean[0] += 0.4 * ("e0" in subset) + 0.2 * ("e2" in subset)
        lean[2] += 0.4 * ("e1" in subset)
        rows.append((row + lean) / (1.0 + lean.sum()))
    return np.array(rows)


def _run(engine: MemTrial, world, wrong=None, corrections=None, steps=None) -> None:
    """Plan decision t at step t and settle it at step t + LAG; ``corrections``: step -> (t, prices) corrected then."""
    retrieved, drafts, prices = world
    n = len(retrieved)
    for step in range(n + LAG if steps is None else steps):
        if step < n:
            plan = engine.plan(f"d{step}", 2 * step, 2 * (step + LAG), retrieved=retrieved[step], n_assets=3)
            engine.decide(plan.decision_id, _planted(plan, drafts[step]))
        settled = step - LAG
        if 0 <= settled < n:
            engine.settle(f"d{settled}", (wrong or {}).get(settled, prices[settled]))
        for t, right in (corrections or {}).get(step, []):
            engine.correct(f"d{t}", rel_prices=right, reason="the feed was wrong")


@pytest.mark.parametrize("learner", ["auto", "identity"])
@pytest.mark.parametrize("corrected", [3, 33])
def test_correcting_from_a_checkpoint_equals_correcting_by_full_replay(learner, corrected):
    world = _world(40)
    wrong = {corrected: world[2][corrected] * np.array([1.0, 3.0, 0.5])}
    from_checkpoint, from_start = _engine(CheckpointPolicy(every=6, kept=4), learner), _engine(NEVER, learner)
    for engine in (from_checkpoint, from_start):
        _run(engine, world, wrong)
    first = from_checkpoint.correct(f"d{corrected}", rel_prices=world[2][corrected], reason="bad feed")
    second = from_start.correct(f"d{corrected}", rel_prices=world[2][corrected], reason="bad feed")
    assert_snapshots_close(engine_snapshot(from_checkpoint, EXPERIENCES), engine_snapshot(from_start, EXPERIENCES))
    assert first.score == pytest.approx(second.score, abs=1e-12)
    np.testing.assert_allclose(list(first.values.values()), list(second.values.values()), rtol=0, atol=1e-12)
    assert from_start.history.replay_starts == [0]
    start = from_checkpoint.history.replay_starts[0]
    assert (start > 0) == (corrected == 33)  # the kept checkpoints reach back about 12 decisions
    assert from_checkpoint.verify().ok


def test_a_correction_while_plans_await_their_score_equals_settling_right_from_the_start():
    world = _world(30)
    t = 10
    wrong = {t: world[2][t] * np.array([1.0, 3.0, 0.5])}
    corrected, truthful = _engine(CheckpointPolicy(every=6, kept=4)), _engine(NEVER)
    # corrected three steps after its settlement, while decisions planned after that (which it changes) await theirs
    _run(corrected, world, wrong, corrections={t + LAG + 3: [(t, world[2][t])]})
    _run(truthful, world)
    assert corrected.gate.log.length == truthful.gate.log.length + 1
    assert_snapshots_close(engine_snapshot(corrected, EXPERIENCES), engine_snapshot(truthful, EXPERIENCES))
    # and a later correction of a recent decision, replayed from a checkpoint the first correction wrote
    later = 26
    again = corrected.correct(f"d{later}", rel_prices=world[2][later] * 1.02, reason="late fix")
    full = _engine(NEVER)
    _run(full, world, corrections={t + LAG + 3: [(t, world[2][t])]})
    reference = full.correct(f"d{later}", rel_prices=world[2][later] * 1.02, reason="late fix")
    assert corrected.history.replay_starts[-1] > 2 * (t + LAG + 3)
    assert_snapshots_close(engine_snapshot(corrected, EXPERIENCES), engine_snapshot(full, EXPERIENCES))
    assert again.score == pytest.approx(reference.score, abs=1e-12)


def test_the_engine_keeps_the_newest_checkpoints_only_and_restores_them():
    engine = _engine(CheckpointPolicy(every=5, kept=3))
    world = _world(40)
    _run(engine, world)
    positions = [c.position for c in engine.history.checkpoints]
    assert len(positions) == 3 and positions == sorted(positions)
    assert positions[-1] == engine.checkpointed_at and engine.gate.log.length - positions[-1] < 5 + 2
    restored = MemTrial.from_json(engine.to_json())
    assert restored.checkpointed_at == engine.checkpointed_at
    assert [c.to_dict() for c in restored.history.checkpoints] == [c.to_dict() for c in engine.history.checkpoints]
    # the policy set by hand travels with the state: the restored engine goes on writing checkpoints as the original
    assert restored.checkpoint_policy == CheckpointPolicy(every=5, kept=3)
    for each in (engine, restored):  # a correction replays and writes checkpoints on its way
        each.correct("d12", rel_prices=world[2][12] * 1.01, reason="late fix")
    assert restored.to_json() == engine.to_json()
    # a state with the default policy is written as before, without one
    assert "checkpoint_policy" not in MemTrial(gamma=2.0, **paper_rule()).to_dict()


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"every": 0}, "checkpoint every must be an int >= 1, got 0"), ({"kept": 1.5}, "checkpoint kept must be an int")],
)
def test_a_checkpoint_policy_outside_its_bounds_is_refused_naming_the_setting(settings, message):
    with pytest.raises(ConfigError, match=message):
        CheckpointPolicy(**settings)


def test_a_checkpoint_round_trips_through_its_dict():
    checkpoint = Checkpoint(12, {"statistics": {}}, {"n_scored": 1}, {"d3": {"predictions": [["e1", 0.5]]}})
    assert Checkpoint.from_dict(checkpoint.to_dict()) == checkpoint
