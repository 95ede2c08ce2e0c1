"""The action a decision takes, given its frozen plan and its drafts (SPEC 3.3).

Gate open and best predicted gain > 0: the designed draft whose subset has the
highest predicted value (sum of its experiences' predicted values; ties go to
fewer experiences, then to the smaller mask). Otherwise the anchored mixture
``q * reference + (1 - q) * mean(drafts)``.

Pure functions of arrays, shared by the online engine and the batch replay of
the backtests, so both act identically.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Choice", "best_subset", "choose"]


@dataclass(frozen=True, slots=True)
class Choice:
    """index: the designed draft acted on (None: the mixture); gain: the best subset's predicted value."""

    index: int | None
    gain: float
    weights: NDArray[np.float64]


def best_subset(predictions: Mapping[Any, float], subsets: Sequence[Sequence[Hashable]], masks: Sequence[int]) -> tuple[int, float]:
    """(row, predicted value) of the designed subset with the highest predicted value."""
    values = [sum(predictions[e] for e in subset) for subset in subsets]
    order = sorted(range(len(masks)), key=lambda i: (-values[i], len(subsets[i]), masks[i]))
    return order[0], float(values[order[0]])


def choose(
    predictions: Mapping[Any, float],
    subsets: Sequence[Sequence[Hashable]],
    masks: Sequence[int],
    is_open: bool,
    q: float,
    reference: NDArray[np.float64],
    drafts: NDArray[np.float64],
) -> Choice:
    """The gated choice between the best designed draft and the anchored mixture.

    drafts: (len(masks), n) rows aligned with ``subsets``; reference: (n,).
    """
    best, gain = best_subset(predictions, subsets, masks)
    if is_open and gain > 0.0:
        return Choice(best, gain, drafts[best].copy())
    return Choice(None, gain, q * reference + (1.0 - q) * drafts.mean(axis=0))
