"""Value-aware retrieval (method 4.12): rank candidates by similarity and learned value, acting on the
values only as much as the trust evidence allows.

With c_i the similarity of candidate i, (m_i, s_i) its value's posterior mean and sd, n_i the contributions
it was learnt from, omega the trust weight (method 4.8), kappa the optimism constant (``exploration``) and
z the demotion's width (``demotion``), each candidate scores

    score_i = c_i + omega * u_i - omega * P * h_i,    u_i = (m_i + kappa * s_i) / scale,
    scale = max_j (|m_j| + kappa * s_j),    P = max_j c_j - min_j c_j + 2,
    h_i = 1 when m_i + z * s_i < 0 (s_i known, n_i >= 2: credibly harmful), else 0,

and the k best scores are picked (ties: the given order). At omega = 1 a credibly harmful candidate ranks
below every other; at omega = 0 the ranking is the similarity ranking itself, computed apart so it is the
same bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.errors import ConfigError, InputError
from memtrial.records import ExperienceId, text_or_flag

__all__ = [
    "DEMOTION",
    "EXPLORATION",
    "Pick",
    "Posterior",
    "Ranked",
    "RetrievalMode",
    "rank",
    "rank_orders",
    "similarity_order",
    "SPAN_RULE",
    "spans_finitely",
]

#: z: a value whose mean + z sd is below 0 is credibly harmful and ranks last at full trust (method 4.12;
#: chosen on the dev seeds; None: no demotion)
DEMOTION: float | None = 1.5
EXPLORATION = 0.25  # kappa: sds of optimism added to a value's mean (method 4.12; chosen on the dev seeds)
INTERVAL_Z = 1.6448536269514722  # the normal 90% interval reported beside each pick, the values' own level
#: what similarities must meet besides being finite: the ranking's terms are read on their range
SPAN_RULE = "must span a finite range (the largest minus the smallest overflows)"


class RetrievalMode(StrEnum):
    """How a plan retrieves: by ``similarity`` alone (the method as before) or ``value_aware`` (4.12)."""

    SIMILARITY = "similarity"
    VALUE_AWARE = "value_aware"


class Pick(StrEnum):
    """Why a candidate was picked: its similarity alone would pick it (``similarity``), its learned value
    (``value``), or its value's uncertainty (``exploration``: picked only with the optimism bonus)."""

    SIMILARITY = "similarity"
    VALUE = "value"
    EXPLORATION = "exploration"


@dataclass(frozen=True, slots=True)
class Posterior:
    """A value's posterior as the ranking reads it: mean and sd (utility units), and the number of
    contributions it was learnt from (sd None: no noise scale yet, read as 0)."""

    mean: float
    sd: float | None
    n: int


@dataclass(frozen=True, slots=True)
class Ranked:
    """One pick: the experience, its similarity, its value's mean, sd and 90% interval (lower and upper None
    where the sd is None or 0: no estimate of its spread), the number of contributions, its score and why it
    was picked."""

    experience_id: ExperienceId
    similarity: float
    mean: float
    sd: float | None
    lower: float | None
    upper: float | None
    n: int
    score: float
    reason: Pick


def similarity_order(similarities: ArrayLike) -> list[int]:
    """Indices by decreasing similarity, ties in the given order (the rule of ``top_k``)."""
    values = np.asarray(similarities, dtype=np.float64)
    return [int(i) for i in np.lexsort((np.arange(values.size), -values))]


def spans_finitely(similarities: Sequence[float]) -> bool:
    """Whether the largest of finite ``similarities`` minus the smallest is a number (it may overflow)."""
    return len(similarities) == 0 or math.isfinite(float(max(similarities)) - float(min(similarities)))


def _check(
    candidates: Sequence[ExperienceId],
    similarities: Sequence[float],
    posteriors: Mapping[ExperienceId, Posterior],
    omega: float,
    k: int,
    exploration: float,
    demotion: float | None,
) -> None:
    if isinstance(candidates, (str, bytes)):
        raise InputError(f"candidates must be a sequence of experience ids, got {candidates!r}", field="candidates")
    if text_or_flag(similarities):
        raise InputError(
            f"similarities must be one number per candidate, got {similarities!r}"[:300], field="similarities"
        )
    try:
        shape = np.asarray(similarities, dtype=np.float64).shape
    except (TypeError, ValueError):
        shape = None
    if shape is None or len(shape) != 1:
        raise InputError(
            f"similarities must be one number per candidate, got {similarities!r}"[:300], field="similarities"
        )
    if len(set(candidates)) != len(candidates):
        raise InputError(f"candidates must be distinct ids, got {list(candidates)!r}", field="candidates")
    if len(similarities) != len(candidates):
        raise InputError(
            f"similarities must hold one score per candidate ({len(candidates)}), got {len(similarities)}",
            field="similarities",
        )
    if not np.all(np.isfinite(np.asarray(similarities, dtype=np.float64))):
        raise InputError("similarities must be finite", field="similarities")
    if not spans_finitely(similarities):
        raise InputError(f"similarities {SPAN_RULE}", field="similarities")
    missing = [e for e in candidates if e not in posteriors]
    if missing:
        raise InputError(f"no posterior for candidates {missing!r}", field="posteriors")
    if not (np.isfinite(omega) and 0.0 <= omega <= 1.0):
        raise InputError(f"omega must be in [0, 1], got {omega!r}", field="omega")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(f"k must be an integer >= 0, got {k!r}", field="k")
    if not (np.isfinite(exploration) and exploration >= 0.0):
        raise ConfigError(f"exploration must be finite and >= 0, got {exploration!r}", field="exploration")
    if demotion is not None and not (np.isfinite(demotion) and demotion >= 0.0):
        raise ConfigError(f"demotion must be finite and >= 0 (or None), got {demotion!r}", field="demotion")


