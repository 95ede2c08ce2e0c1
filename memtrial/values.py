"""Experience values: the empirical-Bayes Fay–Herriot learner (method 4.4).

The learner works on per-experience sufficient statistics of date-centred
contributions, kept as running sums so that learning from a matured date
touches only that date's records:

- ``update(date, contributions)`` centres one date's contributions and adds
  them to the running statistics (count, sum and sum of squared deviations of
  each experience; numbers of records and dates);
- ``fit(records)`` replaces the statistics with those of a whole record set
  (repeats of a (date, experience) averaged first, as method 4.4 says).

From the statistics it estimates the noise scale

    s2 = sum_h sum_t (y[t,h] - m_h)**2 / (N - H - (S - 1))

(or the plain variance of all y when that denominator is not positive), and
fits the Fay–Herriot model of :mod:`memtrial.fayherriot` in units of s. Fits
are made lazily, when a value is first asked for after a change.

Modes (:class:`LearnerMode`):
- ``identity``: no content features (sigma_b2 = 0).
- ``content``: features z_h = first ``n_components`` principal components of
  the experiences' embeddings, standardised.
- ``auto``: fits both and predicts with the one whose frozen predictions
  scored better prequentially (higher mean score), once each has at least
  ``min_auto_scores`` scores; before that it predicts with ``identity``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit import CentredRecords, ContributionRecord, centre_arrays, centre_by_date
from memtrial.errors import ConfigError, InputError, LifecycleError, StateError, parse_choice
from memtrial.fayherriot import FayHerriotFit, fit_fay_herriot

__all__ = [
    "BayesLearner",  # noqa: F822 - provided lazily by __getattr__ (memtrial.bayes)
    "EmpiricalBayesLearner",
    "ValueFit",
    "auto_prefers_content",
    "degenerate_fit",
    "LearnerMode",
    "refit_mode",
    "MIN_AUTO_SCORES",
    "CreditBasis",
    "RunningStatistics",
    "SufficientStatistics",
    "ValuePosterior",
    "content_features",
    "hierarchical_normal_means",  # noqa: F822 - provided lazily by __getattr__ (memtrial.bayes)
    "sufficient_statistics",
]


def __getattr__(name: str) -> object:
    """The full-Bayes names live in :mod:`memtrial.bayes` (JAX/NumPyro load only when used)."""
    if name in ("BayesLearner", "hierarchical_normal_means", "BayesPosterior"):
        from memtrial import bayes

        return getattr(bayes, name)
    raise AttributeError(f"module 'memtrial.values' has no attribute {name!r}")


DEFAULT_COMPONENTS = 8
MIN_AUTO_SCORES = 10

Record = ContributionRecord | tuple[Hashable, Hashable, float]
# content features (PCA of the embeddings) by features, shared by learners that hold the same embeddings
_CONTENT_CACHE: OrderedDict[
    tuple[object, ...], tuple[tuple[Hashable, ...], NDArray[np.float64], dict[Hashable, NDArray[np.float64]]]
] = OrderedDict()
_CONTENT_CACHE_SIZE = 8


class LearnerMode(StrEnum):
    IDENTITY = "identity"
    CONTENT = "content"
    AUTO = "auto"


def refit_mode(mode: LearnerMode | str) -> LearnerMode:
    """The mode a full-Bayes refit of a learner in ``mode`` fits: ``auto`` refits ``content`` (whose prior
    on the content weight lets the data switch content off); ``identity`` and ``content`` refit themselves."""
    learner_mode = parse_choice(LearnerMode, mode, "mode")
    return LearnerMode.CONTENT if learner_mode is LearnerMode.AUTO else learner_mode


class ValuePosterior(NamedTuple):
    """Posterior mean and standard deviation of an experience's value (utility units)."""

    mean: float
    sd: float


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
        if not all(np.isfinite(v) for v in values):
            raise InputError("contributions must be finite", field="contributions")
        date_mean = sum(values) / len(values) if self.centre else 0.0
        ys = [value - date_mean for value in values]
        if not all(np.isfinite(y) for y in ys):
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
        for experience_id, y in zip(experience_ids, ys, strict=True):
            row = self._row(experience_id)
            count = int(self.counts[row])
            old_mean = self.sums[row] / count if count else 0.0
            self.counts[row] = count + 1
            self.sums[row] += y
            self.m2[row] += (y - old_mean) * (y - self.sums[row] / (count + 1))
            self.total += y
            self.total_sq += y * y
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


