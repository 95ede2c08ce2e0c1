"""Price panels of the benchmarks.

The price files ship with the package (``backtest/data/files/prices``, read
through ``importlib.resources``); a data folder named by ``$MEMTRIAL_DATA``
overrides them file by file. :func:`locate` says where each input is looked
for and which copy is used (``memtrial data check`` prints it). Missing files,
tickers or classes raise :class:`DataError` naming them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from memtrial.errors import InputError

__all__ = [
    "ENTRY_SESSIONS",
    "SPANS",
    "DataError",
    "align_to_sessions",
    "provenance",
    "read_asset_classes",
    "read_closes",
    "read_table",
    "class_indices",
    "data_dir",
    "locate",
    "load_asset_classes",
    "load_crypto_closes",
    "load_etf_closes",
    "require_file",
]

ENTRY_SESSIONS = 20


class DataError(InputError):
    """Benchmark data are missing or malformed."""


def data_dir() -> Path | None:
    """The data folder named by ``$MEMTRIAL_DATA`` (None when unset); a DataError when it names no folder (a
    mistyped path would otherwise leave every benchmark on the shipped prices, without a word)."""
    configured = os.environ.get("MEMTRIAL_DATA")
    if not configured:
        return None
    folder = Path(configured)
    if not folder.is_dir():
        raise DataError(
            f"MEMTRIAL_DATA names {folder}, which is not a folder: point it at the data folder (or unset it to use "
            "the prices that ship with memtrial)",
            field="MEMTRIAL_DATA",
        )
    return folder


def packaged() -> Path:
    """The folder of the data that ship with the package."""
    return Path(str(resources.files("backtest.data") / "files"))


def candidates(relative: str) -> list[Path]:
    """Where one input (a path relative to a data folder) is looked for, in order."""
    places = [folder / relative for folder in (data_dir(), packaged()) if folder is not None]
    return list(dict.fromkeys(places))


def locate(relative: str) -> Path:
    """The copy of an input that the benchmarks use: the first that exists, or a DataError naming every place."""
    places = candidates(relative)
    for place in places:
        if place.is_file():
            return place
    looked = ", ".join(str(p) for p in places)
    raise DataError(
        f"benchmark data file {relative} is missing: looked in {looked} (set MEMTRIAL_DATA to a folder holding it; `memtrial data check` lists every input)",
        field="data",
    )


def require_file(path: Path) -> Path:
    if not path.is_file():
        raise DataError(f"benchmark data file {path} is missing (set MEMTRIAL_DATA to the data folder)", field="data")
    return path


#: the sessions each close table must cover (the copies that ship with memtrial cover exactly these): a copy
#: under ``$MEMTRIAL_DATA`` that starts later or ends sooner would run a shorter benchmark without a word
SPANS = {
    "etf_daily_close.csv.gz": ("2014-01-02", "2026-08-03"),
    "crypto_daily_close.csv.gz": ("2014-09-17", "2024-12-07"),
}


def read_table(path: Path, *, whole_rows: bool = True) -> str:
    """A table's text, whole: a damaged or cut-short file is a DataError naming it, never a partial table.
    ``whole_rows``: the text must end with a line end (a close table cut short at a field's end would read as
    whole otherwise; a small table written by hand may lack the last one)."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8", newline="") as handle:
            text = str(handle.read())
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise DataError(
            f"{path} cannot be read ({type(error).__name__}: {error}): the file is damaged or cut short; fetch it again",
            field="data",
        ) from None
    lines = text.splitlines()
    if not lines or (whole_rows and not text.endswith("\n")):
        raise DataError(f"{path} ends in the middle of a row: the file is cut short; fetch it again", field="data")
    width = lines[0].count(",")
    short = next(  # blank lines are skipped, as the reader skips them
        (number for number, line in enumerate(lines[1:], start=2) if line.strip() and line.count(",") != width), None
    )
    if short is not None:
        raise DataError(
            f"{path}: row {short} has {lines[short - 1].count(',') + 1} fields, the header {width + 1}: the file is damaged",
            field="data",
        )
    return text


