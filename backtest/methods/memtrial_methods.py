"""MemTrial and its ablations, run through the library engine; the oracle; the anchored wrapper."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from backtest.methods.base import HALF, Method, Outcome, Scoring
from backtest.context import DateContext
from memtrial.engine import EngineConfig, MemTrial
from memtrial.fallback import GRID, AnchoredMixture, mixture_weights

__all__ = ["Anchored", "MemTrialMethod", "Oracle"]


class MemTrialMethod(Method):
    uses_gate = True

    def __init__(self, scoring: Scoring, method_id: str, config: EngineConfig, features: NDArray[np.float64]) -> None:
        super().__init__(scoring)
        self.id = method_id
        self.engine = MemTrial(config)
        for experience, z in enumerate(features):
            self.engine.add_experience(experience, z)

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        for experience, embedding in context.added:
            self.engine.add_experience(experience, embedding)
        plan = self.engine.plan(
            f"d{context.index}", context.session, context.maturity, retrieved=list(context.retrieved), reference=context.reference, previous=context.previous
        )
        decision = self.engine.decide(plan.decision_id, context.drafts[list(plan.masks)])
        self.last_open = decision.trust.is_open
        return decision.weights

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        self.engine.settle(f"d{outcome.context.index}", outcome.rel, at=outcome.context.maturity)
        self.engine.prune_settled()

    def values(self) -> dict[int, float]:
        return {int(e): v for e, v in self.engine.values().items()}


class Oracle(Method):
    """Knows every experience's type: acts on the designed subset with the largest
    (useful - misleading) count if positive, else on the reference."""

    id = "oracle"

    def __init__(self, scoring: Scoring, types: NDArray[np.int_]) -> None:
        super().__init__(scoring)
        self.types = types

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        kinds = [int(self.types[e]) for e in context.retrieved]
        scored = sorted(HALF, key=lambda m: (-sum(kinds[j] for j in range(4) if m >> j & 1), m.bit_count(), m))
        best = scored[0]
        if sum(kinds[j] for j in range(4) if best >> j & 1) <= 0:
            return context.reference
        return np.asarray(context.drafts[best])


class Anchored(Method):
    """A baseline given MemTrial's closed action: the KL-anchored mixture of the
    reference and the baseline's own weights (q learned from its own history)."""

    def __init__(self, base: Method) -> None:
        super().__init__(base.scoring)
        self.base, self.id = base, base.id + "_anchored"
        self.mixture = AnchoredMixture("ftrl")
        self.proposals: dict[int, NDArray[np.float64]] = {}

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        proposal = self.base.decide(context)
        self.proposals[context.index] = proposal
        q = self.mixture.choose()
        return np.asarray(q * context.reference + (1 - q) * proposal)

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        proposal = self.proposals.pop(outcome.context.index)
        grid = self.scoring.utility(mixture_weights(outcome.context.reference, proposal, GRID), outcome.rel, outcome.context.previous)
        self.base.observe(outcome, proposal, float(grid[0]))
        self.mixture.update(grid, float(grid[-1]), float(grid[0]))