def _terms(
    similarity: NDArray[np.float64],
    means: NDArray[np.float64],
    sds: NDArray[np.float64],
    counts: NDArray[np.int64],
    known: NDArray[np.bool_],
    present: NDArray[np.bool_],
    exploration: float,
    demotion: float | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(optimistic means, scale (L,), demotion penalty) of L lists of candidates (module docstring)."""
    optimistic = means + exploration * sds
    spread = np.where(present, np.abs(means) + exploration * sds, -np.inf).max(axis=1, initial=-np.inf)
    scale = np.where(spread > 0.0, spread, 1.0)
    if demotion is None:
        harmful = np.zeros(similarity.shape, dtype=bool)
    else:
        harmful = present & known & (counts >= 2) & (means + demotion * sds < 0.0)
    top = np.where(present, similarity, -np.inf).max(axis=1, initial=-np.inf)
    bottom = np.where(present, similarity, np.inf).min(axis=1, initial=np.inf)
    reach = np.where(present.any(axis=1), top - bottom, 0.0)
    return optimistic, scale, (reach + 2.0)[:, None] * harmful


def rank_orders(
    similarity: NDArray[np.float64],
    means: NDArray[np.float64],
    sds: NDArray[np.float64],
    counts: NDArray[np.int64],
    known: NDArray[np.bool_],
    omega: NDArray[np.float64],
    *,
    valid: NDArray[np.bool_] | None = None,
    exploration: float = EXPLORATION,
    demotion: float | None = DEMOTION,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The ranking of :func:`rank` for L lists of C candidates at once (module docstring): each row's candidate
    indices by decreasing score, ties in the given order, and the scores.

    similarity, means, sds (L, C): sds 0 where unknown; counts (L, C): the contributions each value was learnt
    from; known (L, C): whether the sd is known; omega (L,); valid (L, C): the candidates a row holds (its
    others, padding, come last, whatever their numbers). A row is computed exactly as it is alone; a row with
    omega = 0 is ranked by its similarities themselves.
    """
    present = np.ones(similarity.shape, dtype=bool) if valid is None else valid
    optimistic, scale, penalty = _terms(similarity, means, sds, counts, known, present, exploration, demotion)
    weight = np.asarray(omega, dtype=np.float64)[:, None]
    scores = np.where(weight == 0.0, similarity, similarity + weight * (optimistic / scale[:, None] - penalty))
    keys = np.where(present, -scores, np.inf)
    positions = np.broadcast_to(np.arange(similarity.shape[1]), similarity.shape)
    return np.lexsort((positions, keys), axis=-1), scores


def rank(
    candidates: Sequence[ExperienceId],
    similarities: Sequence[float],
    posteriors: Mapping[ExperienceId, Posterior],
    omega: float,
    k: int,
    *,
    exploration: float = EXPLORATION,
    demotion: float | None = DEMOTION,
) -> list[Ranked]:
    """The k candidates with the best scores (module docstring), best first.

    candidates: (n,) distinct ids; similarities: (n,) finite scores, higher is closer; posteriors: each
    candidate's value posterior; omega: the trust weight in [0, 1]; exploration: kappa >= 0; demotion:
    z >= 0, or None for no demotion.
    """
    _check(candidates, similarities, posteriors, omega, k, exploration, demotion)
    n = len(candidates)
    similarity = np.asarray(similarities, dtype=np.float64).reshape(1, n)
    means = np.array([posteriors[e].mean for e in candidates], dtype=np.float64).reshape(1, n)
    sds = np.array([posteriors[e].sd or 0.0 for e in candidates], dtype=np.float64).reshape(1, n)
    counts = np.array([posteriors[e].n for e in candidates], dtype=np.int64).reshape(1, n)
    known = np.array([posteriors[e].sd is not None for e in candidates], dtype=bool).reshape(1, n)
    orders, scored = rank_orders(
        similarity, means, sds, counts, known, np.array([omega]), exploration=exploration, demotion=demotion
    )
    order, scores = orders[0].tolist(), scored[0]
    present = np.ones((1, n), dtype=bool)
    _, scale, penalty = _terms(similarity, means, sds, counts, known, present, exploration, demotion)
    by_similarity = set(similarity_order(similarity[0])[:k])
    by_mean = set(similarity_order(similarity[0] + omega * (means[0] / scale[0] - penalty[0]))[:k])
    picks = []
    for i in order[:k]:
        reason = Pick.SIMILARITY if i in by_similarity else Pick.VALUE if i in by_mean else Pick.EXPLORATION
        posterior = posteriors[candidates[i]]
        # a point is not an interval: an sd of 0 (an experience without contributions while the learner reads
        # every value as equal, tau2 = 0) reports none, as the values endpoint does
        half = None if posterior.sd is None or not posterior.sd > 0.0 else INTERVAL_Z * posterior.sd
        picks.append(
            Ranked(
                experience_id=candidates[i],
                similarity=float(similarity[0, i]),
                mean=posterior.mean,
                sd=posterior.sd,
                lower=None if half is None else posterior.mean - half,
                upper=None if half is None else posterior.mean + half,
                n=posterior.n,
                score=float(scores[i]),
                reason=reason,
            )
        )
    return picks
