"""The public InvestorBench equity files: daily price, news and filing summaries per ticker.

Each ``<ticker>.json`` maps ``YYYY-MM-DD`` to ``{"prices": float, "news": [str],
"10k": [str], "10q": [str]}``. The tickers of one setting must share one
calendar; a date missing from one of them is an error naming both.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from backtest.data.prices import DataError, locate, require_file

__all__ = ["INVESTORBENCH_TICKERS", "InvestorBenchData", "load_file", "load_investorbench"]

INVESTORBENCH_TICKERS = ("HON", "JNJ", "MSFT", "UVV")


@dataclass(frozen=True)
class InvestorBenchData:
    """closes: (dates x tickers) prices; news/filings[ticker][date] -> texts."""

    closes: pd.DataFrame
    news: dict[str, dict[pd.Timestamp, list[str]]]
    filings: dict[str, dict[pd.Timestamp, list[str]]]


def _texts(path: Path, day: str, entry: dict[str, object], key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise DataError(f"{path}: {day}.{key} must be a list of strings", field="data")
    return list(value)


def load_file(path: Path) -> tuple[pd.Series, dict[pd.Timestamp, list[str]], dict[pd.Timestamp, list[str]]]:
    """One ticker's file: its closes, news and filings by date; a DataError naming what is wrong with it."""
    require_file(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DataError(f"{path} is not valid JSON: {error}", field="data") from None
    if not isinstance(raw, dict) or not raw:
        raise DataError(f"{path} must map dates to entries", field="data")
    prices, news, filings = {}, {}, {}
    for day, entry in raw.items():
        try:
            stamp = pd.Timestamp(day)
        except ValueError:
            raise DataError(f"{path}: {day!r} is not a YYYY-MM-DD date", field="data") from None
        if not isinstance(entry, dict):
            raise DataError(f"{path}: the entry of {day} must be an object", field="data")
        price = entry.get("prices")
        if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) or price <= 0:
            raise DataError(f"{path}: {day}.prices must be a finite number > 0, got {price!r}", field="data")
        prices[stamp] = float(price)
        news[stamp] = _texts(path, day, entry, "news")
        filings[stamp] = _texts(path, day, entry, "10k") + _texts(path, day, entry, "10q")
    return pd.Series(prices).sort_index(), news, filings


def load_investorbench(
    tickers: tuple[str, ...] = INVESTORBENCH_TICKERS, folder: Path | None = None
) -> InvestorBenchData:
    """Prices, news and filings of ``tickers`` on their common calendar.

    folder: a data folder holding ``investorbench/<ticker>.json``; by default
    ``$MEMTRIAL_DATA`` (the files are third-party text and do not ship with the
    package).
    """
    paths = {
        t: (folder / "investorbench" / f"{t.lower()}.json" if folder else locate(f"investorbench/{t.lower()}.json"))
        for t in tickers
    }
    root = next(iter(paths.values())).parent
    series, news, filings = {}, {}, {}
    for ticker in tickers:
        series[ticker], news[ticker], filings[ticker] = load_file(paths[ticker])
    calendar = sorted(set().union(*(s.index for s in series.values())))
    for ticker, prices in series.items():
        missing = [d for d in calendar if d not in prices.index]
        if missing:
            raise DataError(
                f"{root / (ticker.lower() + '.json')} has no entry for {missing[0].date()} ({len(missing)} dates missing) that other tickers have",
                field="data",
            )
    closes = pd.DataFrame(series).loc[calendar]
    closes.index = pd.DatetimeIndex(closes.index, name="date")
    return InvestorBenchData(closes, news, filings)
