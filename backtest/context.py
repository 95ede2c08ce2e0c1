"""What a method sees at one decision, in every environment (no outcome of that date)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["DateContext"]


@dataclass(frozen=True, slots=True)
class DateContext:
    """One decision date.

    drafts: (16, n) the draft of every subset mask of the retrieved four
    (the half fraction uses rows 0, 3, 5, 6, 9, 10, 12, 15); rows nobody
    asked for are NaN.
    reference: (n,) the fallback's anchor; previous: (n,) the book before
    entry (fees); equal: (n,) equal weight (projected onto the mandate in the
    real-data settings).
    self_consistency: (n,) mean of eight fresh drafts with the top-2 retrieved.
    history: (L, n) daily returns up to the decision session.
    added: experiences that became available since the previous decision
    (id, embedding), for methods that register them.
    assets: the date's universe (empty in PlantedMem, whose four classes never change).
    candidates: every experience a method may retrieve on the date (PlantedMem), with its retrieval
    score in ``candidate_scores`` (higher is closer; ``retrieved`` is their top four);
    ``draft_for(retrieved)`` gives the (2**k, n) drafts of every mask of any retrieval of k of them, and
    ``draft_for(retrieved, masks)`` those masks' only (None: the world drafts only for its own retrieval).
    """

    index: int
    session: int
    maturity: int
    scored: bool
    retrieved: tuple[int, ...]
    drafts: NDArray[np.float64]
    reference: NDArray[np.float64]
    self_consistency: NDArray[np.float64]
    history: NDArray[np.float64]
    previous: NDArray[np.float64]
    equal: NDArray[np.float64]
    added: tuple[tuple[int, NDArray[np.float64]], ...] = ()
    assets: tuple[str, ...] = ()
    label: str = ""
    wide_retrieved: tuple[int, ...] = ()  # a wider retrieval (rank order, the first four above) for a saturated design
    wide_drafts: NDArray[np.float64] | None = None  # (2**len(wide_retrieved), n) the draft of every mask of it
    candidates: tuple[int, ...] = ()
    candidate_scores: NDArray[np.float64] | None = None
    draft_for: Callable[..., NDArray[np.float64]] | None = None
