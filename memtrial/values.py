"""Experience values: the empirical-Bayes Fay–Herriot learner (SPEC 4.4).

``EmpiricalBayesLearner.fit(records)`` takes (date, experience_id,
contribution) records, averages repeats of a (date, experience), centres each
date, reduces to per-experience means ``m_h`` and counts ``n_h``, estimates
the noise scale

    s2 = sum_h sum_t (y[t,h] - m_h)**2 / (N - H - (S - 1))

(or the plain variance of all y when that denominator is not positive), and
fits the Fay–Herriot model of :mod:`memtrial.fayherriot` in units of s.

Modes (:class:`LearnerMode`):
- ``identity``: no content features (sigma_b2 = 0).
- ``content``: features z_h = first ``n_components`` principal components of
  the experiences' embeddings, standardised.
- ``auto``: fits both and predicts with the one whose frozen predictions
  scored better prequentially, once each has at least ``min_auto_scores``
  scores; before that it predicts with ``identity``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.credit import ContributionRecord, centre_by_date
from memtrial.errors import ConfigError, InputError, LifecycleError, parse_choice
from memtrial.fayherriot import FayHerriotFit, fit_fay_herriot

__all__ = [
    "BayesLearner",
    "EmpiricalBayesLearner",
    "LearnerMode",
    "SufficientStatistics",
    "ValuePosterior",
    "content_features",
    "hierarchical_normal_means",
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
_FIT_CACHE: OrderedDict[tuple[object, ...], tuple[tuple[tuple[Hashable, Hashable, float], ...], dict[LearnerMode, _Fit]]] = OrderedDict()
_FIT_CACHE_SIZE = 32
# content features (PCA of the embeddings) by features, shared by learners that hold the same embeddings
_CONTENT_CACHE: OrderedDict[tuple[object, ...], tuple[tuple[Hashable, ...], NDArray[np.float64], dict[Hashable, NDArray[np.float64]]]] = OrderedDict()
_CONTENT_CACHE_SIZE = 8


class LearnerMode(StrEnum):
    IDENTITY = "identity"
    CONTENT = "content"
    AUTO = "auto"


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


def sufficient_statistics(records: Iterable[Record]) -> SufficientStatistics | None:
    """Centre by date, then reduce to per-experience statistics; None without centred records.

    s2 = residual_ss / dof when dof > 0 and that is positive, else the plain
    variance of all centred contributions (SPEC 4.4).
    """
    centred = centre_by_date(records)
    if centred.n_records == 0:
        return None
    n_experiences = len(centred.experience_ids)
    counts = np.bincount(centred.experience_index, minlength=n_experiences)
    seen = np.flatnonzero(counts)
    sums = np.bincount(centred.experience_index, weights=centred.y, minlength=n_experiences)
    means = sums[seen] / counts[seen]
    row_of = np.full(n_experiences, -1)
    row_of[seen] = np.arange(seen.size)
    residual = centred.y - means[row_of[centred.experience_index]]
    n_dates = np.unique(centred.date_index).size
    dof = int(centred.n_records - seen.size - (n_dates - 1))
    residual_ss = float(residual @ residual)
    s2 = residual_ss / dof if dof > 0 else 0.0
    if s2 <= 0.0:
        s2 = float(centred.y.var())
    return SufficientStatistics(
        experience_ids=tuple(centred.experience_ids[h] for h in seen),
        means=means,
        counts=counts[seen],
        residual_ss=residual_ss,
        dof=dof,
        scale=float(np.sqrt(s2)),
    )


@dataclass(frozen=True, slots=True)
class _Fit:
    """One mode's fit in utility units, with the lookup from id to row."""

    index: Mapping[Hashable, int]
    counts: NDArray[np.int64]
    scale: float
    model: FayHerriotFit
    features: Mapping[Hashable, NDArray[np.float64]]

    def posterior(self, experience_id: Hashable) -> ValuePosterior:
        row = self.index.get(experience_id)
        if row is not None:
            return ValuePosterior(
                float(self.model.mean[row] * self.scale), float(np.sqrt(self.model.variance[row]) * self.scale)
            )
        z = self.features.get(experience_id)
        variance = self.model.tau2
        mean = 0.0
        if z is not None and z.size:
            mean = float(z @ self.model.beta)
            variance += float(z @ self.model.beta_cov @ z)
        return ValuePosterior(mean * self.scale, float(np.sqrt(variance) * self.scale))


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
    """

    def __init__(
        self,
        mode: LearnerMode | str = LearnerMode.IDENTITY,
        features: Mapping[Hashable, ArrayLike] | None = None,
        n_components: int | None = DEFAULT_COMPONENTS,
        min_auto_scores: int = MIN_AUTO_SCORES,
    ) -> None:
        self.mode = parse_choice(LearnerMode, mode, "mode")
        if n_components is not None and (isinstance(n_components, bool) or n_components < 1):
            raise ConfigError(f"n_components must be >= 1 or None, got {n_components!r}", field="n_components")
        if min_auto_scores < 1:
            raise ConfigError(f"min_auto_scores must be >= 1, got {min_auto_scores!r}", field="min_auto_scores")
        self.n_components = n_components
        self.min_auto_scores = min_auto_scores
        self.features: dict[Hashable, NDArray[np.float64]] = {}
        self.scores: dict[LearnerMode, list[float]] = {LearnerMode.IDENTITY: [], LearnerMode.CONTENT: []}
        self.fits_: dict[LearnerMode, _Fit] = {}
        self._content_cache: tuple[int, dict[Hashable, NDArray[np.float64]]] | None = None
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
        self._features_version += 1

    def remove_features(self, experience_id: Hashable) -> None:
        if self.features.pop(experience_id, None) is not None:
            self._features_version += 1

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

    # -- fitting ----------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return bool(self.fits_)

    def _modes(self) -> tuple[LearnerMode, ...]:
        if self.mode is LearnerMode.AUTO:
            return (LearnerMode.IDENTITY, LearnerMode.CONTENT)
        return (self.mode,)

    def fit(self, records: Iterable[Record]) -> EmpiricalBayesLearner:
        """Fit every mode this learner needs from all ``records``; returns self.

        A fit is a pure function of the records, the mode and the features, so
        learners fed the same records (ablations that share their history) reuse
        one another's fits from a small per-process cache; equality of the
        records is checked exactly, not by hash alone.
        """
        frozen = tuple(r if isinstance(r, tuple) else (r.date, r.experience_id, r.contribution) for r in records)
        key = (self.mode, self.n_components, self._features_key(), hash(frozen))
        cached = _FIT_CACHE.get(key)
        if cached is not None and cached[0] == frozen:
            self.fits_ = dict(cached[1])
            return self
        self._fit(frozen)
        _FIT_CACHE[key] = (frozen, dict(self.fits_))
        while len(_FIT_CACHE) > _FIT_CACHE_SIZE:
            _FIT_CACHE.popitem(last=False)
        return self

    def _features_key(self) -> tuple[int, int]:
        if self._features_hash is None or self._features_hash[0] != self._features_version:
            digest = hash(tuple((key, vector.tobytes()) for key, vector in self.features.items()))
            self._features_hash = (self._features_version, digest)
        return self._features_hash

    def _fit(self, records: tuple[tuple[Hashable, Hashable, float], ...]) -> None:
        self.fits_ = {}
        stats = sufficient_statistics(records)
        if stats is None:
            return
        index = {experience_id: row for row, experience_id in enumerate(stats.experience_ids)}
        for mode in self._modes():
            vectors = self.content_vectors() if mode is LearnerMode.CONTENT else {}
            z = stats.features(vectors)
            if stats.scale > 0.0:
                model = fit_fay_herriot(stats.means / stats.scale, stats.counts.astype(np.float64), z)
            else:
                model = _degenerate(len(stats.experience_ids), z.shape[1])
            self.fits_[mode] = _Fit(index, stats.counts, stats.scale, model, vectors)

    # -- prediction -------------------------------------------------------
    @property
    def selected_mode(self) -> LearnerMode:
        """The mode whose predictions ``predict`` returns."""
        if self.mode is not LearnerMode.AUTO:
            return self.mode
        identity, content = self.scores[LearnerMode.IDENTITY], self.scores[LearnerMode.CONTENT]
        if min(len(identity), len(content)) < self.min_auto_scores:
            return LearnerMode.IDENTITY
        return LearnerMode.CONTENT if np.mean(content) > np.mean(identity) else LearnerMode.IDENTITY

    def record_score(self, mode: LearnerMode | str, score: float) -> None:
        """Add a prequential score of ``mode``'s frozen predictions (for ``auto``)."""
        key = LearnerMode(mode)
        if key is LearnerMode.AUTO or not np.isfinite(score):
            raise InputError(f"score needs mode identity or content and a finite value, got {mode!r}, {score!r}")
        self.scores[key].append(float(score))

    def predict(self, experience_id: Hashable, mode: LearnerMode | str | None = None) -> float:
        """Posterior mean value (utility units); 0, the prior mean, before any fit."""
        return self._posterior(experience_id, mode).mean if self.is_fitted else 0.0

    def predict_modes(self, experience_ids: Iterable[Hashable]) -> dict[LearnerMode, tuple[float, ...]]:
        """Predictions of every mode this learner fits, for frozen registration."""
        ids = tuple(experience_ids)
        return {mode: tuple(self.predict(i, mode) for i in ids) for mode in self._modes()}

    def posterior(self, experience_id: Hashable, mode: LearnerMode | str | None = None) -> ValuePosterior:
        """Posterior (mean, sd) in utility units. Requires a fit."""
        if not self.is_fitted:
            raise LifecycleError("the learner has no centred records yet: fit it on dates with >= 2 experiences")
        return self._posterior(experience_id, mode)

    def count(self, experience_id: Hashable) -> int:
        """Number of dates the experience has a centred contribution on."""
        if not self.is_fitted:
            return 0
        fit = next(iter(self.fits_.values()))
        row = fit.index.get(experience_id)
        return 0 if row is None else int(fit.counts[row])

    def _posterior(self, experience_id: Hashable, mode: LearnerMode | str | None) -> ValuePosterior:
        key = self.selected_mode if mode is None else LearnerMode(mode)
        if key not in self.fits_:
            raise InputError(f"mode {key.value!r} is not fitted by a {self.mode.value!r} learner", field="mode")
        return self.fits_[key].posterior(experience_id)


def _degenerate(n_experiences: int, n_features: int) -> FayHerriotFit:
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