@dataclass(frozen=True, slots=True)
class ValueFit:
    """One mode's fit in utility units, with the lookup from id to row."""

    index: Mapping[Hashable, int]
    counts: NDArray[np.int64]
    scale: float
    model: FayHerriotFit
    features: Mapping[Hashable, NDArray[np.float64]]
    observed: NDArray[np.float64] | None = None  # m_h in units of s, for the variance of the estimated tau2
    design: NDArray[np.float64] | None = None  # z_h in the rows' order

    def posterior(self, experience_id: Hashable, hyper: bool = False) -> ValuePosterior:
        """The plug-in posterior at the fitted (sigma_b2, tau2); ``hyper`` adds the variance of estimating tau2."""
        row = self.index.get(experience_id)
        if row is not None:
            variance = float(self.model.variance[row]) + (self._hyper_variance(row) if hyper else 0.0)
            return ValuePosterior(float(self.model.mean[row] * self.scale), float(np.sqrt(variance) * self.scale))
        z = self.features.get(experience_id)
        variance = self.model.tau2
        mean = 0.0
        if z is not None and z.size:
            mean = float(z @ self.model.beta)
            variance += float(z @ self.model.beta_cov @ z)
        return ValuePosterior(mean * self.scale, float(np.sqrt(variance) * self.scale))

    def _hyper_variance(self, row: int) -> float:
        """What the plug-in posterior variance leaves out: the uncertainty of the estimated tau2.

        At tau2 = 0 the plug-in posterior is a point (sd 0) however scattered
        the contributions are. Morris's (1983) correction adds
        ``2 / (H - p - 2) * B**2 * max((m - z'beta)**2, 1/n)`` with the
        shrinkage ``B = (1/n) / (tau2 + 1/n)`` (denominator at least 1), which
        is positive for every experience with data and vanishes as B -> 0.
        Reported sds only: posterior means, and so every decision, are unchanged.
        """
        if self.observed is None:
            return 0.0
        n = float(self.counts[row])
        sampling = 1.0 / n
        shrinkage = sampling / (float(self.model.tau2) + sampling)
        prior = 0.0 if self.design is None or self.design.shape[1] == 0 else float(self.design[row] @ self.model.beta)
        spread = max((float(self.observed[row]) - prior) ** 2, sampling)
        dof = max(self.observed.shape[0] - self.model.beta.shape[0] - 2, 1)
        return float(2.0 / dof * shrinkage * shrinkage * spread)


def auto_prefers_content(counts: ArrayLike, totals: ArrayLike, minimum: int = MIN_AUTO_SCORES) -> NDArray[np.bool_]:
    """The ``auto`` mode's choice at each moment: content once both modes have ``minimum`` scores and
    content's mean score is the higher. counts, totals: (..., 2), identity then content; returns (...)."""
    count = np.asarray(counts)
    total = np.asarray(totals, dtype=np.float64)
    enough = count.min(axis=-1) >= minimum
    with np.errstate(divide="ignore", invalid="ignore"):
        better = total[..., 1] / count[..., 1] > total[..., 0] / count[..., 0]
    return np.asarray(enough & better, dtype=bool)


class _ModeScores:
    """Running count and sum of one mode's prequential scores."""

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: float = 0.0) -> None:
        self.count, self.total = count, total

    @property
    def mean(self) -> float:
        return self.total / self.count


