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

(or the plain variance of all y when that denominator or the ratio is not positive), and
fits the Fay–Herriot model of :mod:`memtrial.values.fayherriot` in units of s. Fits
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
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit.banzhaf import ContributionRecord
from memtrial.errors import ConfigError, InputError, LifecycleError, StateError, parse_choice
from memtrial.values.fayherriot import FayHerriotFit, SpectraCache, fit_many, stack_problems
from memtrial.values.statistics import (
    DEFAULT_COMPONENTS,
    LearnerMode,
    OutlierGuard,
    Record,
    RunningStatistics,
    SufficientStatistics,
    content_features,
)

__all__ = [
    "MIN_AUTO_SCORES",
    "EmpiricalBayesLearner",
    "ValueFit",
    "ValuePosterior",
    "auto_prefers_content",
    "degenerate_fit",
    "refit_learners",
    "row_products",
    "row_quadratics",
    "selected_modes",
]


MIN_AUTO_SCORES = 10

# content features (PCA of the embeddings) by features, shared by learners that hold the same embeddings
_CONTENT_CACHE: OrderedDict[
    tuple[object, ...], tuple[tuple[Hashable, ...], NDArray[np.float64], dict[Hashable, NDArray[np.float64]]]
] = OrderedDict()
_CONTENT_CACHE_SIZE = 8


