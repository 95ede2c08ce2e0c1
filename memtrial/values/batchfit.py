"""A learner's predictions at many moments at once (a correction's replay fits them in one batch).

What a learner predicts after a run of dates depends on its statistics then
(:class:`~memtrial.values.statistics.SufficientStatistics`) and its content features,
and those statistics do not depend on any prediction. So a replay can take
the statistics at every plan first and fit the value model at all of them in
one :func:`~memtrial.values.fayherriot.fit_many` call per mode (in chunks), instead
of refitting once per plan: each problem is fitted exactly as the learner
fits it alone, so every prediction is the one
:meth:`~memtrial.values.empirical.EmpiricalBayesLearner.predict_modes` would give.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from memtrial.values.empirical import EmpiricalBayesLearner, ValueFit, degenerate_fit
from memtrial.values.fayherriot import FayHerriotFit, fit_many
from memtrial.values.statistics import LearnerMode, SufficientStatistics

__all__ = ["CHUNK", "Moment", "predictions_at"]

#: Problems fitted per :func:`fit_many` call (bounds the batch's memory).
CHUNK = 256

#: One moment: the learner's statistics then (None before any record) and the ids a plan asks about.
Moment = tuple[SufficientStatistics | None, tuple[Hashable, ...]]


class _Rows(Mapping[Hashable, int]):
    """The row of each experience in one snapshot's statistics (their ids in row order)."""

    def __init__(self, ids: tuple[Hashable, ...]) -> None:
        self._ids = ids
        self._rows: dict[Hashable, int] | None = None

    def _lookup(self) -> dict[Hashable, int]:
        if self._rows is None:
            self._rows = {e: row for row, e in enumerate(self._ids)}
        return self._rows

    def __getitem__(self, key: Hashable) -> int:
        return self._lookup()[key]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def _design(
    ids: tuple[Hashable, ...], vectors: Mapping[Hashable, NDArray[np.float64]], dim: int
) -> NDArray[np.float64]:
    """(H, dim) content features in the statistics' row order (z = 0 without an embedding)."""
    rows = [vectors.get(e) for e in ids]
    return np.array([np.zeros(dim) if row is None else row for row in rows], dtype=np.float64).reshape(len(ids), dim)


def _fits(
    moments: Sequence[Moment], live: list[int], vectors: Mapping[Hashable, NDArray[np.float64]], dim: int
) -> dict[int, FayHerriotFit]:
    """The fit of every moment in ``live`` (statistics with a positive scale), a chunk per call."""
    fits: dict[int, FayHerriotFit] = {}
    designs: dict[tuple[Hashable, ...], NDArray[np.float64]] = {}
    for first in range(0, len(live), CHUNK):
        chunk = live[first : first + CHUNK]
        stats = [moments[i][0] for i in chunk]
        sizes = np.array([len(s.experience_ids) for s in stats if s is not None], dtype=np.int64)
        columns = int(sizes.max())
        m, n, z = np.zeros((len(chunk), columns)), np.ones((len(chunk), columns)), np.zeros((len(chunk), columns, dim))
        for row, (snapshot, size) in enumerate(zip(stats, sizes.tolist(), strict=True)):
            assert snapshot is not None
            m[row, :size] = snapshot.means / snapshot.scale
            n[row, :size] = snapshot.counts
            if dim:
                ids = snapshot.experience_ids
                if ids not in designs:
                    designs[ids] = _design(ids, vectors, dim)
                z[row, :size] = designs[ids]
        batch = fit_many(m, n, z, sizes=sizes)
        for row, i in enumerate(chunk):
            fits[i] = batch[row]
    return fits


def predictions_at(
    learner: EmpiricalBayesLearner, moments: Sequence[Moment]
) -> list[dict[LearnerMode, tuple[float, ...]]]:
    """Every mode's predictions of each moment's ids, as ``learner.predict_modes`` gives them when the
    learner holds that moment's statistics (its content features being the learner's now)."""
    modes = (LearnerMode.IDENTITY, LearnerMode.CONTENT) if learner.mode is LearnerMode.AUTO else (learner.mode,)
    result: list[dict[LearnerMode, tuple[float, ...]]] = [{} for _ in moments]
    for mode in modes:
        vectors = learner.content_vectors() if mode is LearnerMode.CONTENT else {}
        dim = next((v.shape[0] for v in vectors.values()), 0) if mode is LearnerMode.CONTENT else 0
        live = [i for i, (snapshot, _) in enumerate(moments) if snapshot is not None and snapshot.scale > 0.0]
        fits = _fits(moments, live, vectors, dim)
        for i, (snapshot, ids) in enumerate(moments):
            if snapshot is None:  # not fitted: the prior mean
                result[i][mode] = tuple(0.0 for _ in ids)
                continue
            model = fits.get(i) or degenerate_fit(len(snapshot.experience_ids), dim)
            fit = ValueFit(_Rows(snapshot.experience_ids), snapshot.counts, snapshot.scale, model, vectors)
            result[i][mode] = tuple(fit.posterior(e).mean for e in ids)
    return result
