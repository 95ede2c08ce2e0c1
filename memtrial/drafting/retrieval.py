"""Exact cosine retrieval over experience embeddings (the core's brute-force path).

The service retrieves with FAISS and passes the ranked ids to ``plan``; this
module serves library users and tests, and defines the tie rule: equal scores
keep the experiences' insertion order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError
from memtrial.records import ExperienceId, text_or_flag

__all__ = ["check_embedding", "cosine_similarities", "top_k"]


def _finite_length(vector: NDArray[np.float64]) -> bool:
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.linalg.norm(vector)))


def check_embedding(value: object, field: str = "embedding") -> NDArray[np.float64]:
    """An embedding as retrieval reads it: a non-empty 1-d vector of finite numbers whose length (L2 norm) is
    finite too (cosine similarity divides by it); an InputError naming ``field`` otherwise."""
    if not isinstance(value, str | bytes) and text_or_flag(value):
        raise InputError(
            f"{field} must be a vector of numbers, not texts or true/false, got {value!r}"[:300], field=field
        )
    try:
        vector = np.array(value, dtype=np.float64)  # a copy: a caller reusing its buffer changes nothing kept
    except (TypeError, ValueError):
        raise InputError(f"{field} must be a 1-d vector of numbers, got {value!r}"[:300], field=field) from None
    if isinstance(value, (str, bytes)) or vector.ndim != 1 or vector.size == 0:
        raise InputError(f"{field} must be a non-empty 1-d vector of numbers, got shape {vector.shape}", field=field)
    if not np.all(np.isfinite(vector)):
        raise InputError(f"{field} must be finite (no NaN or inf)", field=field)
    if not _finite_length(vector):
        raise InputError(f"{field} must have a finite length: its L2 norm overflows", field=field)
    return vector


def cosine_similarities(
    context: NDArray[np.float64], candidates: Sequence[tuple[ExperienceId, NDArray[np.float64] | None]]
) -> tuple[list[ExperienceId], NDArray[np.float64]]:
    """The candidates with an embedding, in the given order, and their cosine similarity to ``context`` (m,)."""
    if context.ndim != 1 or not np.all(np.isfinite(context)):
        raise InputError(
            f"context_embedding must be a finite 1-d vector, got shape {context.shape}", field="context_embedding"
        )
    if not _finite_length(context):
        raise InputError(
            "context_embedding must have a finite length: its L2 norm overflows", field="context_embedding"
        )
    usable = [(e, v) for e, v in candidates if v is not None]
    if not usable:
        return [], np.zeros(0)
    matrix = np.vstack([v for _, v in usable])
    if matrix.shape[1] != context.shape[0]:
        raise InputError(
            f"context_embedding has {context.shape[0]} dimensions, experiences have {matrix.shape[1]}",
            field="context_embedding",
        )
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(context)), 1e-300)
    similarity = (matrix @ context) / np.where(norms > 0, norms, 1.0)
    return [e for e, _ in usable], np.asarray(similarity, dtype=np.float64)


def top_k(
    context: NDArray[np.float64], candidates: Sequence[tuple[ExperienceId, NDArray[np.float64] | None]], k: int
) -> list[ExperienceId]:
    """Ids of the k candidates most cosine-similar to ``context``, best first."""
    ids, similarity = cosine_similarities(context, candidates)
    order = np.lexsort((np.arange(len(ids)), -similarity))
    return [ids[i] for i in order[:k]]
