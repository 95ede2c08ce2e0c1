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

import functools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.action.fallback import mixture
from memtrial.errors import InputError
from memtrial.numeric.running import running_counts
from memtrial.outcomes.mandates import project_simplex

__all__ = [
    "ActionRule",
    "Choice",
    "acts_on_memory",
    "anchored",
    "best_subset",
    "best_subsets",
    "choose",
    "dial_combination",
    "dial_gains",
    "dial_weights",
    "gated_weights",
    "noise_costs",
    "noise_gain",
    "noise_gains",
    "subset_rank",
    "subset_values",
]


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


def subset_rank(masks: Sequence[int]) -> NDArray[np.int64]:
    """The tie-break among subsets of equal predicted value: fewer experiences first, then the smaller mask."""
    return np.array([mask.bit_count() * 256 + mask for mask in masks], dtype=np.int64)


def subset_values(predictions: ArrayLike, masks: Sequence[int]) -> NDArray[np.float64]:
    """Each designed subset's predicted value: the sum of its members' predicted values.

    predictions: (..., k) values of the retrieved experiences in retrieval
    order; returns (..., len(masks)). Members are added in retrieval order, so
    every row gets exactly the sum it gets alone.
    """
    values = np.asarray(predictions, dtype=np.float64)
    mask_array = np.asarray(masks, dtype=np.int64)
    out = np.zeros((*values.shape[:-1], len(masks)))
    for j in range(values.shape[-1]):
        member = (mask_array >> j & 1).astype(bool)
        out += np.where(member, values[..., j, None], 0.0)
    return out


