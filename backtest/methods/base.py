"""The method interface: decide from a date's context, observe its outcome at maturity."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext
from memtrial.design import half_fraction
from memtrial.settle import utility

__all__ = ["HALF", "PAIRS", "Method", "Outcome", "Scoring", "pair_mask"]

HALF = half_fraction(4)
PAIRS = [mask for mask in HALF if mask.bit_count() == 2]


def pair_mask(first: int, second: int) -> int:
    """Mask of two retrieval positions."""
    return (1 << first) | (1 << second)


@dataclass(frozen=True, slots=True)
class Scoring:
    """How weights become utility in a world: risk aversion and fee (the previous book is the date's)."""

    gamma: float
    fee_bp: float = 15.0

    def utility(self, weights: NDArray[np.float64], rel: NDArray[np.float64], previous: NDArray[np.float64]) -> NDArray[np.float64]:
        batch = np.atleast_2d(weights)
        return np.asarray(utility(batch / batch.sum(axis=1, keepdims=True), rel, previous, self.gamma, self.fee_bp))


@dataclass(frozen=True, slots=True)
class Outcome:
    """A matured date: its context, the realised prices and the utilities everyone can use.

    draft_utilities: (16,) utility of every subset's draft; draft_mean_utility:
    the utility of the mean of the half-fraction's eight drafts.
    """

    context: DateContext
    rel: NDArray[np.float64]
    draft_utilities: NDArray[np.float64]
    reference_utility: float
    equal_utility: float
    draft_mean_utility: float = float("nan")


class Method(ABC):
    """One decision policy. ``decide`` sees no outcome; ``observe`` gets it at maturity."""

    id: str = ""
    uses_gate: bool = False

    def __init__(self, scoring: Scoring) -> None:
        self.scoring = scoring
        self.last_open: bool | None = None
        self.last_trust_weight: float | None = None  # methods acting by the trust dial

    @abstractmethod
    def decide(self, context: DateContext) -> NDArray[np.float64]:
        """Weights for the date."""

    def observe(self, outcome: Outcome, chosen: NDArray[np.float64], chosen_utility: float) -> None:
        """Learn from a matured date (default: nothing to learn)."""

    def values(self) -> dict[int, float] | None:
        """Learned value of each experience, where the method learns one."""
        return None
