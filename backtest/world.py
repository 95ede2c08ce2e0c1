"""What the runner needs of an environment: the :class:`World` protocol that PlantedMem and the real-data
settings implement, so the runner reads every world the same way and probes none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from backtest.context import DateContext

if TYPE_CHECKING:
    from backtest.realdata import Setting

__all__ = ["World"]


class World(Protocol):
    """An environment a backtest walks date by date.

    n_dates: the dates it may present; ``context(date)`` is the decision's
    context (None: the date is skipped), ``outcome(date)`` its realised
    relative prices (H, n), read only at maturity. features: (experiences, d)
    the experiences' content features; n_components: principal components the
    learner keeps (None: the features are used as given). types: the planted
    quality of each experience (None where it is unknown); setting: the real
    data behind the world (None for a synthetic one); presented: the dates
    presented so far; mandate_projection: how the environment projects weights
    onto the investor's mandate on a date (None: the runner's default);
    reference_calls: the draft calls the dates' reference costs (PlantedMem's is the
    mean of eight memory-free drafts; equal weight costs none); wide: how many
    experiences its contexts' wider retrieval holds (``DateContext.wide_retrieved``;
    0: none), which a draft budget's saturated design screens.
    """

    @property
    def n_dates(self) -> int: ...

    @property
    def n_components(self) -> int | None: ...

    @property
    def features(self) -> NDArray[np.float64]: ...

    @property
    def types(self) -> NDArray[np.int64] | None: ...

    @property
    def setting(self) -> Setting | None: ...

    @property
    def presented(self) -> int: ...

    @property
    def reference_calls(self) -> int: ...

    @property
    def wide(self) -> int: ...

    @property
    def mandate_projection(self) -> Callable[[int, NDArray[np.float64]], NDArray[np.float64]] | None: ...

    def context(self, date: int) -> DateContext | None: ...

    def outcome(self, date: int) -> NDArray[np.float64]: ...