class ValuePosterior(NamedTuple):
    """Posterior mean and standard deviation of an experience's value (utility units)."""

    mean: float
    sd: float


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
        means, sds = self.posteriors([experience_id], hyper)
        return ValuePosterior(float(means[0]), float(sds[0]))

    def posteriors(
        self, experience_ids: Sequence[Hashable], hyper: bool = False
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """:meth:`posterior` of each of ``experience_ids`` at once: (means, sds), each (len,) in utility units.

        A learnt experience reads its row of the fit; one the fit has no row for is predicted from its
        features (z'beta, variance tau2 + z' cov(beta) z), or as the prior mean 0 with variance tau2 without
        them. Each value is computed exactly as for the experience alone (:func:`row_products`)."""
        size = len(experience_ids)
        rows = np.fromiter((self.index.get(e, -1) for e in experience_ids), dtype=np.int64, count=size)
        known = rows >= 0
        means = np.empty(size)
        variances = np.empty(size)
        at = rows[known]
        means[known] = self.model.mean[at] * self.scale
        variances[known] = self.model.variance[at] + self._hyper_variances(at) if hyper else self.model.variance[at]
        if not known.all():
            p = self.model.beta.shape[0]
            missing = [e for e, seen in zip(experience_ids, known.tolist(), strict=True) if not seen]
            vectors = [self.features.get(e) for e in missing]
            has = np.array([z is not None and z.size > 0 for z in vectors], dtype=bool)
            z = np.array([z if ok else np.zeros(p) for z, ok in zip(vectors, has.tolist(), strict=True)]).reshape(
                len(missing), p
            )
            mean = np.where(has, row_products(z, self.model.beta), 0.0)
            variance = np.where(has, self.model.tau2 + row_quadratics(z, self.model.beta_cov), self.model.tau2)
            means[~known] = mean * self.scale
            variances[~known] = variance
        return means, np.sqrt(variances) * self.scale

    def _hyper_variances(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """What the plug-in posterior variance leaves out, per row: the uncertainty of the estimated tau2.

        At tau2 = 0 the plug-in posterior is a point (sd 0) however scattered
        the contributions are. Morris's (1983) correction adds
        ``2 / (H - p - 2) * B**2 * max((m - z'beta)**2, 1/n)`` with the
        shrinkage ``B = (1/n) / (tau2 + 1/n)`` (denominator at least 1), which
        is positive for every experience with data and vanishes as B -> 0.
        Reported sds only: posterior means, and so every decision, are unchanged.
        """
        if self.observed is None:
            return np.zeros(rows.shape[0])
        sampling = 1.0 / self.counts[rows].astype(np.float64)
        shrinkage = sampling / (float(self.model.tau2) + sampling)
        if self.design is None or self.design.shape[1] == 0:
            prior = np.zeros(rows.shape[0])
        else:
            prior = row_products(self.design[rows], self.model.beta)
        difference = self.observed[rows] - prior
        spread = np.maximum(difference * difference, sampling)
        dof = max(self.observed.shape[0] - self.model.beta.shape[0] - 2, 1)
        return np.asarray(2.0 / dof * shrinkage * shrinkage * spread, dtype=np.float64)


def row_products(rows: NDArray[np.float64], vector: NDArray[np.float64]) -> NDArray[np.float64]:
    """``rows @ vector`` (R, p) x (p,) -> (R,), the p products added one after another, so a row's value
    does not depend on the rows computed with it (a learner's one experience and a batch agree bit for bit)."""
    total = np.zeros(rows.shape[0])
    for j in range(rows.shape[1]):
        total = total + rows[:, j] * vector[j]
    return total


def row_quadratics(rows: NDArray[np.float64], matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """``z' M z`` for each row z of ``rows`` (R, p), M (p, p): :func:`row_products` of ``rows @ M`` with the
    rows, the products added one after another."""
    product = np.zeros(rows.shape)
    for j in range(rows.shape[1]):
        product = product + rows[:, j, None] * matrix[j][None, :]
    return row_products(product * rows, np.ones(rows.shape[1]))


def auto_prefers_content(
    counts: ArrayLike, totals: ArrayLike, minimum: int | ArrayLike = MIN_AUTO_SCORES
) -> NDArray[np.bool_]:
    """The ``auto`` mode's choice at each moment: content once both modes have ``minimum`` scores and
    content's mean score is the higher. counts, totals: (..., 2), identity then content; returns (...);
    ``minimum`` broadcasts against (...)."""
    count = np.asarray(counts)
    total = np.asarray(totals, dtype=np.float64)
    enough = count.min(axis=-1) >= minimum
    with np.errstate(divide="ignore", invalid="ignore"):
        better = total[..., 1] / count[..., 1] > total[..., 0] / count[..., 0]
    return np.asarray(enough & better, dtype=bool)


def selected_modes(learners: Sequence[EmpiricalBayesLearner]) -> list[LearnerMode]:
    """:attr:`EmpiricalBayesLearner.selected_mode` of each of ``learners`` (many worlds' at once): its own mode,
    or under ``auto`` content once both modes have its ``min_auto_scores`` scores and content's mean is higher."""
    auto = [at for at, learner in enumerate(learners) if learner.mode is LearnerMode.AUTO]
    modes = [learner.mode for learner in learners]
    if auto:
        scores = [learners[at].mode_scores for at in auto]
        counts = np.array([[s[LearnerMode.IDENTITY].count, s[LearnerMode.CONTENT].count] for s in scores])
        totals = np.array([[s[LearnerMode.IDENTITY].total, s[LearnerMode.CONTENT].total] for s in scores])
        minimum = np.array([learners[at].min_auto_scores for at in auto])
        for at, content in zip(auto, auto_prefers_content(counts, totals, minimum).tolist(), strict=True):
            modes[at] = LearnerMode.CONTENT if content else LearnerMode.IDENTITY
    return modes


class _ModeScores:
    """Running count and sum of one mode's prequential scores."""

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: float = 0.0) -> None:
        self.count, self.total = count, total

    @property
    def mean(self) -> float:
        return self.total / self.count


def checked_features(
    held: Mapping[Hashable, NDArray[np.float64]], experience_id: Hashable, vector: ArrayLike, field: str
) -> NDArray[np.float64]:
    """One experience's embedding as a learner keeps it: a finite 1-d vector of the length the ``held`` ones
    have; an InputError naming ``field`` otherwise."""
    array = np.asarray(vector, dtype=np.float64)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise InputError(f"{field} of {experience_id!r} must be a finite 1-d vector", field=field)
    dims = {existing.shape[0] for existing in held.values()}
    if dims and array.shape[0] not in dims:
        raise InputError(
            f"{field} of {experience_id!r} has {array.shape[0]} dimensions, expected {dims.pop()}", field=field
        )
    return array


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
    def add_features(self, experience_id: Hashable, vector: ArrayLike, field: str = "features") -> None:
        """Set the embedding of one experience (used by ``content`` and ``auto``); an error names ``field``."""
        self.features[experience_id] = checked_features(self.features, experience_id, vector, field)
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
        :class:`~memtrial.credit.banzhaf.ContributionRecord` s, in any order.
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
        if self._stale:
            refit_learners([self])

    def _problems(self) -> list[_Problem]:
        """The fits a refit makes now, one per mode (none before any record); marks the learner fresh."""
        self._stale = False
        self._fits = {}
        stats = self.statistics.snapshot()
        if stats is None:
            return []
        problems = []
        for mode in self._modes():
            vectors = self.content_vectors() if mode is LearnerMode.CONTENT else {}
            z = (
                self._aligned_features(stats.experience_ids)
                if mode is LearnerMode.CONTENT
                else np.zeros((len(stats.experience_ids), 0))
            )
            problems.append(_Problem(self, mode, stats, vectors, z))
        return problems

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
        return selected_modes([self])[0]

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
        """Predictions of every mode this learner fits, for frozen registration (each as :meth:`predict`)."""
        ids = tuple(experience_ids)
        if not self.is_fitted:
            return {mode: (0.0,) * len(ids) for mode in self._modes()}
        fits = self.fits_
        return {mode: tuple(fits[mode].posteriors(ids)[0].tolist()) for mode in self._modes()}

    def predictions(self, experience_ids: Sequence[Hashable]) -> list[float]:
        """:meth:`predict` of each of ``experience_ids`` in the selected mode (the fit read once)."""
        if not self.is_fitted:
            return [0.0] * len(experience_ids)
        return self.fits_[self.selected_mode].posteriors(experience_ids)[0].tolist()  # type: ignore[no-any-return]

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

    def reported_posteriors(self, experience_ids: Iterable[Hashable]) -> list[ValuePosterior]:
        """:meth:`reported_posterior` of each experience in the selected mode, the mode chosen once."""
        if not self.is_fitted:
            raise LifecycleError("the learner has no centred records yet: fit it on dates with >= 2 experiences")
        key = self.selected_mode
        fits = self.fits_
        if key not in fits:
            raise InputError(f"mode {key.value!r} is not fitted by a {self.mode.value!r} learner", field="mode")
        means, sds = fits[key].posteriors(list(experience_ids), hyper=True)
        return [ValuePosterior(mean, sd) for mean, sd in zip(means.tolist(), sds.tolist(), strict=True)]

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


@dataclass(frozen=True, slots=True)
class _Problem:
    """One mode's fit a learner's refit needs: its statistics, content vectors and features in row order."""

    learner: EmpiricalBayesLearner
    mode: LearnerMode
    stats: SufficientStatistics
    vectors: dict[Hashable, NDArray[np.float64]]
    z: NDArray[np.float64]

    def install(self, model: FayHerriotFit) -> None:
        stats = self.stats
        observed = stats.means / stats.scale if stats.scale > 0.0 else None
        index = self.learner.statistics.index
        self.learner._fits[self.mode] = ValueFit(
            index, stats.counts, stats.scale, model, self.vectors, observed, self.z
        )


def refit_learners(learners: Sequence[EmpiricalBayesLearner], cache: SpectraCache | None = None) -> None:
    """Refit every stale learner of ``learners`` (many agents', or many backtest worlds') at once: one
    :func:`~memtrial.values.fayherriot.fit_many` call per number of features, each learner getting exactly
    the fits it gets alone (``fit_many`` fits each problem as :func:`fit_fay_herriot` does; ``cache`` keeps
    eigendecompositions that problems with equal counts and features share)."""
    by_features: dict[int, list[_Problem]] = {}
    for learner in learners:
        if not learner._stale:
            continue
        for problem in learner._problems():
            if problem.stats.scale > 0.0:
                by_features.setdefault(problem.z.shape[1], []).append(problem)
            else:
                problem.install(degenerate_fit(len(problem.stats.experience_ids), problem.z.shape[1]))
    for dim, problems in by_features.items():
        m, n, z, sizes = stack_problems(
            [(p.stats.means / p.stats.scale, p.stats.counts.astype(np.float64), p.z) for p in problems], dim
        )
        batch = fit_many(m, n, z, sizes=sizes, cache=cache)
        for row, (problem, size) in enumerate(zip(problems, sizes.tolist(), strict=True)):
            problem.install(batch.fit(row, size))
    for learner in learners:  # each learner's fits in the order of its modes
        learner._fits = {mode: learner._fits[mode] for mode in learner._modes() if mode in learner._fits}


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
