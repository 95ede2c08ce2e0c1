"""A small self-contained world that shows the method at work.

Twelve experiences over four asset classes: three useful ones usually point at
next month's best class, three misleading ones at the worst, six neutral ones
at random classes. Each draft is ``(1 - beta) * base + beta * mean(pointers of
its subset)``, so only the useful experiences truly help. The world's class
returns are synthetic (regime-switching drift plus noise); the point is to
watch contributions, values and trust, not the market.

By default the engine is the default configuration (the trust dial on the anytime e-process, with the
quarantine of credibly harmful experiences: :class:`~memtrial.engine.config.EngineConfig`); ``gate`` names
the paper's binary gate under a test instead. The experiences a decision retrieves are four drawn at
random among those not in quarantine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memtrial.engine.config import PAPER_RULE
from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.trust.gate import GateConfig

__all__ = ["DemoResult", "run_demo"]

N_CLASSES = 4
HORIZON = 20


@dataclass(frozen=True, slots=True)
class DemoResult:
    """Outcome of :func:`run_demo` (utilities in percentage points per decision)."""

    n_decisions: int
    memtrial_pp: float
    equal_weight_pp: float
    draft_mean_pp: float
    open_rate: float
    values: dict[str, float]
    types: dict[str, int]
    engine: MemTrial
    mean_trust_weight: float | None = None  # the dial's mean weight on memory (None under the binary gate)
    full_trust_rate: float | None = None  # the share of decisions the dial played at weight 1
    quarantined: tuple[str, ...] = ()


def run_demo(n_decisions: int = 120, beta: float = 0.5, seed: int = 0, gate: str = "dial") -> DemoResult:
    """Run the world for ``n_decisions`` monthly decisions and summarise (``gate``: ``dial``, the default
    configuration, or the paper's binary gate under ``anytime``, ``prequential`` or ``none``)."""
    world, drafts_rng, market_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    types = {f"exp-{i:02d}": t for i, t in enumerate([1] * 3 + [0] * 6 + [-1] * 3)}
    if gate == "dial":
        engine = MemTrial(EngineConfig(gamma=5.0))
    else:  # the paper's binary gate under the chosen test, so the open rate is what the demo reports
        engine = MemTrial(EngineConfig(gamma=5.0, **{**PAPER_RULE, "gate": GateConfig(test=gate)}))  # type: ignore[arg-type]
    for experience_id in types:
        engine.add_experience(experience_id)
    equal = np.full(N_CLASSES, 1.0 / N_CLASSES)
    totals = {"memtrial": 0.0, "equal": 0.0, "mean": 0.0}
    n_open = 0
    weights: list[float] = []
    for t in range(n_decisions):
        daily = market_rng.normal(0.0003, 0.01, size=(HORIZON, N_CLASSES)) + market_rng.normal(
            0, 0.0015, size=N_CLASSES
        )
        rel = np.cumprod(1.0 + daily, axis=0)
        best, worst = int(np.argmax(rel[-1])), int(np.argmin(rel[-1]))
        pool = [e for e in types if e not in engine.quarantined]  # a quarantined experience is not retrieved
        retrieved = list(world.choice(pool, size=min(4, len(pool)), replace=False))
        plan = engine.plan(f"t{t:03d}", t, t + 1, retrieved=retrieved, reference=equal)
        if plan.dial is not None:
            weights.append(plan.dial.trust_weight)
        pointers = {}
        for experience_id in retrieved:
            kind = types[experience_id]
            informed = kind != 0 and world.random() < 0.7
            target = (best if kind > 0 else worst) if informed else int(world.integers(N_CLASSES))
            pointers[experience_id] = np.eye(N_CLASSES)[target]
        drafts = []
        for subset in plan.subsets:
            base = drafts_rng.dirichlet(np.full(N_CLASSES, 8.0))
            tilt = np.mean([pointers[e] for e in subset], axis=0) if subset else base
            drafts.append((1.0 - beta) * base + beta * tilt)
        decision = engine.decide(plan.decision_id, np.array(drafts))
        n_open += decision.trust.is_open
        settlement = engine.settle(plan.decision_id, rel)
        assert (
            settlement.chosen_utility is not None and settlement.mean_utility is not None
        )  # a portfolio settlement scores both
        totals["memtrial"] += settlement.chosen_utility
        totals["equal"] += settlement.reference_utility
        totals["mean"] += settlement.mean_utility
    scale = 100.0 / n_decisions
    return DemoResult(
        n_decisions=n_decisions,
        memtrial_pp=totals["memtrial"] * scale,
        equal_weight_pp=totals["equal"] * scale,
        draft_mean_pp=totals["mean"] * scale,
        open_rate=n_open / n_decisions,
        values={str(e): float(v) for e, v in engine.values().items()},
        types=types,
        engine=engine,
        mean_trust_weight=float(np.mean(weights)) if weights else None,
        full_trust_rate=float(np.mean(np.asarray(weights) >= 1.0)) if weights else None,
        quarantined=tuple(str(e) for e in engine.quarantined),
    )
