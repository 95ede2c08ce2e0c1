"""A market of asset-class index levels on a session calendar, real or synthetic."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from backtest.data.prices import class_indices, load_asset_classes, load_etf_closes

__all__ = ["PLANTEDMEM_CLASSES", "Market", "monthly_decision_sessions"]

PLANTEDMEM_CLASSES = ["equities", "bonds", "cash", "commodities"]


@dataclass(frozen=True)
class Market:
    """levels: (n_sessions, n_assets) index levels; dates: the sessions."""

    dates: pd.DatetimeIndex
    levels: NDArray[np.float64]
    assets: tuple[str, ...]

    @classmethod
    def from_data(cls, names: list[str] = PLANTEDMEM_CLASSES) -> Market:
        frame = class_indices(load_etf_closes(), load_asset_classes(), names)
        return cls(pd.DatetimeIndex(frame.index), frame.to_numpy(), tuple(names))

    @classmethod
    def synthetic(cls, seed: int = 0, n_sessions: int = 3160, start: str = "2014-01-02") -> Market:
        """Regime-switching class returns (a calm and a stressed state, persistent)."""
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7_001]))
        means = np.array([[0.0006, 0.0001, 0.00005, 0.0002], [-0.0008, 0.0003, 0.00005, 0.0004]])
        vols = np.array([[0.009, 0.004, 0.0002, 0.010], [0.020, 0.007, 0.0003, 0.016]])
        state, returns = 0, np.empty((n_sessions, 4))
        for day in range(n_sessions):
            if rng.random() < (0.01 if state == 0 else 0.03):
                state = 1 - state
            returns[day] = means[state] + vols[state] * rng.standard_normal(4)
        returns[0] = 0.0
        dates = pd.bdate_range(start, periods=n_sessions)
        return cls(dates, np.asarray(np.cumprod(1.0 + returns, axis=0), dtype=np.float64), tuple(PLANTEDMEM_CLASSES))

    @cached_property
    def labels(self) -> list[str]:
        """Each session's date, ISO formatted (computed once: every world of a run asks)."""
        return [str(date.date()) for date in self.dates]

    def decision_sessions(self, first_year: int, history: int, horizon: int) -> list[int]:
        """:func:`monthly_decision_sessions` of this market, computed once per arguments."""
        memo: dict[tuple[int, int, int], list[int]] = self.__dict__.setdefault("_decision_sessions", {})
        key = (first_year, history, horizon)
        if key not in memo:
            memo[key] = monthly_decision_sessions(self.dates, first_year, history, horizon)
        return list(memo[key])

    def relative(self, session: int, horizon: int) -> NDArray[np.float64]:
        """(horizon, n) closes of the next sessions relative to the close of ``session``."""
        return np.asarray(self.levels[session + 1 : session + 1 + horizon] / self.levels[session], dtype=np.float64)

    @cached_property
    def _returns(self) -> NDArray[np.float64]:
        """Every session's daily return (row 0, which has none, is NaN)."""
        returns = np.full(self.levels.shape, np.nan)
        returns[1:] = self.levels[1:] / self.levels[:-1] - 1.0
        returns.flags.writeable = False
        return returns

    def daily_returns(self, session: int, lookback: int) -> NDArray[np.float64]:
        """(lookback, n) daily returns up to and including ``session`` (a read-only view)."""
        if not 0 < session - lookback + 1 <= session + 1 <= len(self.levels):
            raise IndexError(f"no {lookback} daily returns end at session {session}")
        return self._returns[session - lookback + 1 : session + 1]


def monthly_decision_sessions(dates: pd.DatetimeIndex, first_year: int, history: int, horizon: int) -> list[int]:
    """First session of each month from ``first_year`` on with ``history`` sessions before and ``horizon`` after."""
    frame = pd.Series(np.arange(len(dates)), index=dates)
    firsts = frame.groupby([dates.year, dates.month]).first()
    return [
        int(i) for i in firsts.to_numpy() if dates[i].year >= first_year and i >= history and i + horizon < len(dates)
    ]
