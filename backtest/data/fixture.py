"""A small InvestorBench-format data set written by the project itself (for tests and offline trials).

The real InvestorBench files hold third-party news text and do not ship with
the package. :func:`write_investorbench_fixture` writes files of the same
format (``{date: {"prices", "news", "10k", "10q"}}`` per ticker) over the same
span of business days, with prices from a seeded random walk and short news
items made from templates, so the loaders, the setting and the CLI run end to
end without the real files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from backtest.data.investorbench import INVESTORBENCH_TICKERS

__all__ = ["write_investorbench_fixture"]

MOODS = [("rose", "positive"), ("fell", "negative"), ("held steady", "neutral")]


def write_investorbench_fixture(
    folder: Path, seed: int = 0, start: str = "2020-03-12", end: str = "2021-05-06"
) -> Path:
    """Write ``<folder>/investorbench/<ticker>.json`` for the four InvestorBench tickers; returns the folder."""
    rng = np.random.default_rng(seed)
    days = pd.bdate_range(start, end)
    root = folder / "investorbench"
    root.mkdir(parents=True, exist_ok=True)
    for ticker in INVESTORBENCH_TICKERS:
        prices = 100.0 * np.cumprod(1.0 + rng.normal(0.0004, 0.015, size=len(days)))
        entries = {}
        for day, price in zip(days, prices, strict=True):
            move, sentiment = MOODS[int(rng.integers(len(MOODS)))]
            entries[day.strftime("%Y-%m-%d")] = {
                "prices": float(price),
                "news": [f"{ticker} shares {move} as analysts revised estimates (sentiment: {sentiment})."],
                "10k": [f"{ticker} annual report summary: revenue grew and margins held."]
                if day.month == 2 and day.day <= 5
                else [],
                "10q": [f"{ticker} quarterly report summary: guidance unchanged."]
                if day.day <= 3 and day.month in (1, 4, 7, 10)
                else [],
            }
        (root / f"{ticker.lower()}.json").write_text(json.dumps(entries))
    return folder
