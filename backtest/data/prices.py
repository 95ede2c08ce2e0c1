"""Price data of the benchmarks, read from the shared data folder.

The folder is ``$MEMTRIAL_DATA`` or ``../shared/data`` beside the checkout.
Missing files, tickers or classes raise :class:`DataError` naming them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from memtrial.errors import InputError

__all__ = ["DataError", "class_indices", "data_dir", "load_asset_classes", "load_etf_closes"]

ENTRY_SESSIONS = 20


class DataError(InputError):
    """Benchmark data are missing or malformed."""


def data_dir() -> Path:
    configured = os.environ.get("MEMTRIAL_DATA")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def _require(path: Path) -> Path:
    if not path.is_file():
        raise DataError(f"benchmark data file {path} is missing (set MEMTRIAL_DATA to the data folder)", field="data")
    return path


def load_etf_closes(folder: Path | None = None) -> pd.DataFrame:
    """Adjusted daily closes, one row per session (DatetimeIndex), one column per ticker."""
    path = _require((folder or data_dir()) / "prices" / "etf_daily_close.csv.gz")
    frame = pd.read_csv(path, parse_dates=["date"]).set_index("date").sort_index()
    if frame.index.has_duplicates:
        raise DataError(f"{path} repeats the session dates {sorted(set(frame.index[frame.index.duplicated()].astype(str)))[:5]}", field="data")
    return frame.astype(np.float64)


def load_asset_classes(folder: Path | None = None) -> dict[str, str]:
    path = _require((folder or data_dir()) / "prices" / "asset_classes.csv")
    table = pd.read_csv(path)
    if list(table.columns) != ["ticker", "asset_class"]:
        raise DataError(f"{path} must have the columns ticker,asset_class, got {list(table.columns)}", field="data")
    return dict(zip(table["ticker"], table["asset_class"], strict=True))


def class_indices(closes: pd.DataFrame, classes: dict[str, str], names: list[str], entry_sessions: int = ENTRY_SESSIONS) -> pd.DataFrame:
    """Equal-weighted, daily-rebalanced index of each class (level 1 on the first session).

    A member counts from the session after its ``entry_sessions``-th price on.
    """
    missing = sorted(set(closes.columns) - set(classes))
    if missing:
        raise DataError(f"tickers without an asset class: {missing}", field="data")
    returns = closes.pct_change(fill_method=None)
    seen = closes.notna().cumsum()
    eligible = (seen.shift(1) >= entry_sessions) & returns.notna()
    levels = {}
    for name in names:
        members = [t for t in closes.columns if classes[t] == name]
        if not members:
            raise DataError(f"asset class {name!r} has no tickers in the price file", field="data")
        member_returns = returns[members].where(eligible[members])
        daily = member_returns.mean(axis=1, skipna=True).fillna(0.0)
        daily.iloc[0] = 0.0
        levels[name] = (1.0 + daily).cumprod()
    return pd.DataFrame(levels, index=closes.index)
