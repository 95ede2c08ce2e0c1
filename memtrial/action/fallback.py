"""The closed action: a KL-anchored mixture of the reference and the draft mean (method 4.6).

The family is ``w(q) = q * w_ref + (1 - q) * mean(drafts)`` for q on a grid of
201 points in [0, 1]. After each matured date the realised utility of every
grid mixture is added to a running sum G(q), the count n grows by one and
``|U_ref - U_mean| / 2`` is added to a running sum S. The chosen q maximises

    G(q) / n - lambda * KL(Bernoulli(q) || Bernoulli(a0)),
    lambda = lambda0 * (S / n + 1e-6) / sqrt(n),

with a0 = 0.9 (``ftrl``) or 0.5 (``uniform``); with n = 0, q = a0. The
``ens`` variant always takes the draft mean (q = 0), ``ref`` the reference
(q = 1). Ties go to the smallest q.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.errors import ConfigError, InputError, StateError, parse_choice

__all__ = [
    "GRID",
    "AnchoredMixture",
    "FallbackVariant",
    "bernoulli_kl",
    "choices_after",
    "mixture",
    "mixture_weights",
    "running_sums",
]

GRID: NDArray[np.float64] = np.linspace(0.0, 1.0, 201)
LAMBDA0 = 4.0
_KL_ON_GRID: dict[float, NDArray[np.float64]] = {}


class FallbackVariant(StrEnum):
    FTRL = "ftrl"
    ENS = "ens"
    REF = "ref"
    UNIFORM = "uniform"


_ANCHOR = {FallbackVariant.FTRL: 0.9, FallbackVariant.UNIFORM: 0.5}


def bernoulli_kl(q: ArrayLike, a0: float) -> NDArray[np.float64]:
    """KL(Bernoulli(q) || Bernoulli(a0)) with 0 log 0 = 0; a0 in (0, 1)."""
    q_array = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(q_array > 0, q_array * np.log(q_array / a0), 0.0)
        second = np.where(q_array < 1, (1 - q_array) * np.log((1 - q_array) / (1 - a0)), 0.0)
    return np.asarray(first + second, dtype=np.float64)


def _kl_on_grid(anchor: float) -> NDArray[np.float64]:
    kl = _KL_ON_GRID.get(anchor)
    if kl is None:
        kl = _KL_ON_GRID.setdefault(anchor, bernoulli_kl(GRID, anchor))
    return kl


def running_sums(
    mixture_utilities: NDArray[np.float64],
    reference_utilities: NDArray[np.float64],
    mean_utilities: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """An :class:`AnchoredMixture`'s running sums after each of N updates given in order:
    G (N + 1, grid) and S (N + 1,), row i holding the sums after i updates (the same additions)."""
    count = mixture_utilities.shape[0]
    gains = np.vstack([np.zeros(GRID.size), np.cumsum(mixture_utilities.reshape(count, GRID.size), axis=0)])
    spread = np.concatenate(
        [[0.0], np.cumsum(np.abs(np.asarray(reference_utilities) - np.asarray(mean_utilities)) / 2.0)]
    )
    return gains, spread


def choices_after(
    gains: NDArray[np.float64],
    spread: NDArray[np.float64],
    steps: NDArray[np.int64],
    variant: FallbackVariant | str,
    lambda0: float = LAMBDA0,
) -> NDArray[np.float64]:
    """The q :meth:`AnchoredMixture.choose` gives after ``steps[d]`` updates, for every d at once
    (``gains`` and ``spread`` from :func:`running_sums`)."""
    variant = parse_choice(FallbackVariant, variant, "variant")
    if variant is FallbackVariant.ENS:
        return np.zeros(steps.shape)
    if variant is FallbackVariant.REF:
        return np.ones(steps.shape)
    anchor = _ANCHOR[variant]
    q = np.full(steps.shape, anchor)
    live = steps > 0
    n = steps[live]
    counts = n.astype(np.float64)
    penalty = lambda0 * (spread[n] / counts + 1e-6) / np.sqrt(counts)
    objective = gains[n] / counts[:, None] - penalty[:, None] * _kl_on_grid(anchor)[None, :]
    q[live] = GRID[np.argmax(objective, axis=1)]
    return q


def mixture(q: ArrayLike, reference: ArrayLike, draft_mean: ArrayLike) -> NDArray[np.float64]:
    """w(q) = q * reference + (1 - q) * draft_mean, the one formula of the family: q (...),
    reference and draft_mean (..., n) (broadcast); returns (..., n)."""
    weight = np.asarray(q, dtype=np.float64)[..., None]
    return np.asarray(
        weight * np.asarray(reference, dtype=np.float64) + (1.0 - weight) * np.asarray(draft_mean, dtype=np.float64),
        dtype=np.float64,
    )


def mixture_weights(reference: ArrayLike, draft_mean: ArrayLike, grid: ArrayLike = GRID) -> NDArray[np.float64]:
    """Weights of every grid mixture, shape (len(grid), n)."""
    return mixture(
        grid, np.asarray(reference, dtype=np.float64)[None, :], np.asarray(draft_mean, dtype=np.float64)[None, :]
    )


class AnchoredMixture:
    """Running statistics of the mixture family and the q they select."""

    def __init__(self, variant: FallbackVariant | str = FallbackVariant.FTRL, lambda0: float = LAMBDA0) -> None:
        self.variant = parse_choice(FallbackVariant, variant, "variant")
        if not (np.isfinite(lambda0) and lambda0 >= 0):
            raise ConfigError(f"lambda0 must be finite and >= 0, got {lambda0!r}", field="lambda0")
        self.lambda0 = float(lambda0)
        self.gains = np.zeros(GRID.size)
        self.n_updates = 0
        self.spread_sum = 0.0
        self._choice: float | None = None  # q of the current state, computed once

    @property
    def anchor(self) -> float | None:
        """a0 of the KL penalty (None for the fixed variants)."""
        return _ANCHOR.get(self.variant)

    def update(self, mixture_utilities: ArrayLike, reference_utility: float, mean_utility: float) -> None:
        """Add one matured date: utilities of the 201 mixtures, the reference and the draft mean."""
        values = np.asarray(mixture_utilities, dtype=np.float64)
        if values.shape != GRID.shape or not np.all(np.isfinite(values)):
            raise InputError(f"mixture_utilities must be finite with shape {GRID.shape}", field="mixture_utilities")
        if not (np.isfinite(reference_utility) and np.isfinite(mean_utility)):
            raise InputError("reference and draft-mean utilities must be finite", field="utilities")
        self.gains = self.gains + values
        self.n_updates += 1
        self.spread_sum += abs(reference_utility - mean_utility) / 2.0
        self._choice = None

    def remove(self, mixture_utilities: ArrayLike, reference_utility: float, mean_utility: float) -> None:
        """Take back one date :meth:`update` added (a corrected outcome replaces it)."""
        if self.n_updates < 1:
            raise StateError("the fallback has no update to take back", field="fallback")
        self.gains = self.gains - np.asarray(mixture_utilities, dtype=np.float64)
        self.n_updates -= 1
        self.spread_sum -= abs(reference_utility - mean_utility) / 2.0
        self._choice = None

    @property
    def penalty(self) -> float:
        """lambda of the current state (0 before any update)."""
        if self.n_updates == 0:
            return 0.0
        n = self.n_updates
        return float(self.lambda0 * (self.spread_sum / n + 1e-6) / np.sqrt(n))

    def choose(self) -> float:
        """The mixture weight q on the reference."""
        if self.variant is FallbackVariant.ENS:
            return 0.0
        if self.variant is FallbackVariant.REF:
            return 1.0
        anchor = _ANCHOR[self.variant]
        if self.n_updates == 0:
            return anchor
        if self._choice is None:
            objective = self.gains / self.n_updates - self.penalty * _kl_on_grid(anchor)
            self._choice = float(GRID[int(np.argmax(objective))])
        return self._choice

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant.value,
            "lambda0": self.lambda0,
            "gains": [float(g) for g in self.gains],
            "n_updates": self.n_updates,
            "spread_sum": self.spread_sum,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnchoredMixture:
        mixture = cls(data["variant"], data["lambda0"])
        gains = np.asarray(data["gains"], dtype=np.float64)
        if gains.shape != GRID.shape:
            raise StateError(f"fallback gains must have {GRID.size} entries, got {gains.size}", field="fallback")
        mixture.gains = gains
        mixture.n_updates = int(data["n_updates"])
        mixture.spread_sum = float(data["spread_sum"])
        mixture._choice = None
        return mixture
