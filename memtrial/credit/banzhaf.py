"""Same-day credit: Banzhaf contrasts of the designed drafts.

For a design ``masks`` over k retrieved experiences and the utility of each
draft, the contribution of experience ``h`` is

    c[h] = mean(U[m] for m with bit h) - mean(U[m] for m without bit h).

With the full factorial this is exactly the Banzhaf value of the game
``v(S) = U[S]``; with the half fraction it is the Banzhaf value plus the
aliased three-way effect. Any utility component shared by every draft of the
day (the market) cancels.

Contribution records are pooled by the value learner on *date-centred*
contributions: ``y[t, h] = c[t, h] - mean_h c[t, h]``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit.design import aliases, validate_masks
from memtrial.errors import InputError

__all__ = [
    "CentredRecords",
    "ContributionRecord",
    "centre_arrays",
    "centre_by_date",
    "centre_contrasts",
    "contributions",
    "contributions_by_date",
    "interactions",
    "utilities_array",
]


def centre_contrasts(contrasts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Date-centred contributions: each date's contrasts (..., k) minus their mean over the date's experiences."""
    return np.asarray(contrasts - contrasts.mean(axis=-1, keepdims=True), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class ContributionRecord:
    """One experience's contribution on one date (decimal utility units)."""

    date: Hashable
    experience_id: Hashable
    contribution: float

    def __post_init__(self) -> None:
        if not np.isfinite(self.contribution):
            raise InputError(f"contribution must be finite, got {self.contribution!r}", field="contribution")


def utilities_array(utilities: Mapping[int, float] | ArrayLike, masks: Sequence[int]) -> NDArray[np.float64]:
    """Utilities aligned with ``masks`` as a float array of shape (len(masks),).

    ``utilities`` is either a mapping mask -> utility that covers every mask,
    or a sequence aligned with ``masks``.
    """
    if isinstance(utilities, Mapping):
        missing = [mask for mask in masks if mask not in utilities]
        if missing:
            raise InputError(f"utilities has no entry for masks {missing}", field="utilities")
        values = np.array([float(utilities[mask]) for mask in masks], dtype=np.float64)
    else:
        values = np.asarray(utilities, dtype=np.float64)
        if values.shape != (len(masks),):
            raise InputError(
                f"utilities must have shape ({len(masks)},) to align with masks, got {values.shape}",
                field="utilities",
            )
    if not np.all(np.isfinite(values)):
        raise InputError("utilities must be finite", field="utilities")
    return values


def _levels(masks: Sequence[int], k: int) -> NDArray[np.int8]:
    """Two-level coding of the design: (n_runs, k) with +1 included, -1 excluded."""
    bits = (np.asarray(masks, dtype=np.int64)[:, None] >> np.arange(k)) & 1
    return (2 * bits - 1).astype(np.int8)


def contributions(utilities: Mapping[int, float] | ArrayLike, masks: Sequence[int], k: int) -> NDArray[np.float64]:
    """Banzhaf contrast of each of the k experiences, shape (k,), utility units.

    Raises :class:`InputError` when an experience is in every run or in none
    (its contrast is then undefined).
    """
    checked = validate_masks(masks, k)
    values = utilities_array(utilities, checked)
    levels = _levels(checked, k)
    included = levels > 0
    n_in = included.sum(axis=0)
    n_out = len(checked) - n_in
    if np.any(n_in == 0) or np.any(n_out == 0):
        bad = int(np.flatnonzero((n_in == 0) | (n_out == 0))[0])
        raise InputError(f"experience {bad} must be both in and out of some run of the design", field="masks")
    return np.asarray(contributions_by_date(values[None], included, n_in, n_out)[0], dtype=np.float64)


def contributions_by_date(
    utilities: NDArray[np.float64], included: NDArray[np.bool_], n_in: NDArray[np.int64], n_out: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Banzhaf contrasts of D dates of one design at once: utilities (D, runs); included (runs, k)
    says which experience is in which run; returns (D, k), each date exactly as
    :func:`contributions` computes it alone (the runs are added one after another)."""
    sum_in = (utilities[:, :, None] * included[None, :, :]).sum(axis=1)
    sum_out = (utilities[:, :, None] * ~included[None, :, :]).sum(axis=1)
    return np.asarray(sum_in / n_in - sum_out / n_out, dtype=np.float64)


def interactions(utilities: Mapping[int, float] | ArrayLike, masks: Sequence[int], k: int) -> dict[str, float]:
    """Two-factor interaction contrasts, one per alias chain, keyed by the chain.

    For the k = 4 half fraction the keys are ``"AB = CD"``, ``"AC = BD"`` and
    ``"AD = BC"``; each value estimates the sum of the aliased effects in the
    chain (draft noise when interactions are small). The contrast of word w is
    ``mean(U where column w = +1) - mean(U where column w = -1)``.
    """
    checked = validate_masks(masks, k)
    values = utilities_array(utilities, checked)
    levels = _levels(checked, k).astype(np.int64)
    result: dict[str, float] = {}
    for chain in aliases(checked, k):
        if len(chain.effects[0]) != 2:
            continue
        first, second = (ord(letter) - ord("A") for letter in chain.effects[0])
        column = levels[:, first] * levels[:, second]
        plus = column > 0
        if plus.all() or not plus.any():
            continue
        result[str(chain)] = float(values[plus].mean() - values[~plus].mean())
    return result


@dataclass(frozen=True, slots=True)
class CentredRecords:
    """Date-centred contributions in flat arrays.

    ``date_index`` and ``experience_index`` index into ``dates`` and
    ``experience_ids``; ``y`` holds ``c[t, h] - mean_h c[t, h]`` (shape (N,)),
    or the raw ``c[t, h]`` when built with ``centre=False``.
    """

    dates: tuple[Hashable, ...]
    experience_ids: tuple[Hashable, ...]
    date_index: NDArray[np.int64]
    experience_index: NDArray[np.int64]
    y: NDArray[np.float64]

    @property
    def n_records(self) -> int:
        return int(self.y.shape[0])


def _codes(keys: Sequence[Hashable] | NDArray[Any]) -> tuple[tuple[Hashable, ...], NDArray[np.int64]]:
    """Distinct keys and the integer code of each key: in sorted order for a NumPy
    array of numbers or strings (one vectorised pass), else in first-seen order."""
    if (
        isinstance(keys, np.ndarray)
        and keys.dtype.kind in "iu"
        and keys.size
        and keys.min() >= 0
        and keys.max() < 4 * keys.size + 1024
    ):
        present = np.zeros(int(keys.max()) + 1, dtype=bool)  # small non-negative integers: a lookup table, no sort
        present[keys] = True
        distinct = np.flatnonzero(present)
        lookup = np.zeros(present.size, dtype=np.int64)
        lookup[distinct] = np.arange(distinct.size)
        return tuple(distinct.tolist()), lookup[keys].reshape(-1)
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "iufUS":
        distinct, codes = np.unique(keys, return_inverse=True)
        return tuple(distinct.tolist()), codes.astype(np.int64).reshape(-1)
    table: dict[Hashable, int] = {}
    found = np.fromiter((table.setdefault(key, len(table)) for key in keys), dtype=np.int64, count=len(keys))
    return tuple(table), found


def centre_by_date(
    records: Iterable[ContributionRecord | tuple[Hashable, Hashable, float]], *, centre: bool = True
) -> CentredRecords:
    """Average repeated (date, experience) records, then centre within each date.

    Dates with fewer than two distinct experiences carry no relative
    information and are dropped. ``centre=False`` keeps the raw contributions
    (and every date).
    """
    dates: list[Hashable] = []
    experiences: list[Hashable] = []
    values: list[float] = []
    for index, record in enumerate(records):
        if isinstance(record, ContributionRecord):
            date, experience_id, contribution = record.date, record.experience_id, record.contribution
        else:
            try:
                date, experience_id, contribution = record
            except (TypeError, ValueError):
                raise InputError(
                    f"records[{index}] must be (date, experience_id, contribution), got {record!r}",
                    field="records",
                ) from None
        dates.append(date)
        experiences.append(experience_id)
        values.append(float(contribution))
    return centre_arrays(dates, experiences, np.asarray(values, dtype=np.float64), centre=centre)


def centre_arrays(
    dates: Sequence[Hashable] | NDArray[Any],
    experience_ids: Sequence[Hashable] | NDArray[Any],
    contributions: NDArray[np.float64],
    *,
    centre: bool = True,
) -> CentredRecords:
    """Array form of :func:`centre_by_date` (fully vectorised when ``dates`` and
    ``experience_ids`` are NumPy arrays of numbers or strings)."""
    if not (len(dates) == len(experience_ids) == contributions.shape[0]):
        raise InputError("dates, experience_ids and contributions must have one length", field="records")
    if not np.all(np.isfinite(contributions)):
        raise InputError("contributions must be finite", field="contribution")
    date_keys, date_codes = _codes(dates)
    experience_keys, experience_codes = _codes(experience_ids)
    n_experiences = max(len(experience_keys), 1)
    pair = date_codes * n_experiences + experience_codes
    unique_pair, inverse = np.unique(pair, return_inverse=True)
    sums = np.bincount(inverse, weights=contributions, minlength=unique_pair.size)
    counts = np.bincount(inverse, minlength=unique_pair.size)
    averaged = sums / counts
    pair_date = unique_pair // n_experiences
    pair_experience = unique_pair % n_experiences
    per_date = np.bincount(pair_date, minlength=len(date_keys))
    if not centre:
        return CentredRecords(date_keys, experience_keys, pair_date, pair_experience, averaged)
    date_mean = np.bincount(pair_date, weights=averaged, minlength=len(date_keys)) / np.maximum(per_date, 1)
    keep = per_date[pair_date] >= 2
    return CentredRecords(
        dates=date_keys,
        experience_ids=experience_keys,
        date_index=pair_date[keep],
        experience_index=pair_experience[keep],
        y=(averaged - date_mean[pair_date])[keep],
    )
