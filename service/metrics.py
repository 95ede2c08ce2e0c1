"""One ``/metrics`` for every worker of a server.

``memtrial serve --workers N`` (N > 1) gives its workers a fresh folder, ``PROMETHEUS_MULTIPROC_DIR``, where
``prometheus_client`` keeps each worker's counters, histograms and gauges; a scrape, whichever worker answers it,
adds them up (counters and histograms summed, gauges as each declares: the cache's bytes and the pools' figures
summed over the live workers). With one worker, or without the folder, the worker's own registry answers, as
before. An operator who sets ``PROMETHEUS_MULTIPROC_DIR`` gives the folder (empty at each start) themselves.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, generate_latest, multiprocess

__all__ = ["FOLDER", "forget_worker", "scrape"]

FOLDER = "PROMETHEUS_MULTIPROC_DIR"


def scrape() -> bytes:
    """The metrics of every worker (several workers) or of this process (one)."""
    if not os.environ.get(FOLDER):
        return bytes(generate_latest())
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return bytes(generate_latest(registry))


def forget_worker(pid: int) -> None:
    """A stopping worker's live gauges leave the sums (its counters stay: they counted what it served)."""
    if os.environ.get(FOLDER):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