class EmpiricalBayesLearner:
    """Pooled value of each experience from its same-day contributions.

    Parameters
    ----------
    mode : "identity", "content" or "auto".
    features : mapping experience id -> embedding vector (d,), all of one d.
        Experiences without features count as average content (z = 0).
    n_components : principal components kept (None: use the vectors as given,
        only standardised).
    min_auto_scores : scores each mode needs before ``auto`` compares them.
    centre : learn from date-centred contributions (the default: relative
        values) or, with False, from the raw same-day contrasts (absolute
        values: what including an experience adds to a draft).
    robust : screen every date through an :class:`OutlierGuard` (one
        implausible settlement cannot dominate or zero the values).
    """

    def __init__(
        self,
        mode: LearnerMode | str = LearnerMode.IDENTITY,
        features: Mapping[Hashable, ArrayLike] | None = None,
        n_components: int | None = DEFAULT_COMPONENTS,
        min_auto_scores: int = MIN_AUTO_SCORES,
        centre: bool = True,
        robust: bool = False,
    ) -> None:
        self.mode = parse_choice(LearnerMode, mode, "mode")
        if n_components is not None and (isinstance(n_components, bool) or n_components < 1):
            raise ConfigError(f"n_components must be >= 1 or None, got {n_components!r}", field="n_components")
        if min_auto_scores < 1:
            raise ConfigError(f"min_auto_scores must be >= 1, got {min_auto_scores!r}", field="min_auto_scores")
        self.n_components = n_components
        self.min_auto_scores = min_auto_scores
        self.centre = centre
        self.robust = robust
        self.features: dict[Hashable, NDArray[np.float64]] = {}
        self.statistics = self._empty_statistics()
        self.mode_scores: dict[LearnerMode, _ModeScores] = {
            LearnerMode.IDENTITY: _ModeScores(),
            LearnerMode.CONTENT: _ModeScores(),
        }
        self._fits: dict[LearnerMode, ValueFit] = {}
        self._stale = False
        self._content_cache: tuple[int, dict[Hashable, NDArray[np.float64]]] | None = None
        self._aligned: tuple[int, tuple[Hashable, ...], NDArray[np.float64]] | None = None
        self._features_version = 0
        self._features_hash: tuple[int, int] | None = None
        for experience_id, vector in (features or {}).items():
            self.add_features(experience_id, vector)

    # -- features ---------------------------------------------------------
    def add_features(self, experience_id: Hashable, vector: ArrayLike) -> None:
        """Set the embedding of one experience (used by ``content`` and ``auto``)."""
        array = np.asarray(vector, dtype=np.float64)
        if array.ndim != 1 or not np.all(np.isfinite(array)):
            raise InputError(f"features of {experience_id!r} must be a finite 1-d vector", field="features")
        dims = {existing.shape[0] for existing in self.features.values()}
        if dims and array.shape[0] not in dims:
            raise InputError(
                f"features of {experience_id!r} have {array.shape[0]} dimensions, expected {dims.pop()}",
                field="features",
            )
        self.features[experience_id] = array
        self._features_changed()

    def remove_features(self, experience_id: Hashable) -> None:
        if self.features.pop(experience_id, None) is not None:
            self._features_changed()

    def _features_changed(self) -> None:
        self._features_version += 1
        if self.mode is not LearnerMode.IDENTITY:
            self._stale = True

    def content_vectors(self) -> dict[Hashable, NDArray[np.float64]]:
        """Content features z of every experience with an embedding (cached).

        Learners holding identical embeddings (ablations of one agent) share
        one PCA through a small per-process cache, checked for exact equality.
        """
        if self._content_cache is None or self._content_cache[0] != self._features_version:
            ids = tuple(self.features)
            matrix = np.array([self.features[i] for i in ids]) if ids else np.zeros((0, 0))
            key = (self.n_components, self._features_key())
            shared = _CONTENT_CACHE.get(key)
            if shared is not None and shared[0] == ids and np.array_equal(shared[1], matrix):
                vectors = shared[2]
            else:
                vectors = dict(zip(ids, content_features(matrix, self.n_components), strict=True))
                _CONTENT_CACHE[key] = (ids, matrix, vectors)
                while len(_CONTENT_CACHE) > _CONTENT_CACHE_SIZE:
                    _CONTENT_CACHE.popitem(last=False)
            self._content_cache = (self._features_version, dict(vectors))
        return self._content_cache[1]

    def _features_key(self) -> tuple[int, int]:
        if self._features_hash is None or self._features_hash[0] != self._features_version:
            digest = hash(tuple((key, vector.tobytes()) for key, vector in self.features.items()))
            self._features_hash = (self._features_version, digest)
        return self._features_hash

    def _empty_statistics(self) -> RunningStatistics:
        return RunningStatistics(self.centre, OutlierGuard() if self.robust else None)

    @property
    def dates_set_aside(self) -> int:
        """Dates the outlier guard has set aside (0 for a learner that is not robust)."""
        guard = self.statistics.guard
        return 0 if guard is None else guard.set_aside

    # -- learning ---------------------------------------------------------
    def update(self, date: Hashable, contributions: Mapping[Any, float]) -> EmpiricalBayesLearner:
        """Learn from one new date: its contributions, one per experience; returns self.

        Only this date's records are touched. Each date must be given once
        (the engine guarantees it: one date per decision).
        """
        if self.statistics.add_date(contributions):
            self._stale = True
        return self

    def fit(self, records: Iterable[Record]) -> EmpiricalBayesLearner:
        """Replace what was learnt with the statistics of ``records``; returns self.

        records: (date, experience_id, contribution) tuples or
        :class:`~memtrial.credit.ContributionRecord` s, in any order.
        """
        if self.robust:  # the guard screens dates in the order they were learnt
            by_date: dict[Hashable, dict[Hashable, float]] = {}
            for record in records:
                date, experience_id, contribution = (
                    (record.date, record.experience_id, record.contribution)
                    if isinstance(record, ContributionRecord)
                    else record
                )
                by_date.setdefault(date, {})[experience_id] = float(contribution)
            self.statistics = self._empty_statistics()
            for contributions in by_date.values():
                self.statistics.add_date(contributions)
        else:
            self.statistics = RunningStatistics.from_records(records, self.centre)
        self._stale = True
        self._refit()
        return self

    def fit_arrays(
        self, dates: ArrayLike, experience_ids: ArrayLike, contributions: ArrayLike
    ) -> EmpiricalBayesLearner:
        """:meth:`fit` on records given as three aligned arrays (N,); returns self."""
        if self.robust:
            return self.fit(
                zip(
                    np.asarray(dates).tolist(),
                    np.asarray(experience_ids).tolist(),
                    np.asarray(contributions, dtype=np.float64).tolist(),
                    strict=True,
                )
            )
        self.statistics = RunningStatistics.from_arrays(dates, experience_ids, contributions, self.centre)
        self._stale = True
        self._refit()
        return self

    @property
    def fits_(self) -> dict[LearnerMode, ValueFit]:
        """The fitted model of every mode (refitted if anything changed)."""
        self._refit()
        return self._fits

    @property
    def is_fitted(self) -> bool:
        return self.statistics.n_records > 0

    @property
    def has_noise_scale(self) -> bool:
        """Whether the contributions learnt so far give a noise scale s > 0 (some are not all 0)."""
        return any(fit.scale > 0.0 for fit in self.fits_.values())

    def _modes(self) -> tuple[LearnerMode, ...]:
        if self.mode is LearnerMode.AUTO:
            return (LearnerMode.IDENTITY, LearnerMode.CONTENT)
        return (self.mode,)

    def _refit(self) -> None:
        if not self._stale:
            return
        self._stale = False
        self._fits = {}
        stats = self.statistics.snapshot()
        if stats is None:
            return
        index = self.statistics.index
        counts = stats.counts.astype(np.float64)
        for mode in self._modes():
            vectors = self.content_vectors() if mode is LearnerMode.CONTENT else {}
            z = (
                self._aligned_features(stats.experience_ids)
                if mode is LearnerMode.CONTENT
                else np.zeros((len(stats.experience_ids), 0))
            )
            if stats.scale > 0.0:
                model = fit_fay_herriot(stats.means / stats.scale, counts, z)
            else:
                model = degenerate_fit(len(stats.experience_ids), z.shape[1])
            observed = stats.means / stats.scale if stats.scale > 0.0 else None
            self._fits[mode] = ValueFit(index, stats.counts, stats.scale, model, vectors, observed, z)

    def _aligned_features(self, ids: tuple[Hashable, ...]) -> NDArray[np.float64]:
        """(H, p) content features in the statistics' row order (z = 0 without an embedding).

        The matrix is kept with the ids it was built for and extended while
        those ids stay a prefix of the statistics' (rows are only ever
        appended; a refit from the same records keeps the order) and the
        features do not change.
        """
        cached = self._aligned
        if (
            cached is not None
            and cached[0] == self._features_version
            and len(cached[1]) <= len(ids)
            and ids[: len(cached[1])] == cached[1]
        ):
            matrix = cached[2]
        else:
            matrix = np.zeros((0, 0))
        if matrix.shape[0] < len(ids):
            vectors = self.content_vectors()
            dim = next((v.shape[0] for v in vectors.values()), 0)
            if matrix.shape[0] == 0:
                matrix = np.zeros((0, dim))
            rows = [vectors.get(i) for i in ids[matrix.shape[0] :]]
            extra = np.array([np.zeros(dim) if row is None else row for row in rows], dtype=np.float64).reshape(
                len(rows), dim
            )
            matrix = np.vstack([matrix, extra]) if matrix.shape[0] else extra
            self._aligned = (self._features_version, tuple(ids), matrix)
        return matrix

    # -- prequential scores (auto mode) --------------------------------------
    @property
    def selected_mode(self) -> LearnerMode:
        """The mode whose predictions ``predict`` returns."""
        if self.mode is not LearnerMode.AUTO:
            return self.mode
        identity, content = self.mode_scores[LearnerMode.IDENTITY], self.mode_scores[LearnerMode.CONTENT]
        counts = np.array([[identity.count, content.count]])
        totals = np.array([[identity.total, content.total]])
        return (
            LearnerMode.CONTENT
            if bool(auto_prefers_content(counts, totals, self.min_auto_scores)[0])
            else LearnerMode.IDENTITY
        )

    def record_score(self, mode: LearnerMode | str, score: float) -> None:
        """Add a prequential score of ``mode``'s frozen predictions (for ``auto``)."""
        key = LearnerMode(mode)
        if key is LearnerMode.AUTO or not np.isfinite(score):
            raise InputError(f"score needs mode identity or content and a finite value, got {mode!r}, {score!r}")
        self.mode_scores[key].count += 1
        self.mode_scores[key].total += float(score)

    # -- prediction -------------------------------------------------------
    def predict(self, experience_id: Hashable, mode: LearnerMode | str | None = None) -> float:
        """Posterior mean value (utility units); 0, the prior mean, before any fit."""
        return self._posterior(experience_id, mode).mean if self.is_fitted else 0.0

    def predict_modes(self, experience_ids: Iterable[Hashable]) -> dict[LearnerMode, tuple[float, ...]]:
        """Predictions of every mode this learner fits, for frozen registration."""
        ids = tuple(experience_ids)
        return {mode: tuple(self.predict(i, mode) for i in ids) for mode in self._modes()}

    def posterior(self, experience_id: Hashable, mode: LearnerMode | str | None = None) -> ValuePosterior:
        """Plug-in posterior (mean, sd) in utility units, at the fitted variances. Requires a fit."""
        if not self.is_fitted:
            raise LifecycleError("the learner has no centred records yet: fit it on dates with >= 2 experiences")
        return self._posterior(experience_id, mode)

    def reported_posterior(self, experience_id: Hashable, mode: LearnerMode | str | None = None) -> ValuePosterior:
        """(mean, sd) as reported to people: the sd adds the uncertainty of the estimated tau2
        (Morris's correction), so a learnt value never reads sd 0 because tau2 was estimated at 0."""
        if not self.is_fitted:
            raise LifecycleError("the learner has no centred records yet: fit it on dates with >= 2 experiences")
        key = self.selected_mode if mode is None else LearnerMode(mode)
        self._posterior(experience_id, key)
        return self.fits_[key].posterior(experience_id, hyper=True)

    def count(self, experience_id: Hashable) -> int:
        """Number of dates the experience has a centred contribution on."""
        row = self.statistics.index.get(experience_id)
        return 0 if row is None else int(self.statistics.counts[row])

    def _posterior(self, experience_id: Hashable, mode: LearnerMode | str | None) -> ValuePosterior:
        key = self.selected_mode if mode is None else LearnerMode(mode)
        fits = self.fits_
        if key not in fits:
            raise InputError(f"mode {key.value!r} is not fitted by a {self.mode.value!r} learner", field="mode")
        return fits[key].posterior(experience_id)

    # -- state ------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """What the learner has learnt (features excluded): O(experiences)."""
        return {
            "statistics": self.statistics.to_dict(),
            "mode_scores": {mode.value: [scores.count, scores.total] for mode, scores in self.mode_scores.items()},
        }

    def load_state_dict(self, data: Mapping[str, Any]) -> None:
        statistics = RunningStatistics.from_dict(data["statistics"])
        if (statistics.guard is not None) != self.robust:
            raise StateError(
                f"the learner's statistics are {'' if statistics.guard is not None else 'not '}screened for outliers; the learner expects {'' if self.robust else 'no '}screening",
                field="learner",
            )
        if statistics.centre != self.centre:
            raise StateError(
                f"the learner's statistics are {'centred' if statistics.centre else 'raw'}, the learner expects {'centred' if self.centre else 'raw'}",
                field="learner",
            )
        self.statistics = statistics
        self._aligned = None
        for mode, (count, total) in data["mode_scores"].items():
            self.mode_scores[LearnerMode(mode)] = _ModeScores(int(count), float(total))
        self._stale = True


def degenerate_fit(n_experiences: int, n_features: int) -> FayHerriotFit:
    """All centred contributions are zero: every value is exactly zero."""
    return FayHerriotFit(
        sigma_b2=0.0,
        tau2=0.0,
        log_likelihood=float("nan"),
        mean=np.zeros(n_experiences),
        variance=np.zeros(n_experiences),
        beta=np.zeros(n_features),
        beta_cov=np.zeros((n_features, n_features)),
    )
