"""Numerical helpers the method's sections share (method 4.5, 4.8): Student's t tail and running counts.

Modules: :mod:`~memtrial.numeric.special`, :mod:`~memtrial.numeric.running`.
"""

from memtrial.numeric.running import (
    running_counts,
)
from memtrial.numeric.special import (
    incomplete_beta,
    t_sf,
)

__all__ = [
    "incomplete_beta",
    "running_counts",
    "t_sf",
]
