"""Memory agents that credit experiences and act on the two best (top-2) of the retrieved four.

They differ in what they credit an experience with:
- ``outcome_credit`` (MemRL/FinMem style): the realised utility of the decision
  it was used in, as a running Q update, with 10% exploration;
- ``counterfactual_argmax``: its mean same-day Banzhaf contrast, no pooling, no gate;
- ``uplift_credit``: the decision's utility minus the same day's memory-free
  reference (a regression adjustment with coefficient one), running mean, 10% exploration;
- ``finmem``: recency + relevance + outcome-driven importance with decay;
- ``expel``: up/down votes when the decision beat/lost to equal weight;
- ``reflexion``: experiences used in a decision that lost to equal weight are
  flagged for six dates and skipped.
"""

from __future__ import annotations

import zlib

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import HALF, Method, Outcome, Scoring, pair_mask
from memtrial.credit.banzhaf import contributions

__all__ = ["CounterfactualArgmax", "ExpeL", "FinMem", "OutcomeCredit", "Reflexion", "UpliftCredit"]

EXPLORATION = 0.10


class PairCredit(Method):
    """Pick the two retrieved experiences with the highest score (ties: retrieval rank)."""

    explore = 0.0

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring)
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(self.id.encode())]))
        self.used: dict[int, tuple[int, ...]] = {}

    def score(self, experience: int, context: DateContext) -> float:
        raise NotImplementedError

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        if self.explore and self.rng.random() < self.explore:
            first, second = sorted(self.rng.choice(4, size=2, replace=False))
        else:
            order = sorted(range(4), key=lambda j: (-self.score(context.retrieved[j], context), j))
            first, second = sorted(order[:2])
        self.used[context.index] = (context.retrieved[first], context.retrieved[second])
        return np.asarray(context.drafts[pair_mask(first, second)])


class OutcomeCredit(PairCredit):
    id = "outcome_credit"
    explore = EXPLORATION
    RATE = 0.1

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring, seed)
        self.q: dict[int, float] = {}

    def score(self, experience: int, context: DateContext) -> float:
        return self.q.get(experience, 0.0)

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        for experience in self.used.pop(outcome.context.index):
            old = self.q.get(experience, 0.0)
            self.q[experience] = old + self.RATE * (chosen_utility - old)

    def values(self) -> dict[int, float]:
        return dict(self.q)


class UpliftCredit(OutcomeCredit):
    id = "uplift_credit"

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring, seed)
        self.sums: dict[int, float] = {}
        self.counts: dict[int, int] = {}

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        uplift = chosen_utility - outcome.reference_utility
        for experience in self.used.pop(outcome.context.index):
            self.sums[experience] = self.sums.get(experience, 0.0) + uplift
            self.counts[experience] = self.counts.get(experience, 0) + 1
            self.q[experience] = self.sums[experience] / self.counts[experience]


class CounterfactualArgmax(PairCredit):
    id = "counterfactual_argmax"

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring, seed)
        self.sums: dict[int, float] = {}
        self.counts: dict[int, int] = {}

    def score(self, experience: int, context: DateContext) -> float:
        count = self.counts.get(experience, 0)
        return self.sums[experience] / count if count else 0.0

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        self.used.pop(outcome.context.index, None)
        contrast = (
            outcome.half_contrasts
            if outcome.half_contrasts is not None
            else contributions(outcome.draft_utilities[HALF], HALF, 4)
        )
        for experience, value in zip(outcome.context.retrieved, contrast, strict=True):
            self.sums[experience] = self.sums.get(experience, 0.0) + float(value)
            self.counts[experience] = self.counts.get(experience, 0) + 1

    def values(self) -> dict[int, float]:
        return {e: self.sums[e] / self.counts[e] for e in self.sums}


class FinMem(PairCredit):
    """score = relevance (retrieval rank) + recency + importance; importance gains the outcome."""

    id = "finmem"
    DECAY = 0.99
    RECENCY = 12.0

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring, seed)
        self.importance: dict[int, float] = {}
        self.last_used: dict[int, int] = {}
        self.now = 0

    def score(self, experience: int, context: DateContext) -> float:
        relevance = 1.0 - context.retrieved.index(experience) / 4.0
        recency = np.exp(-(self.now - self.last_used.get(experience, -10_000)) / self.RECENCY)
        return float(relevance + recency + 10.0 * self.importance.get(experience, 0.0))

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        self.now = context.index
        weights = super().decide(context)
        for experience in self.used[context.index]:
            self.last_used[experience] = context.index
        return weights

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        for experience in self.importance:
            self.importance[experience] *= self.DECAY
        for experience in self.used.pop(outcome.context.index):
            self.importance[experience] = self.importance.get(experience, 0.0) + chosen_utility

    def values(self) -> dict[int, float]:
        return dict(self.importance)


class ExpeL(PairCredit):
    id = "expel"

    def __init__(self, scoring: Scoring, seed: int) -> None:
        super().__init__(scoring, seed)
        self.votes: dict[int, int] = {}

    def score(self, experience: int, context: DateContext) -> float:
        return float(self.votes.get(experience, 0))

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        vote = 1 if chosen_utility > outcome.equal_utility else -1
        for experience in self.used.pop(outcome.context.index):
            self.votes[experience] = self.votes.get(experience, 0) + vote

    def values(self) -> dict[int, float]:
        return {e: float(v) for e, v in self.votes.items()}


class Reflexion(Method):
    id = "reflexion"
    MEMORY = 6

    def __init__(self, scoring: Scoring) -> None:
        super().__init__(scoring)
        self.flagged_until: dict[int, int] = {}
        self.used: dict[int, tuple[int, ...]] = {}

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        allowed = [j for j in range(4) if self.flagged_until.get(context.retrieved[j], -1) < context.index]
        mask = pair_mask(allowed[0], allowed[1]) if len(allowed) >= 2 else 0
        self.used[context.index] = tuple(context.retrieved[j] for j in range(4) if mask >> j & 1)
        return np.asarray(context.drafts[mask])

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        used = self.used.pop(outcome.context.index)
        if chosen_utility < outcome.equal_utility:
            for experience in used:
                self.flagged_until[experience] = outcome.context.index + 1 + self.MEMORY
