"""NumPy's scalars as Python's numbers, for the checks of every layer that take a number given by hand."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plain_number"]


def plain_number(value: Any) -> Any:
    """A NumPy integer or float as Python's (``np.int64(3)`` as 3), anything else as it is: a time, a count or
    an index given from an array is taken as the same number given by hand (a NumPy flag stays one)."""
    if isinstance(value, np.integer) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
