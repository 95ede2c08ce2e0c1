"""Baselines that retrieve by themselves from a world's candidates (the curation regimes, method 5):
MemRL-style Q-value retrieval and the oracle that knows the types."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import Method, Outcome, Scoring

__all__ = ["Q_LEARNING_RATE", "Q_WEIGHT", "OracleRetrieval", "QRetrieval"]

Q_WEIGHT = 0.5  # lambda: the Q-value's share of the retrieval score (MemRL's two-phase re-ranking)
Q_LEARNING_RATE = 0.1  # alpha of Q <- Q + alpha (r - Q)


def _standardised(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """(x - mean) / sd over the candidates (all zeros when they do not vary)."""
    spread = float(values.std())
    return np.zeros_like(values) if spread == 0.0 else (values - values.mean()) / spread


class QRetrieval(Method):
    """MemRL-style retrieval: every retrieved experience is credited with the whole outcome.

    Each experience keeps a Q-value, 0 at first. A date's candidates score
    ``(1 - lambda) z(similarity) + lambda z(Q)`` (z: standardised over the candidates); the top four
    are retrieved and the agent acts on the draft of all four. When the date matures, every one of them
    moves ``Q <- Q + alpha (r - Q)`` with r the utility (pp) of what was held: the market's move and
    the other experiences' effects are credited to each (the confound memtrial's contrasts remove).
    """

    id = "q_retrieval"

    def __init__(self, scoring: Scoring, k: int = 4) -> None:
        super().__init__(scoring)
        self.k = k
        self.q: dict[int, float] = {}
        self.retrievals: list[tuple[int, ...]] = []

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        if context.draft_for is None or context.candidate_scores is None:
            raise TypeError(f"{self.id} needs a world that offers its retrieval candidates")
        candidates = np.asarray(context.candidates)
        q = np.array([self.q.get(int(e), 0.0) for e in candidates])
        score = (1.0 - Q_WEIGHT) * _standardised(np.asarray(context.candidate_scores)) + Q_WEIGHT * _standardised(q)
        order = np.lexsort((np.arange(candidates.size), -score))[: self.k]
        retrieved = tuple(int(candidates[i]) for i in order)
        self.retrievals.append(retrieved)
        return np.asarray(context.draft_for(retrieved)[(1 << len(retrieved)) - 1])

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        reward = 100.0 * chosen_utility
        for experience in self.retrievals[outcome.context.index]:
            value = self.q.get(experience, 0.0)
            self.q[experience] = value + Q_LEARNING_RATE * (reward - value)

    def values(self) -> dict[int, float]:
        return dict(self.q)


class OracleRetrieval(Method):
    """Knows every experience's type on every date: retrieves useful candidates first (then neutral,
    then misleading; by score within a type) and acts on the draft of the useful ones it retrieved,
    or on the reference when none is useful."""

    id = "oracle_retrieval"

    def __init__(self, scoring: Scoring, type_by_date: NDArray[np.int_], k: int = 4) -> None:
        super().__init__(scoring)
        self.type_by_date, self.k = type_by_date, k
        self.retrievals: list[tuple[int, ...]] = []

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        if context.draft_for is None or context.candidate_scores is None:
            raise TypeError(f"{self.id} needs a world that offers its retrieval candidates")
        candidates = np.asarray(context.candidates)
        kinds = self.type_by_date[context.index][candidates]
        order = np.lexsort((np.arange(candidates.size), -np.asarray(context.candidate_scores), -kinds))[: self.k]
        retrieved = tuple(int(candidates[i]) for i in order)
        self.retrievals.append(retrieved)
        mask = sum(1 << j for j, i in enumerate(order) if kinds[i] > 0)
        if mask == 0:
            return context.reference
        return np.asarray(context.draft_for(retrieved)[mask])
