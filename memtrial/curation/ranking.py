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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike

from memtrial.errors import ConfigError, InputError
from memtrial.records import ExperienceId

__all__ = ["DEMOTION", "EXPLORATION", "Pick", "Posterior", "Ranked", "RetrievalMode", "rank", "similarity_order"]

#: z: a value whose mean + z sd is below 0 is credibly harmful and ranks last at full trust (method 4.12;
#: chosen on the dev seeds; None: no demotion)
DEMOTION: float | None = 1.5
EXPLORATION = 0.25  # kappa: sds of optimism added to a value's mean (method 4.12; chosen on the dev seeds)
INTERVAL_Z = 1.959963984540054  # the 95% interval reported beside each pick


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
    """One pick: the experience, its similarity, its value's mean, sd and 95% interval, the number of
    contributions, its score and why it was picked."""

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


def _check(
    candidates: Sequence[ExperienceId],
    similarities: Sequence[float],
    posteriors: Mapping[ExperienceId, Posterior],
    omega: float,
    k: int,
    exploration: float,
    demotion: float | None,
) -> None:
    if len(set(candidates)) != len(candidates):
        raise InputError(f"candidates must be distinct ids, got {list(candidates)!r}", field="candidates")
    if len(similarities) != len(candidates):
        raise InputError(
            f"similarities must hold one score per candidate ({len(candidates)}), got {len(similarities)}",
            field="similarities",
        )
    if not np.all(np.isfinite(np.asarray(similarities, dtype=np.float64))):
        raise InputError("similarities must be finite", field="similarities")
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


def _credibly_harmful(posterior: Posterior, z: float) -> bool:
    """mean + z sd < 0, from two contributions on (sd known)."""
    return posterior.sd is not None and posterior.n >= 2 and posterior.mean + z * posterior.sd < 0.0


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
    similarity = np.asarray(similarities, dtype=np.float64).reshape(n)
    means = np.array([posteriors[e].mean for e in candidates], dtype=np.float64).reshape(n)
    sds = np.array([posteriors[e].sd or 0.0 for e in candidates], dtype=np.float64).reshape(n)
    optimistic = means + exploration * sds
    scale = float(np.max(np.abs(means) + exploration * sds)) if n else 0.0
    scale = scale if scale > 0.0 else 1.0
    harmful = np.array([demotion is not None and _credibly_harmful(posteriors[e], demotion) for e in candidates])
    penalty = (float(np.max(similarity) - np.min(similarity)) + 2.0) * harmful.reshape(n) if n else np.zeros(0)
    if omega == 0.0:
        order, scores = similarity_order(similarity), similarity
    else:
        scores = similarity + omega * (optimistic / scale - penalty)
        order = similarity_order(scores)
    by_similarity = set(similarity_order(similarity)[:k])
    by_mean = set(similarity_order(similarity + omega * (means / scale - penalty))[:k])
    picks = []
    for i in order[:k]:
        reason = Pick.SIMILARITY if i in by_similarity else Pick.VALUE if i in by_mean else Pick.EXPLORATION
        posterior = posteriors[candidates[i]]
        half = None if posterior.sd is None else INTERVAL_Z * posterior.sd
        picks.append(
            Ranked(
                experience_id=candidates[i],
                similarity=float(similarity[i]),
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
