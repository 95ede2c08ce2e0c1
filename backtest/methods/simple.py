"""Methods that learn nothing about experiences: fixed portfolios and fixed draft picks, and Hedge."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from backtest.methods.base import HALF, Method, Outcome, Scoring

__all__ = ["DraftMean", "DraftPick", "EqualWeight", "Hedge", "MinimumVariance", "Reference", "SelfConsistency"]


# min-variance weights by the digest of a world's histories (one market's dates repeat in every world)
_PREPARED: dict[bytes, dict[int, NDArray[np.float64]]] = {}


class EqualWeight(Method):
    id = "equal_weight"

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        return context.equal


class MinimumVariance(Method):
    """Long-only minimum variance of the trailing 60 sessions (active set on negative weights).

    Each date's weights depend on that date's trailing history only; :meth:`prepare`
    computes every date of a world in one batch (dates with a negative weight then
    go through the active-set loop one by one), once per set of histories in a process.
    """

    id = "min_variance"

    def __init__(self, scoring: Scoring) -> None:
        super().__init__(scoring)
        self._prepared: dict[int, NDArray[np.float64]] = {}

    def prepare(self, contexts: Sequence[DateContext]) -> None:
        digest = hashlib.blake2b(digest_size=16)
        for context in contexts:
            digest.update(np.asarray([context.index, *context.history.shape], dtype=np.int64).tobytes())
            digest.update(np.ascontiguousarray(context.history, dtype=np.float64).tobytes())
        key = digest.digest()  # worlds on one market (every PlantedMem world) share their histories
        cached = _PREPARED.get(key)
        if cached is None:
            self._prepare(contexts)
            _PREPARED[key] = dict(self._prepared)
            while len(_PREPARED) > 8:
                _PREPARED.pop(next(iter(_PREPARED)))
        else:
            self._prepared = dict(cached)

    def _prepare(self, contexts: Sequence[DateContext]) -> None:
        groups: dict[tuple[int, ...], list[DateContext]] = {}
        for context in contexts:
            groups.setdefault(context.history.shape, []).append(context)
        for (sessions, n_assets), members in groups.items():
            history = np.array([c.history for c in members])  # (D, T, n)
            centred = history - history.mean(axis=1, keepdims=True)
            covariance = np.matmul(centred.transpose(0, 2, 1), centred) / (sessions - 1) + 1e-10 * np.eye(n_assets)
            solved = np.linalg.solve(covariance, np.ones((len(members), n_assets, 1)))[:, :, 0]
            weights = solved / solved.sum(axis=1, keepdims=True)
            for context, row, matrix in zip(members, weights, covariance, strict=True):
                self._prepared[context.index] = row if (row >= 0).all() else _active_set(matrix)

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        prepared = self._prepared.get(context.index)
        if prepared is not None:
            return prepared
        centred = context.history - context.history.mean(axis=0)
        covariance = centred.T @ centred / (context.history.shape[0] - 1) + 1e-10 * np.eye(context.history.shape[1])
        return _active_set(covariance)


def _active_set(covariance: NDArray[np.float64]) -> NDArray[np.float64]:
    """Long-only minimum-variance weights: drop the most negative weight until none is left."""
    active = np.ones(covariance.shape[0], dtype=bool)
    while True:
        weights = np.zeros(covariance.shape[0])
        solved = np.linalg.solve(covariance[np.ix_(active, active)], np.ones(active.sum()))
        weights[active] = solved / solved.sum()
        if (weights >= 0).all():
            return weights
        active[np.argmin(np.where(active, weights, np.inf))] = False


class DraftPick(Method):
    """Always the draft of one designed subset: no memory (mask 0), all four (15), top-2 similarity (3)."""

    def __init__(self, scoring: Scoring, method_id: str, mask: int) -> None:
        super().__init__(scoring)
        self.id, self.mask = method_id, mask

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        return np.asarray(context.drafts[self.mask])


class DraftMean(Method):
    id = "draft_mean"

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        return np.asarray(context.drafts[HALF].mean(axis=0))


class Reference(Method):
    id = "reference"

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        return context.reference


class SelfConsistency(Method):
    id = "self_consistency"

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        return context.self_consistency


class Hedge(Method):
    """Exponential weights over {1/N, reference, draft mean, all-four draft, top-2 draft}; learning rate 10 per unit utility."""

    id = "hedge"
    RATE = 10.0
    reads_chosen_utility = False

    def __init__(self, scoring: Scoring) -> None:
        super().__init__(scoring)
        self.log_weights = np.zeros(5)
        self._experts: NDArray[np.float64] | None = None

    def _experts_of(self, context: DateContext) -> NDArray[np.float64]:
        return np.vstack(
            [context.equal, context.reference, context.drafts[HALF].mean(axis=0), context.drafts[15], context.drafts[3]]
        )

    def decide(self, context: DateContext) -> NDArray[np.float64]:
        probabilities = np.exp(self.log_weights - self.log_weights.max())
        probabilities /= probabilities.sum()
        return np.asarray(probabilities @ self._experts_of(context))

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        # the experts' utilities are already in the outcome (each row is scored on its own, so they are
        # the same numbers scoring.utility gives the experts)
        drafts = outcome.draft_utilities
        experts = np.array(
            [outcome.equal_utility, outcome.reference_utility, outcome.draft_mean_utility, drafts[15], drafts[3]]
        )
        self.log_weights += self.RATE * experts
