"""MemTrial and its ablations, run through the library engine; the oracle; the anchored wrapper."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from backtest.methods.base import HALF, Method, Outcome, Scoring
from backtest.context import DateContext
from memtrial.engine import EngineConfig, MemTrial
from memtrial.fallback import GRID, AnchoredMixture
from memtrial.settle import mixture_utilities_by_date

__all__ = ["Anchored", "AnchoredGroup", "MemTrialMethod", "Oracle"]


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
        self.last_statistic = decision.trust.statistic
        self.last_trust_weight = None if decision.dial is None else decision.dial.trust_weight
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


class AnchoredGroup:
    """Scores the mixtures of every anchored baseline of a world in one call per date."""

    def __init__(self) -> None:
        self.members: list[Anchored] = []
        self._scored: dict[int, dict[str, NDArray[np.float64]]] = {}

    def grid(self, outcome: Outcome, member: Anchored) -> NDArray[np.float64]:
        """Utilities of ``member``'s 201 mixtures on a matured date (all members' at once)."""
        index = outcome.context.index
        if index not in self._scored:
            waiting = [m for m in self.members if index in m.proposals]
            count = len(waiting)
            rel = np.broadcast_to(outcome.rel, (count, *outcome.rel.shape))
            reference = np.broadcast_to(outcome.context.reference, (count, outcome.context.reference.shape[0]))
            previous = np.broadcast_to(outcome.context.previous, reference.shape)
            proposals = np.array([m.proposals[index] for m in waiting])
            scores = mixture_utilities_by_date(reference, proposals, rel, previous, member.scoring.gamma, member.scoring.fee_bp, GRID)
            self._scored = {index: {m.id: row for m, row in zip(waiting, scores, strict=True)}}
        return self._scored[index][member.id]


class Anchored(Method):
    """A baseline given MemTrial's closed action: the KL-anchored mixture of the
    reference and the baseline's own weights (q learned from its own history)."""

    def __init__(self, base: Method, group: AnchoredGroup | None = None) -> None:
        super().__init__(base.scoring)
        self.base, self.id = base, base.id + "_anchored"
        self.mixture = AnchoredMixture("ftrl")
        self.proposals: dict[int, NDArray[np.float64]] = {}
        self.group = group or AnchoredGroup()
        self.group.members.append(self)

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        proposal = self.base.decide(context)
        self.proposals[context.index] = proposal
        q = self.mixture.choose()
        return np.asarray(q * context.reference + (1 - q) * proposal)

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        grid = self.group.grid(outcome, self)
        proposal = self.proposals.pop(outcome.context.index)
        self.base.observe(outcome, proposal, float(grid[0]))
        self.mixture.update(grid, float(grid[-1]), float(grid[0]))

