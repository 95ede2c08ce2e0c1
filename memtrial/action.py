"""The action a decision takes, given its frozen plan and its drafts.

The gate (method 4.5): gate open and best predicted gain > 0: the designed draft
whose subset has the highest predicted value (sum of its experiences' predicted
values; ties go to fewer experiences, then to the smaller mask). Otherwise the
anchored mixture ``q * reference + (1 - q) * mean(drafts)``.

The dial (method 4.8): ``omega * sum_S pi_S draft_S + (1 - omega) * mixture``,
pi the Euclidean projection of ``g / (2 kappa)`` onto the simplex, g_S twice
the mean predicted value of S's members (0 for the empty subset), kappa the
cost of one draft's noise.

Pure functions of arrays, shared by the online engine and the batch replay of
the backtests, so both act identically (the batch forms compute each row
exactly as alone).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.settle import project_simplex

__all__ = ["ActionRule", "Choice", "best_subset", "choose", "dial_combination", "dial_gains", "dial_weights", "noise_gain"]


class ActionRule(StrEnum):
    """How a decision acts on the drafts: the binary gate of the method or the trust dial."""

    GATE = "gate"
    DIAL = "dial"


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


def dial_gains(predictions: NDArray[np.float64], masks: Sequence[int]) -> NDArray[np.float64]:
    """g_S of each designed subset: twice the mean predicted value of its members (0 when empty).

    predictions: (..., k) values of the retrieved experiences in retrieval
    order; returns (..., len(masks)). Members are added in retrieval order.
    """
    values = np.asarray(predictions, dtype=np.float64)
    out = np.zeros((*values.shape[:-1], len(masks)))
    for row, mask in enumerate(masks):
        members = [j for j in range(values.shape[-1]) if mask >> j & 1]
        if members:
            total = values[..., members[0]].copy()
            for j in members[1:]:
                total = total + values[..., j]
            out[..., row] = 2.0 * total / len(members)
    return out


def dial_combination(gains: NDArray[np.float64], noise_cost: NDArray[np.float64], masks: Sequence[int]) -> NDArray[np.float64]:
    """pi: the projection of g / (2 kappa) onto the simplex, for each row of ``gains`` (..., S).

    Where kappa is NaN (no estimate yet) or not > 0 (drafts carry no noise to
    average away), pi is all on the best subset (ties: fewer experiences, then
    the smaller mask).
    """
    g = np.asarray(gains, dtype=np.float64)
    kappa = np.asarray(noise_cost, dtype=np.float64)
    flat = g.reshape(-1, g.shape[-1])
    costs = np.broadcast_to(kappa, g.shape[:-1]).reshape(-1)
    usable = np.isfinite(costs) & (costs > 0.0)
    pi = np.zeros_like(flat)
    if usable.any():
        pi[usable] = project_simplex(flat[usable] / (2.0 * costs[usable])[:, None], 1.0)
    if (~usable).any():
        rank = np.array([m.bit_count() * 256 + m for m in masks])
        best_value = flat[~usable].max(axis=1, keepdims=True)
        best = np.where(flat[~usable] == best_value, rank[None, :], np.iinfo(np.int64).max).argmin(axis=1)
        one_hot = np.zeros((best.size, flat.shape[1]))
        one_hot[np.arange(best.size), best] = 1.0
        pi[~usable] = one_hot
    return pi.reshape(g.shape)


def dial_weights(
    combination: NDArray[np.float64], trust_weight: NDArray[np.float64], q: NDArray[np.float64], reference: NDArray[np.float64], drafts: NDArray[np.float64]
) -> NDArray[np.float64]:
    """omega * sum_S pi_S draft_S + (1 - omega) * (q * reference + (1 - q) * mean(drafts)).

    combination (..., S); trust_weight, q (...); reference (..., n); drafts (..., S, n).
    """
    pi = np.asarray(combination, dtype=np.float64)
    omega = np.asarray(trust_weight, dtype=np.float64)[..., None]
    weight_q = np.asarray(q, dtype=np.float64)[..., None]
    memory = (pi[..., :, None] * drafts).sum(axis=-2)
    fallback = weight_q * reference + (1.0 - weight_q) * drafts.mean(axis=-2)
    return np.asarray(omega * memory + (1.0 - omega) * fallback, dtype=np.float64)


def noise_gain(draft_utilities: NDArray[np.float64], mean_utility: float) -> float | None:
    """One settled decision's estimate of kappa: R / (R - 1) * (U(mean of drafts) - mean of U(drafts)).

    With R drafts of independent noise, averaging them removes a share
    (R - 1) / R of one draft's noise cost; None for a single draft.
    """
    runs = int(np.asarray(draft_utilities).shape[0])
    if runs < 2:
        return None
    return float(runs / (runs - 1) * (mean_utility - float(np.mean(draft_utilities))))
