"""The pre-registered trust gate (SPEC 4.5).

At ``plan`` time the learner's predicted values of the retrieved experiences
are registered; when the date matures its score is the Pearson correlation
between those predictions and the realised date-centred contributions
(skipped when either side is constant). Tests on the scores:

- ``prequential`` (the paper's): open when at least ``min_scores`` scores
  exist and a one-sided t-test of mean score > 0 rejects at ``alpha``.
  Checked at every date, its chance of ever opening under the null grows
  with the number of looks.
- ``anytime``: scores lie in [-1, 1], so for each bet lambda in [0, 1/2] the
  wealth prod_s (1 + lambda r_s) is a nonnegative supermartingale when the
  scores have conditional mean <= 0, and so is the uniform mixture K_t over a
  grid of bets. The gate is open while K_t >= 1 / alpha; by Ville's
  inequality it ever opens under the null with probability <= alpha.
- ``none``: always open (the "no gate" ablation).

The configuration is frozen when a gate is made and its SHA-256 hash anchors
the prediction log (:mod:`memtrial.prereg`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import stdtr

from memtrial.errors import ConfigError, DuplicateError, InputError, UnknownDecisionError, parse_choice
from memtrial.prereg import PredictionLog, canonical_json, sha256_hex

__all__ = [
    "DEFAULT_BETS",
    "AnytimeGate",
    "GateConfig",
    "GateTest",
    "PrequentialGate",
    "ScoreResult",
    "TrustDecision",
    "TrustGate",
    "TrustStatus",
    "UngatedGate",
    "anytime_log_wealth",
    "make_gate",
    "pearson_score",
    "prequential_p_values",
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
        if not (isinstance(self.alpha, float | int) and 0.0 < self.alpha < 1.0):
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
        if not bets or any(not 0.0 < b <= 0.5 for b in bets):
            raise ConfigError(f"bets must be a non-empty tuple of values in (0, 0.5], got {self.bets!r}", field="bets")
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


def pearson_score(predicted: ArrayLike, realised: ArrayLike) -> float | None:
    """Pearson correlation, or None when either side is constant or has < 2 points."""
    x = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(realised, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0.0 or np.ptp(y) == 0.0:
        return None
    x = x - x.mean()
    y = y - y.mean()
    value = float(x @ y / np.sqrt((x @ x) * (y @ y)))
    return float(np.clip(value, -1.0, 1.0))


def prequential_p_values(scores: ArrayLike) -> NDArray[np.float64]:
    """One-sided t-test p-value of mean > 0 after each prefix of the last axis.

    scores: (..., n). Entry t uses scores[..., :t+1]; it is NaN for t = 0. A
    prefix with zero spread has p = 0 when its mean is > 0, else 1.
    """
    x = np.asarray(scores, dtype=np.float64)
    count = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    mean = np.cumsum(x, axis=-1) / count
    sum_sq = np.cumsum(x * x, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.maximum(sum_sq - count * mean * mean, 0.0) / (count - 1.0)
        t = mean / np.sqrt(variance / count)
        p = stdtr(np.maximum(count - 1.0, 1.0), -t)
    flat = variance <= 1e-15 * np.maximum(sum_sq / count, 1e-300)
    p = np.where(flat, np.where(mean > 0, 0.0, 1.0), p)
    p[..., 0] = np.nan
    return np.asarray(p, dtype=np.float64)


def anytime_log_wealth(scores: ArrayLike, bets: Sequence[float] = DEFAULT_BETS) -> NDArray[np.float64]:
    """log K_t after each prefix of the last axis: K_t = mean over bets of prod_s (1 + bet r_s)."""
    x = np.asarray(scores, dtype=np.float64)
    if np.any(np.abs(x) > 1.0):
        raise InputError("anytime scores must lie in [-1, 1]", field="scores")
    grid = np.asarray(bets, dtype=np.float64)
    log_growth = np.cumsum(np.log1p(x[..., None, :] * grid[:, None]), axis=-1)
    peak = log_growth.max(axis=-2)
    mixture = np.log(np.exp(log_growth - peak[..., None, :]).mean(axis=-2))
    return np.asarray(peak + mixture, dtype=np.float64)


class TrustGate(ABC):
    """Registers predictions, scores matured dates, logs both in a hash chain."""

    def __init__(self, config: GateConfig) -> None:
        self.config = config
        self.config_hash = config.hash
        self.log = PredictionLog(self.config_hash)
        self.pending: dict[Hashable, dict[Hashable, float]] = {}
        self.scores: list[float] = []
        self.score_dates: list[Hashable] = []
        self.scored_dates: set[Hashable] = set()

    def register(
        self, date: Hashable, predictions: Mapping[Any, float], details: Mapping[str, Any] | None = None
    ) -> None:
        """Freeze the predicted values of a date's experiences before its outcome exists."""
        if date in self.pending or date in self.scored_dates:
            raise DuplicateError(f"predictions for date {date!r} are already registered", field="date")
        values = {key: float(value) for key, value in predictions.items()}
        if not all(np.isfinite(v) for v in values.values()):
            raise InputError("predictions must be finite", field="predictions")
        self.pending[date] = values
        payload = {"date": date, "predictions": [[key, value] for key, value in values.items()]}
        if details:
            payload["details"] = dict(details)
        self.log.append("prediction", payload)

    def score(self, date: Hashable, realised: Mapping[Any, float]) -> ScoreResult:
        """Score a matured date against its registered predictions."""
        if date not in self.pending:
            raise UnknownDecisionError(f"no registered predictions await a score for date {date!r}", field="date")
        predicted = self.pending[date]
        if set(realised) != set(predicted):
            raise InputError(
                f"realised contributions must cover exactly the registered experiences {sorted(map(str, predicted))}",
                field="realised",
            )
        keys = list(predicted)
        value = pearson_score([predicted[k] for k in keys], [float(realised[k]) for k in keys])
        del self.pending[date]
        self.scored_dates.add(date)
        result = ScoreResult(date, value, None if value is not None else "constant predictions or outcomes")
        if value is not None:
            self.scores.append(value)
            self.score_dates.append(date)
        self.log.append(
            "score",
            {"date": date, "score": value, "skipped": result.skipped, "realised": [[k, float(realised[k])] for k in keys]},
        )
        return result

    @abstractmethod
    def decision(self) -> TrustDecision:
        """The gate's state given the scores so far."""

    def _summary(self) -> tuple[int, float | None]:
        n_scored = len(self.scores)
        return n_scored, (float(np.mean(self.scores)) if n_scored else None)


