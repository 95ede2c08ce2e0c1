"""Per-date universes: an asset is tradable once it has the history a setting needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Exclusion", "tradable"]


@dataclass(frozen=True, slots=True)
class Exclusion:
    """Something a run left out, and why (reported with the run's results)."""

    what: str
    reason: str
    dates: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "reason": self.reason, "dates": self.dates}


def tradable(closes: NDArray[np.float64], session: int, history: int) -> NDArray[np.bool_]:
    """Assets with a close on every one of the ``history + 1`` sessions up to ``session``."""
    if session < history:
        return np.zeros(closes.shape[1], dtype=bool)
    window = closes[session - history : session + 1]
    return np.asarray(np.isfinite(window).all(axis=0))
