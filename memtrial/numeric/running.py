"""Running counts and sums in batch form: what a sequence of online additions holds after each step.

The online engine adds one value at a time (a gate's scores, the learner's
mode scores, the noise cost's gains); a backtest that replays a whole
calendar needs every intermediate state at once. :func:`running_counts` is
the one rule for both: it adds the same values in the same order, so each
step holds exactly what the online sums hold then.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["running_counts"]


def running_counts(
    values: NDArray[np.float64], kept: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Counts and sums of the kept values after each number of values 0..N, added in order.

    values, kept: (N,); returns (count, total), each (N + 1,), row i after i values.
    """
    count = np.concatenate([[0], np.cumsum(kept)])
    total = np.concatenate([[0.0], np.cumsum(np.where(kept, values, 0.0))])
    return count.astype(np.int64), total