def read_closes(path: Path) -> pd.DataFrame:
    """The close table at ``path``, checked (whole, numbers, positive, covering its benchmark span)."""
    require_file(path)
    text = read_table(path)
    try:
        frame = pd.read_csv(io.StringIO(text), parse_dates=["date"]).set_index("date").sort_index()
    except (ValueError, KeyError) as error:
        raise DataError(f"{path} is not a close table with a date column: {error}", field="data") from None
    if frame.index.has_duplicates:
        raise DataError(
            f"{path} repeats the dates {sorted(set(frame.index[frame.index.duplicated()].astype(str)))[:5]}",
            field="data",
        )
    try:
        frame = frame.astype(np.float64)
    except ValueError as error:
        raise DataError(f"{path} has a close that is not a number: {error}", field="data") from None
    bad = frame.columns[((frame <= 0) | np.isinf(frame)).any()]
    if len(bad):
        raise DataError(f"{path}: closes must be finite and > 0; tickers {list(bad)} break that", field="data")
    span = SPANS.get(path.name)
    if span is not None and not (frame.index[0] <= pd.Timestamp(span[0]) and frame.index[-1] >= pd.Timestamp(span[1])):
        raise DataError(
            f"{path} holds closes from {frame.index[0].date()} to {frame.index[-1].date()}; the benchmarks need "
            f"{span[0]} to {span[1]} at least (the copy that ships with memtrial): a shorter table would run "
            "fewer decisions than the benchmark defines",
            field="data",
        )
    return frame


def provenance(relatives: Sequence[str]) -> dict[str, dict[str, str]]:
    """Where each input a run read came from (``shipped`` or ``MEMTRIAL_DATA``) and the SHA-256 of its bytes,
    so a run's results name the data they were computed on."""
    shipped = packaged()
    found = {}
    for relative in relatives:
        path = locate(relative)
        origin = "shipped" if path.parent.parent == shipped else "MEMTRIAL_DATA"
        found[relative] = {"from": origin, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return found


def load_etf_closes(folder: Path | None = None) -> pd.DataFrame:
    """Adjusted daily closes, one row per session (DatetimeIndex), one column per ticker."""
    return read_closes(
        folder / "prices" / "etf_daily_close.csv.gz" if folder else locate("prices/etf_daily_close.csv.gz")
    )


def load_crypto_closes(folder: Path | None = None) -> pd.DataFrame:
    """Daily crypto closes in USD, one row per calendar day, one column per coin."""
    return read_closes(
        folder / "prices" / "crypto_daily_close.csv.gz" if folder else locate("prices/crypto_daily_close.csv.gz")
    )


def align_to_sessions(closes: pd.DataFrame, sessions: pd.DatetimeIndex) -> pd.DataFrame:
    """The last close on or before each session date (NaN before a coin's first close).

    A close is carried at most four days (a gap in a coin's data) and never
    past the table's last date: such sessions stay NaN, so a stale price is
    never used silently.
    """
    last_seen = closes.apply(lambda column: column.index.to_series().where(column.notna()).ffill())
    aligned = closes.ffill().reindex(sessions, method="ffill")
    age = pd.DataFrame(
        {c: (sessions - pd.DatetimeIndex(last_seen[c].reindex(sessions, method="ffill"))).days for c in closes.columns},
        index=sessions,
    )
    return aligned.where((age <= 4) & (sessions <= closes.index[-1])[:, None])


def load_asset_classes(folder: Path | None = None) -> dict[str, str]:
    return read_asset_classes(
        require_file(folder / "prices" / "asset_classes.csv" if folder else locate("prices/asset_classes.csv"))
    )


def read_asset_classes(path: Path) -> dict[str, str]:
    """The asset class of each ticker, from the table at ``path``."""
    table = pd.read_csv(io.StringIO(read_table(path, whole_rows=False)))
    if list(table.columns) != ["ticker", "asset_class"]:
        raise DataError(f"{path} must have the columns ticker,asset_class, got {list(table.columns)}", field="data")
    if table["ticker"].duplicated().any():
        raise DataError(
            f"{path} lists the tickers {sorted(table['ticker'][table['ticker'].duplicated()])} twice", field="data"
        )
    return dict(zip(table["ticker"], table["asset_class"], strict=True))


def class_indices(
    closes: pd.DataFrame, classes: dict[str, str], names: list[str], entry_sessions: int = ENTRY_SESSIONS
) -> pd.DataFrame:
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
