"""Benchmark data: price panels, InvestorBench files, session calendars and per-date universes."""

from backtest.data.investorbench import INVESTORBENCH_TICKERS, InvestorBenchData, load_investorbench
from backtest.data.prices import (
    ENTRY_SESSIONS,
    DataError,
    align_to_sessions,
    class_indices,
    data_dir,
    load_asset_classes,
    load_crypto_closes,
    load_etf_closes,
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
    "class_indices",
    "data_dir",
    "load_asset_classes",
    "load_crypto_closes",
    "load_etf_closes",
    "load_investorbench",
    "require_file",
    "tradable",
]
