"""A small planted world that drives the engine in tests (four asset classes, monthly)."""

from __future__ import annotations

import numpy as np

from memtrial.engine.config import PAPER_RULE
from memtrial.engine.lifecycle import MemTrial

N_ASSETS = 4
HORIZON = 20
TYPES = {f"e{i:02d}": t for i, t in enumerate([1] * 3 + [0] * 6 + [-1] * 3)}


class World:
    """Precomputed prices, retrievals and draft noise, so runs are exactly repeatable."""

    def __init__(self, seed: int, n_dates: int = 60, beta: float = 0.5) -> None:
        market, world, drafts = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
        self.n_dates, self.beta = n_dates, beta
        self.rel = [
            np.cumprod(
                1 + market.normal(0.0003, 0.01, size=(HORIZON, N_ASSETS)) + market.normal(0, 0.002, size=N_ASSETS),
                axis=0,
            )
            for _ in range(n_dates)
        ]
        ids = list(TYPES)
        self.retrieved = [list(world.choice(ids, size=4, replace=False)) for _ in range(n_dates)]
        self.informed = world.random(size=(n_dates, len(ids))) < 0.7
        self.random_class = world.integers(N_ASSETS, size=(n_dates, len(ids)))
        self.base = drafts.dirichlet(np.full(N_ASSETS, 8.0), size=(n_dates, 16))

    def pointer(self, t: int, experience_id: str) -> np.ndarray:
        index = list(TYPES).index(experience_id)
        kind = TYPES[experience_id]
        if kind and self.informed[t, index]:
            target = int(np.argmax(self.rel[t][-1])) if kind > 0 else int(np.argmin(self.rel[t][-1]))
        else:
            target = int(self.random_class[t, index])
        return np.eye(N_ASSETS)[target]

    def drafts(self, t: int, subsets) -> np.ndarray:
        rows = []
        for i, subset in enumerate(subsets):
            tilt = np.mean([self.pointer(t, e) for e in subset], axis=0) if subset else self.base[t, i]
            rows.append((1 - self.beta) * self.base[t, i] + self.beta * tilt)
        return np.array(rows)


def paper_rule(**settings):
    """The paper's rule (``PAPER_RULE``: the binary prequential gate on centred values over the even half,
    closed on the learnt mixture), with ``settings`` over it: what the tests of the gate rule are about."""
    return {**PAPER_RULE, **settings}


def new_engine(**settings) -> MemTrial:
    """An engine of the planted world under the paper's rule, ``settings`` over it."""
    engine = MemTrial(gamma=5.0, **paper_rule(**settings))
    for experience_id in TYPES:
        engine.add_experience(experience_id)
    return engine


def run(engine: MemTrial, world: World, dates: range, lag: float = 1.5, rel_override=None) -> list:
    """Walk the dates: settle what matured (at its maturity), then plan, draft and decide.

    Decision t matures at t + lag, so with lag 1.5 its outcome is first usable at t + 2.
    """
    decisions = []
    for t in dates:
        for entry in list(engine.entries.values()):
            plan = entry.plan
            if entry.settlement is None and plan.maturity <= t:
                index = int(plan.decision_id[1:])
                rel = world.rel[index] if rel_override is None else rel_override.get(index, world.rel[index])
                engine.settle(plan.decision_id, rel)
        plan = engine.plan(f"d{t:03d}", t, t + lag, retrieved=world.retrieved[t], n_assets=N_ASSETS)
        decisions.append(engine.decide(plan.decision_id, world.drafts(t, plan.subsets)))
    return decisions
