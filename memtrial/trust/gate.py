"""The pre-registered trust gate (method 4.5).

At ``plan`` time the learner's predicted values of the retrieved experiences
are registered; when the date matures its score is the Pearson correlation
between those predictions and the realised date-centred contributions
(skipped when either side is constant). Tests on the scores:

- ``prequential`` (the paper's): open when at least ``min_scores`` scores
  exist and a one-sided t-test of mean score > 0 rejects at ``alpha``.
  Checked at every date, its chance of ever opening under the null grows
  with the number of looks.
- ``anytime``: scores lie in [-1, 1], so for each bet lambda in [0, 1) the
  wealth prod_s (1 + lambda r_s) is a nonnegative supermartingale when the
  scores have conditional mean <= 0, and so is the uniform mixture K_t over a
  grid of bets (by default 0.05 to 0.5). The gate is open while
  K_t >= 1 / alpha; by Ville's inequality it ever opens under the null with
  probability <= alpha.
- ``none``: always open (the "no gate" ablation).

The configuration is frozen when a gate is made and its SHA-256 hash anchors
the prediction log (:mod:`memtrial.trust.log`). A gate's state is a handful of
running sums (:class:`GateStatistics`), so deciding costs the same after ten
scores or ten million.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.errors import ConfigError, DuplicateError, InputError, StateError, UnknownDecisionError, parse_choice
from memtrial.numeric.plain import plain_number
from memtrial.numeric.running import running_counts
from memtrial.numeric.special import t_sf
from memtrial.trust.log import LogEntry, LogKind, PredictionLog, canonical_json, sha256_hex

__all__ = [
    "DEFAULT_BETS",
    "AnytimeGate",
    "GateConfig",
    "GateSeries",
    "GateStatistics",
    "GateTest",
    "PrequentialGate",
    "ScoreResult",
    "TrustDecision",
    "TrustGate",
    "TrustStatus",
    "UngatedGate",
    "add_scores",
    "anytime_log_wealth",
    "dial_omega",
    "gate_series",
    "gate_states",
    "log_e_values",
    "make_gate",
    "pearson_score",
    "pearson_scores",
    "prequential_p_values",
    "trust_decision",
    "trust_weight",
    "trust_weights",
]

DEFAULT_BETS: tuple[float, ...] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
PREQUENTIAL_MIN_SCORES = 10


class GateTest(StrEnum):
    PREQUENTIAL = "prequential"
    ANYTIME = "anytime"
    NONE = "none"


class TrustStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"


@dataclass(frozen=True, slots=True)
class GateConfig:
    """Frozen gate configuration; ``min_scores=None`` takes the test's default
    (10 for ``prequential``, 1 otherwise)."""

    test: GateTest = GateTest.PREQUENTIAL
    alpha: float = 0.05
    min_scores: int | None = None
    statistic: str = "pearson"
    bets: tuple[float, ...] = DEFAULT_BETS

    def __post_init__(self) -> None:
        object.__setattr__(self, "test", parse_choice(GateTest, self.test, "test"))
        object.__setattr__(self, "alpha", plain_number(self.alpha))  # NumPy's numbers are the same numbers
        object.__setattr__(self, "min_scores", plain_number(self.min_scores))
        if isinstance(self.alpha, bool) or not (isinstance(self.alpha, float | int) and 0.0 < self.alpha < 1.0):
            raise ConfigError(f"alpha must be in (0, 1), got {self.alpha!r}", field="alpha")
        object.__setattr__(self, "alpha", float(self.alpha))
        if self.min_scores is None:
            default = PREQUENTIAL_MIN_SCORES if self.test is GateTest.PREQUENTIAL else 1
            object.__setattr__(self, "min_scores", default)
        if isinstance(self.min_scores, bool) or not isinstance(self.min_scores, int) or self.min_scores < 1:
            raise ConfigError(f"min_scores must be an integer >= 1, got {self.min_scores!r}", field="min_scores")
        if self.test is GateTest.PREQUENTIAL and self.min_scores < 2:
            raise ConfigError(f"min_scores must be >= 2 for a t-test, got {self.min_scores}", field="min_scores")
        if self.statistic != "pearson":
            raise ConfigError(f"statistic must be 'pearson', got {self.statistic!r}", field="statistic")
        bets = tuple(float(b) for b in self.bets)
        if not bets or any(not 0.0 < b < 1.0 for b in bets):  # 1 + b r > 0 for every score r in [-1, 1]
            raise ConfigError(f"bets must be a non-empty tuple of values in (0, 1), got {self.bets!r}", field="bets")
        object.__setattr__(self, "bets", bets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test.value,
            "alpha": self.alpha,
            "min_scores": self.min_scores,
            "statistic": self.statistic,
            "bets": list(self.bets),
        }

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON of the configuration."""
        return sha256_hex(canonical_json(self.to_dict()))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateConfig:
        unknown = set(data) - {"test", "alpha", "min_scores", "statistic", "bets"}
        if unknown:
            raise ConfigError(f"unknown gate settings {sorted(unknown)}", field=sorted(unknown)[0])
        values = dict(data)
        if "bets" in values:
            values["bets"] = tuple(values["bets"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class TrustDecision:
    """The gate's state at one moment.

    statistic: the p-value (prequential) or the e-value K_t (anytime); None
    while there is not enough evidence to compute it, and for ``none``.
    threshold: alpha (p-value must be below) or 1/alpha (e-value must reach).
    """

    status: TrustStatus
    test: GateTest
    n_scored: int
    statistic: float | None
    threshold: float | None
    mean_score: float | None

    @property
    def is_open(self) -> bool:
        return self.status is TrustStatus.OPEN

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "test": self.test.value,
            "n_scored": self.n_scored,
            "statistic": self.statistic,
            "threshold": self.threshold,
            "mean_score": self.mean_score,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrustDecision:
        return cls(
            status=TrustStatus(data["status"]),
            test=GateTest(data["test"]),
            n_scored=int(data["n_scored"]),
            statistic=data["statistic"],
            threshold=data["threshold"],
            mean_score=data["mean_score"],
        )


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """A matured date's score, or why it was skipped."""

    date: Hashable
    score: float | None
    skipped: str | None = None


def pearson_scores(predicted: ArrayLike, realised: ArrayLike) -> NDArray[np.float64]:
    """Pearson correlation of each row pair, shape (R,); NaN where either row is constant or
    has < 2 points. predicted, realised: (R, k). Each row is computed exactly as
    :func:`pearson_score` computes it alone."""
    x = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(realised, dtype=np.float64)
    if x.shape[-1] < 2:
        return np.full(x.shape[0], np.nan)
    flat = (np.ptp(x, axis=1) == 0.0) | (np.ptp(y, axis=1) == 0.0)
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        sx, sy = (x * x).sum(axis=1), (y * y).sum(axis=1)
        product = sx * sy
        # utilities near the engine's bound (1e100) overflow the product of the two sums (from about 1e77),
        # very small ones underflow it: there each sum's root is taken apart (elsewhere the same rounding
        # as always), so a score does not depend on the unit utilities are counted in
        apart = ~np.isfinite(product) | ((product < 1e-290) & (sx > 0.0) & (sy > 0.0))
        denominator = np.where(apart, np.sqrt(sx) * np.sqrt(sy), np.sqrt(product))
        value = (x * y).sum(axis=1) / denominator
    return np.where(flat, np.nan, np.clip(value, -1.0, 1.0))


def pearson_score(predicted: ArrayLike, realised: ArrayLike) -> float | None:
    """Pearson correlation, or None when either side is constant or has < 2 points."""
    value = float(
        pearson_scores(np.asarray(predicted, dtype=np.float64)[None], np.asarray(realised, dtype=np.float64)[None])[0]
    )
    return None if np.isnan(value) else value


def _t_test_p(
    count: NDArray[np.float64], total: NDArray[np.float64], total_sq: NDArray[np.float64]
) -> NDArray[np.float64]:
    """One-sided t-test p-value of mean > 0 from running sums (count >= 2).

    A sample with zero spread has p = 0 when its mean is > 0, else 1.
    """
    mean = total / count
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.maximum(total_sq - count * mean * mean, 0.0) / (count - 1.0)
        t = mean / np.sqrt(variance / count)
    p = t_sf(t, np.maximum(count - 1.0, 1.0))
    flat = variance <= 1e-15 * np.maximum(total_sq / count, 1e-300)
    return np.asarray(np.where(flat, np.where(mean > 0, 0.0, 1.0), p), dtype=np.float64)


def prequential_p_values(scores: ArrayLike) -> NDArray[np.float64]:
    """One-sided t-test p-value of mean > 0 after each prefix of the last axis.

    scores: (..., n). Entry t uses scores[..., :t+1]; it is NaN for t = 0. A
    prefix with zero spread has p = 0 when its mean is > 0, else 1.
    """
    x = np.asarray(scores, dtype=np.float64)
    count = np.broadcast_to(np.arange(1, x.shape[-1] + 1, dtype=np.float64), x.shape)
    p = _t_test_p(count, np.cumsum(x, axis=-1), np.cumsum(x * x, axis=-1))
    p[..., 0] = np.nan
    return p


def _mixture_log_wealth(log_growth: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of the mean over bets (axis -2) of exp(log_growth).

    The mean adds the bets one after another, so a column's value does not
    depend on how many columns are computed together.
    """
    peak = log_growth.max(axis=-2)
    scaled = np.exp(log_growth - peak[..., None, :])
    total = scaled[..., 0, :].copy()
    for row in range(1, scaled.shape[-2]):
        total += scaled[..., row, :]
    return np.asarray(peak + np.log(total / scaled.shape[-2]), dtype=np.float64)


def add_scores(
    log_growth: NDArray[np.float64], scores: NDArray[np.float64], bets: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The betting e-process after one more score in each of L gates: ``log_growth`` (L, bets) plus
    log(1 + bet r) of each gate's score r (L,), each gate's row exactly as :meth:`GateStatistics.add` gives it."""
    return np.asarray(log_growth + np.log1p(scores[:, None] * bets[None, :]), dtype=np.float64)


def log_e_values(log_growth: NDArray[np.float64]) -> NDArray[np.float64]:
    """:meth:`GateStatistics.log_e_value` of L gates at once from their ``log_growth`` (L, bets): log K_t of
    each, exactly as alone."""
    return _mixture_log_wealth(np.asarray(log_growth, dtype=np.float64).T)


def anytime_log_wealth(scores: ArrayLike, bets: Sequence[float] = DEFAULT_BETS) -> NDArray[np.float64]:
    """log K_t after each prefix of the last axis: K_t = mean over bets of prod_s (1 + bet r_s)."""
    x = np.asarray(scores, dtype=np.float64)
    if np.any(np.abs(x) > 1.0):
        raise InputError("anytime scores must lie in [-1, 1]", field="scores")
    grid = np.asarray(bets, dtype=np.float64)
    return _mixture_log_wealth(np.cumsum(np.log1p(x[..., None, :] * grid[:, None]), axis=-1))


class GateStatistics:
    """Running statistics of the scores: all any test needs, O(1) in their number.

    n_scored, total and total_sq give the t-test (identical to
    :func:`prequential_p_values` on the whole sequence, whose sums are the
    same running sums); log_growth[b] = sum_s log(1 + bets[b] r_s) gives the
    betting e-process (identical to :func:`anytime_log_wealth`).
    """

    __slots__ = ("_cache", "bets", "log_growth", "n_scored", "total", "total_sq")

    def __init__(self, bets: Sequence[float] = DEFAULT_BETS) -> None:
        self.bets = np.asarray(bets, dtype=np.float64)
        self.n_scored = 0
        self.total = 0.0
        self.total_sq = 0.0
        self.log_growth = np.zeros(self.bets.size)
        self._cache: dict[str, float | None] = {}  # statistics of the current state, computed once

    def add(self, score: float) -> None:
        if not (np.isfinite(score) and -1.0 <= score <= 1.0):
            raise InputError(f"a score must be finite and in [-1, 1], got {score!r}", field="score")
        self.n_scored += 1
        self.total += score
        self.total_sq += score * score
        self.log_growth = add_scores(
            self.log_growth[None, :], np.array([score], dtype=np.float64).reshape(1), self.bets
        )[0]
        self._cache.clear()

    @property
    def mean_score(self) -> float | None:
        return self.total / self.n_scored if self.n_scored else None

    def p_value(self) -> float | None:
        """The prequential t-test's p-value (None with fewer than 2 scores)."""
        if self.n_scored < 2:
            return None
        if "p" not in self._cache:
            self._cache["p"] = float(
                _t_test_p(np.array(float(self.n_scored)), np.array(self.total), np.array(self.total_sq))
            )
        return self._cache["p"]

    def log_e_value(self) -> float:
        """log K_t of the betting e-process (0 before any score)."""
        if "log_e" not in self._cache:
            self._cache["log_e"] = float(_mixture_log_wealth(self.log_growth[:, None])[0])
        value = self._cache["log_e"]
        assert value is not None
        return value

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_scored": self.n_scored,
            "total": self.total,
            "total_sq": self.total_sq,
            "log_growth": [float(v) for v in self.log_growth],
        }

    def load_dict(self, data: Mapping[str, Any]) -> None:
        growth = np.asarray(data["log_growth"], dtype=np.float64)
        if growth.shape != self.bets.shape:
            raise StateError(
                f"gate statistics need one log growth per bet ({self.bets.size}), got {growth.size}", field="gate"
            )
        self.n_scored = int(data["n_scored"])
        self.total = float(data["total"])
        self.total_sq = float(data["total_sq"])
        self.log_growth = growth
        self._cache.clear()


class TrustGate(ABC):
    """Registers predictions, scores matured dates, logs both in a hash chain.

    The gate's state is :class:`GateStatistics` plus the log's head. It keeps
    the predictions of registered, unscored dates in ``pending`` for callers
    that score by date (:meth:`score`); a caller that keeps its predictions
    itself registers with ``track=False`` and scores with :meth:`score_predictions`.
    """

    def __init__(self, config: GateConfig, sink: Callable[[LogEntry], None] | None = None) -> None:
        self.config = config
        self.config_hash = config.hash
        self.log = PredictionLog(self.config_hash, sink=sink)
        self.pending: dict[Hashable, dict[Hashable, float]] = {}
        self.statistics = GateStatistics(config.bets)

    def register(
        self,
        date: Hashable,
        predictions: Mapping[Any, float],
        details: Mapping[str, Any] | None = None,
        *,
        track: bool = True,
    ) -> LogEntry:
        """Freeze the predicted values of a date's experiences before its outcome exists."""
        if date in self.pending:
            raise DuplicateError(f"predictions for date {date!r} are already registered", field="date")
        values = {key: float(value) for key, value in predictions.items()}
        if not all(np.isfinite(v) for v in values.values()):
            raise InputError("predictions must be finite", field="predictions")
        if track:
            self.pending[date] = values
        payload = {"date": date, "predictions": [[key, value] for key, value in values.items()]}
        if details:
            payload["details"] = dict(details)
        return self.log.append(LogKind.PREDICTION, payload)

    def score(self, date: Hashable, realised: Mapping[Any, float]) -> ScoreResult:
        """Score a matured date against the predictions registered for it."""
        if date not in self.pending:
            raise UnknownDecisionError(f"no registered predictions await a score for date {date!r}", field="date")
        result = self.score_predictions(date, self.pending[date], realised)
        del self.pending[date]
        return result

    def score_predictions(
        self, date: Hashable, predicted: Mapping[Any, float], realised: Mapping[Any, float]
    ) -> ScoreResult:
        """Score a matured date against its registered ``predicted`` values and log the score."""
        if set(realised) != set(predicted):
            raise InputError(
                f"realised contributions must cover exactly the registered experiences {sorted(map(str, predicted))}",
                field="realised",
            )
        keys = list(predicted)
        value = pearson_score([predicted[k] for k in keys], [float(realised[k]) for k in keys])
        result = ScoreResult(date, value, None if value is not None else "constant predictions or outcomes")
        if value is not None:
            self.statistics.add(value)
        self.log.append(
            LogKind.SCORE,
            {
                "date": date,
                "score": value,
                "skipped": result.skipped,
                "realised": [[k, float(realised[k])] for k in keys],
            },
        )
        return result

    @property
    def n_scored(self) -> int:
        return self.statistics.n_scored

    @abstractmethod
    def decision(self) -> TrustDecision:
        """The gate's state given the scores so far."""

    def state_dict(self) -> dict[str, Any]:
        """Running statistics and the log's head: O(1) in the number of scores."""
        return {"statistics": self.statistics.to_dict(), "log_length": self.log.length, "log_head": self.log.head}

    def load_state_dict(self, data: Mapping[str, Any]) -> None:
        self.statistics.load_dict(data["statistics"])
        self.log.length = int(data["log_length"])
        self.log._head = str(data["log_head"])


@dataclass(frozen=True, slots=True)
class GateSeries:
    """A gate's statistics at many moments (D,): the scores counted, log K_t and the t-test's p-value
    (NaN with fewer than 2 scores; None where the test needs none)."""

    n_scored: NDArray[np.int64]
    log_e: NDArray[np.float64]
    p_value: NDArray[np.float64] | None


def gate_series(
    scores: ArrayLike, steps: ArrayLike, bets: Sequence[float] = DEFAULT_BETS, *, p_values: bool = True
) -> GateSeries:
    """:class:`GateStatistics` after ``steps[d]`` of the ``scores`` (N,) in order (NaN: a skipped score),
    for every d at once: the same additions as :meth:`GateStatistics.add`, so each moment holds
    exactly what an online gate holds then."""
    values = np.asarray(scores, dtype=np.float64)
    at = np.asarray(steps, dtype=np.int64)
    kept = ~np.isnan(values)
    count, total = running_counts(values, kept)
    grid = np.asarray(bets, dtype=np.float64)
    played = np.where(kept, values, 0.0)
    growth = np.log1p(played[:, None] * grid[None, :]) * kept[:, None]
    cumulative = np.vstack([np.zeros(grid.size), np.cumsum(growth, axis=0)])[at]  # (D, bets)
    log_e = _mixture_log_wealth(cumulative.T)
    p = None
    if p_values:
        _, total_sq = running_counts(played * played, kept)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(count[at] >= 2, _t_test_p(count[at].astype(np.float64), total[at], total_sq[at]), np.nan)
    return GateSeries(count[at], log_e, p)


def gate_states(
    config: GateConfig, series: GateSeries
) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """The state of a gate with ``config`` at each moment of ``series``: (open, statistic, omega), each (D,).

    The one rule of the gate and the dial, for one moment (:func:`trust_decision`, :func:`trust_weight`)
    or a whole calendar (a backtest's replay). statistic: the p-value (prequential) or the e-value
    K_t (anytime), NaN while there is not enough evidence or without a test. omega: the trust dial's
    weight clip(log K_t / log(1/alpha), 0, 1), 0 before ``min_scores`` scores, 1 without a gate.
    """
    size = series.n_scored.shape
    omega = dial_omega(config, series.n_scored, series.log_e)
    if config.test is GateTest.NONE:
        return np.ones(size, dtype=bool), np.full(size, np.nan), omega
    enough = series.n_scored >= (config.min_scores or 0)
    if config.test is GateTest.PREQUENTIAL:
        assert series.p_value is not None, "the prequential test needs p-values"
        statistic = np.where(enough, series.p_value, np.nan)
        return enough & (series.p_value < config.alpha), statistic, omega
    e_value = np.exp(series.log_e)
    return enough & (e_value >= 1.0 / config.alpha), np.where(enough, e_value, np.nan), omega


def dial_omega(config: GateConfig, n_scored: NDArray[np.int64], log_e: NDArray[np.float64]) -> NDArray[np.float64]:
    """The trust dial's weight at each moment: clip(log K_t / log(1/alpha), 0, 1), 0 before
    ``min_scores`` scores, 1 without a gate."""
    if config.test is GateTest.NONE:
        return np.ones(np.shape(n_scored))
    return np.where(np.asarray(n_scored) >= (config.min_scores or 0), trust_weights(log_e, config.alpha), 0.0)


def _series_now(config: GateConfig, statistics: GateStatistics) -> GateSeries:
    """The statistics of an online gate as a series of one moment."""
    p_value = None
    if config.test is GateTest.PREQUENTIAL:
        p = statistics.p_value()
        p_value = np.array([np.nan if p is None else p])
    return GateSeries(np.array([statistics.n_scored]), np.array([statistics.log_e_value()]), p_value)


def trust_decision(config: GateConfig, statistics: GateStatistics) -> TrustDecision:
    """The state of a gate with ``config`` after the scores summarised in ``statistics`` (:func:`gate_states`)."""
    n_scored, mean = statistics.n_scored, statistics.mean_score
    threshold = (
        None
        if config.test is GateTest.NONE
        else config.alpha
        if config.test is GateTest.PREQUENTIAL
        else 1.0 / config.alpha
    )
    is_open, statistic, _ = gate_states(config, _series_now(config, statistics))
    value = float(statistic[0])
    if bool(is_open[0]):
        status = TrustStatus.OPEN
    elif n_scored < (config.min_scores or 0):
        status = TrustStatus.INSUFFICIENT_EVIDENCE
    else:
        status = TrustStatus.CLOSED
    return TrustDecision(status, config.test, n_scored, None if np.isnan(value) else value, threshold, mean)


def trust_weight(config: GateConfig, statistics: GateStatistics) -> tuple[float, float]:
    """The trust dial (method 4.8): (omega, log K_t) with omega = clip(log K_t / log(1/alpha), 0, 1).

    K_t is the betting e-process of the scores so far (the anytime test's
    statistic). Under the null, P(ever omega >= x) <= alpha**x by Ville's
    inequality. Without a gate (``none``) omega is 1; before ``min_scores``
    scores it is 0 (:func:`gate_states`).
    """
    log_e = statistics.log_e_value()
    return float(dial_omega(config, np.array([statistics.n_scored]), np.array([log_e]))[0]), log_e


def trust_weights(log_e: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """omega for each log K_t (the formula of :func:`trust_weight`, for arrays)."""
    return np.asarray(np.clip(log_e / np.log(1.0 / alpha), 0.0, 1.0), dtype=np.float64)


class PrequentialGate(TrustGate):
    """One-sided t-test of mean score > 0, open when p < alpha with >= min_scores scores."""

    def __init__(
        self,
        alpha: float = 0.05,
        min_scores: int = PREQUENTIAL_MIN_SCORES,
        sink: Callable[[LogEntry], None] | None = None,
    ) -> None:
        super().__init__(GateConfig(GateTest.PREQUENTIAL, alpha, min_scores), sink)

    def decision(self) -> TrustDecision:
        return trust_decision(self.config, self.statistics)


class AnytimeGate(TrustGate):
    """Betting e-process; open while K_t >= 1/alpha (and >= min_scores scores)."""

    def __init__(
        self,
        alpha: float = 0.05,
        min_scores: int = 1,
        bets: Sequence[float] = DEFAULT_BETS,
        sink: Callable[[LogEntry], None] | None = None,
    ) -> None:
        super().__init__(GateConfig(GateTest.ANYTIME, alpha, min_scores, bets=tuple(bets)), sink)

    def decision(self) -> TrustDecision:
        return trust_decision(self.config, self.statistics)


class UngatedGate(TrustGate):
    """The "no gate" ablation: always open; still logs predictions and scores."""

    def __init__(self, sink: Callable[[LogEntry], None] | None = None) -> None:
        super().__init__(GateConfig(GateTest.NONE), sink)

    def decision(self) -> TrustDecision:
        return trust_decision(self.config, self.statistics)


def make_gate(config: GateConfig, sink: Callable[[LogEntry], None] | None = None) -> TrustGate:
    """The gate of a frozen configuration; ``sink`` receives its log entries (default: kept in memory)."""
    if config.test is GateTest.PREQUENTIAL:
        return PrequentialGate(config.alpha, config.min_scores or PREQUENTIAL_MIN_SCORES, sink)
    if config.test is GateTest.ANYTIME:
        return AnytimeGate(config.alpha, config.min_scores or 1, config.bets, sink)
    return UngatedGate(sink)
