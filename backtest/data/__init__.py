"""Benchmark data: price panels, InvestorBench files, session calendars and per-date universes."""

from pathlib import Path

from backtest.data.investorbench import INVESTORBENCH_TICKERS, InvestorBenchData, load_file, load_investorbench
from backtest.data.prices import (
    ENTRY_SESSIONS,
    SPANS,
    DataError,
    align_to_sessions,
    class_indices,
    data_dir,
    load_asset_classes,
    load_crypto_closes,
    load_etf_closes,
    read_asset_classes,
    read_closes,
    require_file,
)
from backtest.data.universe import Exclusion, tradable

__all__ = [
    "ENTRY_SESSIONS",
    "INVESTORBENCH_TICKERS",
    "DataError",
    "Exclusion",
    "InvestorBenchData",
    "align_to_sessions",
    "check_input",
    "class_indices",
    "data_dir",
    "load_asset_classes",
    "load_crypto_closes",
    "load_etf_closes",
    "load_investorbench",
    "require_file",
    "tradable",
]


def check_input(path: Path) -> None:
    """Read one benchmark input as the benchmarks read it: a DataError naming what is wrong with it."""
    if path.name in SPANS:
        read_closes(path)
    elif path.suffix == ".json":
        load_file(path)
    else:
        read_asset_classes(path)
