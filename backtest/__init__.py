"""Offline backtests: environments, baselines, the runner and reports.

It depends on the core library :mod:`memtrial`; the core never imports it.
"""