def best_subsets(values: NDArray[np.float64], masks: Sequence[int]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The designed subset with the highest predicted value in each row of ``values`` (..., S) (ties:
    :func:`subset_rank`), and that value: (best, gain), each (...)."""
    rank = subset_rank(masks)
    best = np.where(values == values.max(axis=-1, keepdims=True), rank, np.iinfo(np.int64).max).argmin(axis=-1)
    return best, np.take_along_axis(values, best[..., None], axis=-1)[..., 0]


def acts_on_memory(is_open: ArrayLike, gain: ArrayLike) -> NDArray[np.bool_]:
    """The gate's test: act on the best designed draft where the frozen gate is open and its predicted gain is > 0."""
    return np.asarray(is_open, dtype=bool) & (np.asarray(gain, dtype=np.float64) > 0.0)


def gated_weights(
    is_open: NDArray[np.bool_],
    gain: NDArray[np.float64],
    best: NDArray[np.int64],
    q: NDArray[np.float64],
    reference: NDArray[np.float64],
    drafts: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The gate's action for a batch of decisions: the best designed draft where the gate is open and
    its predicted gain is > 0, else the anchored mixture. is_open, gain, best, q: (D,); reference
    (D, n); drafts (D, S, n). Returns the weights (D, n) and whether each acted on a draft (D,)."""
    acted = acts_on_memory(is_open, gain)
    chosen = drafts[np.arange(drafts.shape[0]), best]
    return np.where(acted[:, None], chosen, anchored(q, reference, drafts)), acted


def anchored(q: ArrayLike, reference: ArrayLike, drafts: NDArray[np.float64]) -> NDArray[np.float64]:
    """The closed action ``q * reference + (1 - q) * mean(drafts)`` (method 4.6): q (...), reference
    (..., n), drafts (..., S, n); returns (..., n)."""
    return mixture(np.asarray(q, dtype=np.float64), reference, np.asarray(drafts, dtype=np.float64).mean(axis=-2))


def best_subset(predictions: Mapping[Any, float], ids: Sequence[Hashable], masks: Sequence[int]) -> tuple[int, float]:
    """(row, predicted value) of the designed subset with the highest predicted value
    (``ids``: the retrieved experiences, in the order the masks' bits refer to)."""
    best, gain = best_subsets(subset_values([predictions[e] for e in ids], masks), masks)
    return int(best), float(gain)


def choose(
    predictions: Mapping[Any, float],
    ids: Sequence[Hashable],
    masks: Sequence[int],
    is_open: bool,
    q: float,
    reference: NDArray[np.float64],
    drafts: NDArray[np.float64],
) -> Choice:
    """The gated choice between the best designed draft and the anchored mixture (:func:`gated_weights`
    on one decision). drafts: (len(masks), n) rows aligned with the masks; reference: (n,)."""
    best, gain = best_subset(predictions, ids, masks)
    weights, acted = gated_weights(
        np.array([is_open]), np.array([gain]), np.array([best]), np.array([q]), reference[None, :], drafts[None, :, :]
    )
    return Choice(best if acted[0] else None, gain, weights[0])


def dial_gains(predictions: NDArray[np.float64], masks: Sequence[int]) -> NDArray[np.float64]:
    """g_S of each designed subset: twice the mean predicted value of its members (0 when empty).

    predictions: (..., k) values of the retrieved experiences in retrieval
    order; returns (..., len(masks)). Members are added in retrieval order
    (a non-member adds an exact zero), so every subset's sum is the same
    whichever masks are computed together.
    """
    values = np.asarray(predictions, dtype=np.float64)
    bits, counts = _membership(tuple(masks), values.shape[-1])
    total = np.zeros((*values.shape[:-1], len(masks)))
    for j in range(values.shape[-1]):
        total = total + values[..., j, None] * bits[:, j]
    return np.asarray(np.where(counts > 0, 2.0 * total / np.maximum(counts, 1), 0.0), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def _membership(masks: tuple[int, ...], k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(len(masks), k) 0/1 membership of each experience in each mask, and each mask's size."""
    bits = ((np.array(masks, dtype=np.int64)[:, None] >> np.arange(k)[None, :]) & 1).astype(np.float64)
    bits.setflags(write=False)
    return bits, bits.sum(axis=1)


def dial_combination(
    gains: NDArray[np.float64], noise_cost: NDArray[np.float64], masks: Sequence[int]
) -> NDArray[np.float64]:
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
        best, _ = best_subsets(flat[~usable], masks)
        one_hot = np.zeros((best.size, flat.shape[1]))
        one_hot[np.arange(best.size), best] = 1.0
        pi[~usable] = one_hot
    return pi.reshape(g.shape)


def dial_weights(
    combination: NDArray[np.float64],
    trust_weight: NDArray[np.float64],
    q: NDArray[np.float64],
    reference: NDArray[np.float64],
    drafts: NDArray[np.float64],
) -> NDArray[np.float64]:
    """omega * sum_S pi_S draft_S + (1 - omega) * (q * reference + (1 - q) * mean(drafts)).

    combination (..., S); trust_weight, q (...); reference (..., n); drafts (..., S, n).
    """
    pi = np.asarray(combination, dtype=np.float64)
    omega = np.asarray(trust_weight, dtype=np.float64)[..., None]
    memory = (pi[..., :, None] * drafts).sum(axis=-2)
    return np.asarray(omega * memory + (1.0 - omega) * anchored(q, reference, drafts), dtype=np.float64)


def noise_costs(gains: Sequence[float | None], steps: NDArray[np.int64]) -> NDArray[np.float64]:
    """kappa after ``steps[d]`` settled decisions, for every d at once (NaN before any estimate):
    the running mean of the settled decisions' :func:`noise_gain` (None: no estimate), the rule of
    the engine's NoiseCost for a whole calendar."""
    kept = np.array([g is not None for g in gains], dtype=bool)
    values = np.array([0.0 if g is None else g for g in gains], dtype=np.float64)
    count, total = running_counts(values, kept)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count[steps] > 0, total[steps] / count[steps], np.nan)


def noise_gain(draft_utilities: NDArray[np.float64], mean_utility: float) -> float | None:
    """One settled decision's estimate of kappa: R / (R - 1) * (U(mean of drafts) - mean of U(drafts)).

    With R drafts of independent noise, averaging them removes a share
    (R - 1) / R of one draft's noise cost; None for a single draft.
    """
    gains = noise_gains(np.asarray(draft_utilities, dtype=np.float64)[None, :], np.array([mean_utility]))
    return None if gains is None else float(gains[0])


def noise_gains(
    draft_utilities: NDArray[np.float64], mean_utilities: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """:func:`noise_gain` of D settled decisions at once, each exactly as alone (None for a single draft).

    draft_utilities: (D, R) the utilities of each decision's R drafts; mean_utilities: (D,) the utility of
    each decision's mean of drafts. Returns (D,).
    """
    utilities = np.asarray(draft_utilities, dtype=np.float64)
    if utilities.ndim != 2:
        raise InputError(f"draft_utilities must have shape (D, R), got {utilities.shape}", field="draft_utilities")
    runs = utilities.shape[1]
    if runs < 2:
        return None
    means = np.asarray(mean_utilities, dtype=np.float64)
    if means.shape != (utilities.shape[0],):
        raise InputError(
            f"mean_utilities must have shape ({utilities.shape[0]},), got {means.shape}", field="mean_utilities"
        )
    return np.asarray(runs / (runs - 1) * (means - utilities.mean(axis=1)), dtype=np.float64)
