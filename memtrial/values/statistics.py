"""Per-experience sufficient statistics of date-centred contributions (method 4.4), below both learners.

:class:`RunningStatistics` keeps, for each experience, the count, sum and sum
of squared deviations of its centred contributions, with the numbers of
records and dates, as running sums (learning from a matured date touches only
that date's records); :func:`sufficient_statistics` reduces a whole record set.
The empirical-Bayes learner (:mod:`memtrial.values.empirical`) and the
full-Bayes one (:mod:`memtrial.values.bayes`) both fit from these statistics.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit.banzhaf import CentredRecords, ContributionRecord, centre_arrays, centre_by_date
from memtrial.errors import ConfigError, InputError, StateError, parse_choice

__all__ = [
    "DEFAULT_COMPONENTS",
    "CreditBasis",
    "LearnerMode",
    "OutlierGuard",
    "Record",
    "RunningStatistics",
    "SufficientStatistics",
    "content_features",
    "refit_mode",
    "sufficient_statistics",
]

DEFAULT_COMPONENTS = 8

Record = ContributionRecord | tuple[Hashable, Hashable, float]


class LearnerMode(StrEnum):
    IDENTITY = "identity"
    CONTENT = "content"
    AUTO = "auto"


def refit_mode(mode: LearnerMode | str) -> LearnerMode:
    """The mode a full-Bayes refit of a learner in ``mode`` fits: ``auto`` refits ``content`` (whose prior
    on the content weight lets the data switch content off); ``identity`` and ``content`` refit themselves."""
    learner_mode = parse_choice(LearnerMode, mode, "mode")
    return LearnerMode.CONTENT if learner_mode is LearnerMode.AUTO else learner_mode


def content_features(embeddings: ArrayLike, n_components: int | None = DEFAULT_COMPONENTS) -> NDArray[np.float64]:
    """Standardised principal-component scores of the rows of ``embeddings``.

    embeddings: (H, d). Returns (H, p) with p = min(n_components, d, H - 1)
    minus any zero-variance component; each column has mean 0 and sd 1.
    Component signs are fixed so each loading vector's largest entry is
    positive. ``n_components=None`` skips PCA and only standardises.
    """
    matrix = np.asarray(embeddings, dtype=np.float64)
    if matrix.ndim != 2:
        raise InputError(f"embeddings must have shape (H, d), got {matrix.shape}", field="features")
    if not np.all(np.isfinite(matrix)):
        raise InputError("embeddings must be finite", field="features")
    if matrix.shape[0] == 0:
        return np.zeros((0, 0))
    centred = matrix - matrix.mean(axis=0)
    if n_components is not None and matrix.shape[0] >= 2:
        n_keep = min(n_components, matrix.shape[1], matrix.shape[0] - 1)
        _, _, right = np.linalg.svd(centred, full_matrices=False)
        loadings = right[:n_keep]
        flip = np.sign(loadings[np.arange(n_keep), np.argmax(np.abs(loadings), axis=1)])
        centred = centred @ (loadings * flip[:, None]).T
    elif n_components is not None:
        centred = np.zeros((matrix.shape[0], 0))
    scale = centred.std(axis=0)
    keep = scale > 1e-12 * max(1.0, float(np.abs(matrix).max(initial=0.0)))
    return np.asarray(centred[:, keep] / scale[keep], dtype=np.float64)


@dataclass(frozen=True, slots=True)
class SufficientStatistics:
    """Per-experience reduction of date-centred contributions (utility units).

    means, counts: (H,) mean centred contribution and number of dates.
    residual_ss: sum of squared deviations from each experience's mean, with
    ``dof = N - H - (S - 1)`` degrees of freedom; scale: the noise sd s.
    """

    experience_ids: tuple[Hashable, ...]
    means: NDArray[np.float64]
    counts: NDArray[np.int64]
    residual_ss: float
    dof: int
    scale: float

    def features(self, vectors: Mapping[Hashable, NDArray[np.float64]]) -> NDArray[np.float64]:
        """(H, p) content features in the order of ``experience_ids`` (z = 0 where missing)."""
        dim = next((v.shape[0] for v in vectors.values()), 0)
        rows = [vectors.get(i, np.zeros(dim)) for i in self.experience_ids]
        return np.array(rows, dtype=np.float64).reshape(len(rows), dim)


def _noise_scale(residual_ss: float, dof: int, total_ss: float, n_records: int) -> float:
    """s from the residual sum of squares; the plain variance of all y when that is not usable."""
    s2 = residual_ss / dof if dof > 0 else 0.0
    if s2 <= 0.0:
        s2 = total_ss / n_records if n_records else 0.0
    return float(np.sqrt(max(s2, 0.0)))


class CreditBasis(StrEnum):
    """What the value learner learns from: date-centred contributions or the raw same-day contrasts."""

    CENTRED = "centred"
    RAW = "raw"


class OutlierGuard:
    """Robust learning: what one implausible settlement may do to the statistics.

    Each date's (centred) contributions y are compared with a robust scale s:
    1.4826 times the median of the nonzero |y| of the last ``window`` records
    (before this date). A y beyond ``clip`` * s is clipped to +-clip * s
    (Huber); a date with any y beyond ``reject`` * s is set aside whole (it
    is counted, and its |y| still enter the scale, so a lasting change of
    scale is learnt within about window / 2 records). While fewer than
    ``warmup`` dates are in, the raw dates are kept and the statistics are
    rebuilt from them at every date with the scale of all of them, so an
    outlier among the first dates is treated like one among later dates.
    Memory is bounded: at most ``warmup`` dates and ``window`` magnitudes.
    """

    __slots__ = ("clip", "recent", "reject", "set_aside", "warm", "warmup", "window")

    def __init__(self, clip: float = 6.0, reject: float = 50.0, window: int = 256, warmup: int = 16) -> None:
        if not (np.isfinite(clip) and np.isfinite(reject) and 0.0 < clip <= reject):
            raise ConfigError(
                f"outlier guard needs 0 < clip <= reject, got clip {clip!r}, reject {reject!r}", field="robust"
            )
        self.clip, self.reject, self.window, self.warmup = float(clip), float(reject), int(window), int(warmup)
        self.recent: list[float] = []  # the last ``window`` magnitudes |y|, oldest first
        self.warm: list[list[Any]] | None = []  # the raw dates [[ids...], [y...]] until ``warmup`` dates are in
        self.set_aside = 0

    def scale(self, magnitudes: Iterable[float]) -> float | None:
        nonzero = [m for m in magnitudes if m > 0.0]
        return 1.4826 * float(np.median(nonzero)) if nonzero else None

    def screen(self, values: list[float], scale: float | None) -> list[float] | None:
        """The date's values as learnt (clipped), or None when the date is set aside."""
        if scale is None:
            return values
        if any(abs(v) > self.reject * scale for v in values):
            return None
        bound = self.clip * scale
        return [min(max(v, -bound), bound) for v in values]

    def remember(self, values: Iterable[float]) -> None:
        self.recent.extend(abs(v) for v in values)
        del self.recent[: max(0, len(self.recent) - self.window)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "clip": self.clip,
            "reject": self.reject,
            "window": self.window,
            "warmup": self.warmup,
            "recent": list(self.recent),
            "warm": self.warm,
            "set_aside": self.set_aside,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutlierGuard:
        guard = cls(data["clip"], data["reject"], data["window"], data["warmup"])
        guard.recent = [float(v) for v in data["recent"]]
        guard.warm = None if data["warm"] is None else [[list(ids), [float(v) for v in ys]] for ids, ys in data["warm"]]
        guard.set_aside = int(data["set_aside"])
        return guard


class RunningStatistics:
    """Running per-experience statistics of date-centred contributions.

    For each experience h: n_h (dates), the sum of its centred contributions
    and M2_h, the sum of squared deviations from its running mean (Welford).
    Also N (records), S (dates with >= 2 experiences) and the sum and sum of
    squares of all centred contributions (for the plain-variance fallback).
    Memory is O(experiences), whatever the number of dates.

    ``centre=False`` keeps the raw contributions instead (every date counts,
    and no date effect is removed from the residual degrees of freedom).
    """

    def __init__(self, centre: bool = True, guard: OutlierGuard | None = None) -> None:
        self.centre = centre
        self.guard = guard
        self.index: dict[Hashable, int] = {}
        self.ids: list[Hashable] = []
        self.counts: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.sums: NDArray[np.float64] = np.zeros(0)
        self.m2: NDArray[np.float64] = np.zeros(0)
        self.n_records = 0
        self.n_dates = 0
        self.total = 0.0
        self.total_sq = 0.0

    def __len__(self) -> int:
        return len(self.ids)

    def _row(self, experience_id: Hashable) -> int:
        row = self.index.get(experience_id)
        if row is None:
            row = len(self.ids)
            if row == self.counts.shape[0]:
                capacity = max(8, 2 * row)
                self.counts = np.resize(self.counts, capacity)
                self.sums = np.resize(self.sums, capacity)
                self.m2 = np.resize(self.m2, capacity)
                self.counts[row:] = 0
                self.sums[row:] = 0.0
                self.m2[row:] = 0.0
            self.index[experience_id] = row
            self.ids.append(experience_id)
        return row

    def add_date(self, contributions: Mapping[Any, float]) -> bool:
        """Centre one date's contributions (one per experience) and add them.

        Returns False (and changes nothing) for a date with fewer than two
        experiences, which carries no relative information (raw statistics:
        for a date without experiences).
        """
        if len(contributions) < (2 if self.centre else 1):
            return False
        values = [float(v) for v in contributions.values()]
        if not all(map(math.isfinite, values)):
            raise InputError("contributions must be finite", field="contributions")
        date_mean = sum(values) / len(values) if self.centre else 0.0
        ys = [value - date_mean for value in values]
        if not all(map(math.isfinite, ys)):
            raise InputError(
                "contributions are too large to centre (their differences overflow)", field="contributions"
            )
        guard = self.guard
        if guard is None:
            self._add(list(contributions), ys)
            return True
        if guard.warm is not None:
            guard.warm.append([list(contributions), ys])
            self._rebuild_warm(guard)
            if len(guard.warm) >= guard.warmup:
                for _ids, warm_ys in guard.warm:
                    guard.remember(warm_ys)
                guard.warm = None
            return True
        screened = guard.screen(ys, guard.scale(guard.recent))
        guard.remember(ys)
        if screened is None:
            guard.set_aside += 1
        else:
            self._add(list(contributions), screened)
        return True

    def _rebuild_warm(self, guard: OutlierGuard) -> None:
        """The statistics of the warm-up dates, screened with the scale of all of them."""
        assert guard.warm is not None
        scale = guard.scale(abs(y) for _ids, ys in guard.warm for y in ys)
        self.index, self.ids = {}, []
        self.counts, self.sums, self.m2 = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        self.n_records = self.n_dates = 0
        self.total = self.total_sq = 0.0
        guard.set_aside = 0
        for ids, ys in guard.warm:
            screened = guard.screen(ys, scale)
            if screened is None:
                guard.set_aside += 1
            else:
                self._add(ids, screened)

    def _add(self, experience_ids: list[Any], ys: list[float]) -> None:
        """Add one date's (centred, screened) values."""
        rows = [self._row(experience_id) for experience_id in experience_ids]  # may grow the arrays
        counts, sums, m2 = self.counts, self.sums, self.m2
        total, total_sq = self.total, self.total_sq
        for row, y in zip(rows, ys, strict=True):
            count = int(counts[row])
            old_mean = sums[row] / count if count else 0.0
            counts[row] = count + 1
            sums[row] += y
            m2[row] += (y - old_mean) * (y - sums[row] / (count + 1))
            total += y
            total_sq += y * y
        self.total, self.total_sq = total, total_sq
        self.n_records += len(ys)
        self.n_dates += 1

    def snapshot(self) -> SufficientStatistics | None:
        """The statistics the model is fitted on; None before any centred record."""
        if not self.n_records:
            return None
        size = len(self.ids)
        counts = self.counts[:size].copy()
        means = self.sums[:size] / counts
        residual_ss = float(self.m2[:size].sum())
        dof = self.n_records - size - (self.n_dates - 1 if self.centre else 0)
        total_ss = self.total_sq - self.total * self.total / self.n_records
        return SufficientStatistics(
            tuple(self.ids), means, counts, residual_ss, dof, _noise_scale(residual_ss, dof, total_ss, self.n_records)
        )

    @classmethod
    def from_records(cls, records: Iterable[Record], centre: bool = True) -> RunningStatistics:
        """Statistics of a whole record set, computed in one vectorised pass."""
        return cls.from_centred(centre_by_date(records, centre=centre), centre)

    @classmethod
    def from_arrays(
        cls, dates: ArrayLike, experience_ids: ArrayLike, contributions: ArrayLike, centre: bool = True
    ) -> RunningStatistics:
        """Statistics of records given as three aligned arrays (N,): the fast path for large histories."""
        return cls.from_centred(
            centre_arrays(
                np.asarray(dates),
                np.asarray(experience_ids),
                np.asarray(contributions, dtype=np.float64),
                centre=centre,
            ),
            centre,
        )

    @classmethod
    def from_centred(cls, centred: CentredRecords, centre: bool = True) -> RunningStatistics:
        stats = cls(centre)
        if centred.n_records == 0:
            return stats
        n_experiences = len(centred.experience_ids)
        counts = np.bincount(centred.experience_index, minlength=n_experiences)
        seen = np.flatnonzero(counts)
        sums = np.bincount(centred.experience_index, weights=centred.y, minlength=n_experiences)
        means = np.zeros(n_experiences)
        means[seen] = sums[seen] / counts[seen]
        residual = centred.y - means[centred.experience_index]
        m2 = np.bincount(centred.experience_index, weights=residual * residual, minlength=n_experiences)
        stats.ids = (
            list(centred.experience_ids)
            if seen.size == n_experiences
            else [centred.experience_ids[h] for h in seen.tolist()]
        )
        stats.index = dict(zip(stats.ids, range(len(stats.ids))))
        stats.counts = counts[seen].astype(np.int64)
        stats.sums = np.asarray(sums[seen], dtype=np.float64)
        stats.m2 = np.asarray(m2[seen], dtype=np.float64)
        stats.n_records = centred.n_records
        stats.n_dates = int(np.count_nonzero(np.bincount(centred.date_index)))
        stats.total = float(centred.y.sum())
        stats.total_sq = float(centred.y @ centred.y)
        return stats

    def to_dict(self) -> dict[str, Any]:
        size = len(self.ids)
        return {
            **({} if self.centre else {"centre": False}),
            **({} if self.guard is None else {"guard": self.guard.to_dict()}),
            "ids": list(self.ids),
            "counts": [int(c) for c in self.counts[:size]],
            "sums": [float(v) for v in self.sums[:size]],
            "m2": [float(v) for v in self.m2[:size]],
            "n_records": self.n_records,
            "n_dates": self.n_dates,
            "total": self.total,
            "total_sq": self.total_sq,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunningStatistics:
        guard = data.get("guard")
        stats = cls(bool(data.get("centre", True)), None if guard is None else OutlierGuard.from_dict(guard))
        ids = list(data["ids"])
        if not (len(ids) == len(data["counts"]) == len(data["sums"]) == len(data["m2"])):
            raise StateError("learner statistics must have one count, sum and m2 per experience", field="learner")
        stats.ids = ids
        stats.index = {e: row for row, e in enumerate(ids)}
        stats.counts = np.asarray(data["counts"], dtype=np.int64)
        stats.sums = np.asarray(data["sums"], dtype=np.float64)
        stats.m2 = np.asarray(data["m2"], dtype=np.float64)
        stats.n_records = int(data["n_records"])
        stats.n_dates = int(data["n_dates"])
        stats.total = float(data["total"])
        stats.total_sq = float(data["total_sq"])
        return stats


def sufficient_statistics(records: Iterable[Record]) -> SufficientStatistics | None:
    """Centre by date, then reduce to per-experience statistics; None without centred records.

    s2 = residual_ss / dof when dof > 0 and that is positive, else the plain
    variance of all centred contributions (method 4.4).
    """
    return RunningStatistics.from_records(records).snapshot()