class PrequentialGate(TrustGate):
    """One-sided t-test of mean score > 0, open when p < alpha with >= min_scores scores."""

    def __init__(self, alpha: float = 0.05, min_scores: int = PREQUENTIAL_MIN_SCORES) -> None:
        super().__init__(GateConfig(GateTest.PREQUENTIAL, alpha, min_scores))

    def decision(self) -> TrustDecision:
        n_scored, mean = self._summary()
        if n_scored < (self.config.min_scores or 0):
            return TrustDecision(TrustStatus.INSUFFICIENT_EVIDENCE, GateTest.PREQUENTIAL, n_scored, None, self.config.alpha, mean)
        p_value = float(prequential_p_values(self.scores)[-1])
        status = TrustStatus.OPEN if p_value < self.config.alpha else TrustStatus.CLOSED
        return TrustDecision(status, GateTest.PREQUENTIAL, n_scored, p_value, self.config.alpha, mean)


class AnytimeGate(TrustGate):
    """Betting e-process; open while K_t >= 1/alpha (and >= min_scores scores)."""

    def __init__(self, alpha: float = 0.05, min_scores: int = 1, bets: Sequence[float] = DEFAULT_BETS) -> None:
        super().__init__(GateConfig(GateTest.ANYTIME, alpha, min_scores, bets=tuple(bets)))

    def decision(self) -> TrustDecision:
        n_scored, mean = self._summary()
        threshold = 1.0 / self.config.alpha
        if n_scored < (self.config.min_scores or 0):
            return TrustDecision(TrustStatus.INSUFFICIENT_EVIDENCE, GateTest.ANYTIME, n_scored, None, threshold, mean)
        e_value = float(np.exp(anytime_log_wealth(self.scores, self.config.bets)[-1]))
        status = TrustStatus.OPEN if e_value >= threshold else TrustStatus.CLOSED
        return TrustDecision(status, GateTest.ANYTIME, n_scored, e_value, threshold, mean)


class UngatedGate(TrustGate):
    """The "no gate" ablation: always open; still logs predictions and scores."""

    def __init__(self) -> None:
        super().__init__(GateConfig(GateTest.NONE))

    def decision(self) -> TrustDecision:
        n_scored, mean = self._summary()
        return TrustDecision(TrustStatus.OPEN, GateTest.NONE, n_scored, None, None, mean)


def make_gate(config: GateConfig) -> TrustGate:
    """The gate of a frozen configuration."""
    if config.test is GateTest.PREQUENTIAL:
        return PrequentialGate(config.alpha, config.min_scores or PREQUENTIAL_MIN_SCORES)
    if config.test is GateTest.ANYTIME:
        return AnytimeGate(config.alpha, config.min_scores or 1, config.bets)
    return UngatedGate()
