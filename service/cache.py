"""One byte budget for a worker's cached engines and retrieval indexes, least recently used evicted first.

A worker keeps, per agent it has served, the engine it last saved and the FAISS index of its
experiences. Both are rebuilt from the database when missing (the engine from ``agents.state`` and the
embeddings, the index from ``experiences``), so the cache only saves work: :class:`ByteBudget` holds
them up to ``MEMTRIAL_CACHE_MB`` together and evicts the least recently used beyond it. Sizes are
estimates, calibrated by ``benchmarks/bench_cache.py`` against the worker's resident memory:

- an engine: 3.5 KB per experience (its float64 embedding, the learner's features, content vectors and
  statistics) plus 24 KB;
- an index: its vectors (1,536 bytes each) and ids, plus HNSW's links when approximate.

Freed memory is handed back to the operating system as it is evicted: glibc keeps freed heap pages for
reuse, and a worker churning through more agents than it holds would otherwise keep its high-water mark
(``malloc_trim`` after every eighth of the budget evicted, at most once a second; elsewhere a no-op).

Hits, misses, evictions and the bytes held are Prometheus series (``memtrial_cache_*``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from prometheus_client import Counter, Gauge

__all__ = ["DEFAULT_BUDGET", "ByteBudget", "engine_bytes", "index_bytes"]

DEFAULT_BUDGET = 256 * 2**20

HITS = Counter("memtrial_cache_hits_total", "Cache lookups that found the entry", ["cache"])
MISSES = Counter("memtrial_cache_misses_total", "Cache lookups that had to load from the database", ["cache"])
EVICTIONS = Counter("memtrial_cache_evictions_total", "Entries evicted to keep the byte budget", ["cache"])
# with several workers (one /metrics for all: service.metrics) the bytes add up over the live workers and the
# budget is each one's
HELD = Gauge("memtrial_cache_bytes", "Estimated bytes the cache holds", ["cache"], multiprocess_mode="livesum")
BUDGET = Gauge(
    "memtrial_cache_budget_bytes", "The cache's byte budget (MEMTRIAL_CACHE_MB)", multiprocess_mode="livemax"
)

KINDS = ("engine", "index")
ENGINE_BASE = 24_000
ENGINE_PER_EXPERIENCE = 3_500
INDEX_BASE = 4_096
VECTOR_BYTES = 384 * 4 + 8  # float32 vector and its int64 id
HNSW_LINK_BYTES = 2 * 32 * 4 + 16  # level-0 links (2 M) and the level list


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (returns freed heap memory to the system), or None where there is none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


TRIM = _malloc_trim()
TRIM_EVERY_SECONDS = 1.0


def engine_bytes(n_experiences: int) -> int:
    """Estimated memory of an engine holding ``n_experiences``."""
    return ENGINE_BASE + ENGINE_PER_EXPERIENCE * n_experiences


def index_bytes(n_vectors: int, approximate: bool) -> int:
    """Estimated memory of an index of ``n_vectors`` (flat, or HNSW when ``approximate``)."""
    return INDEX_BASE + n_vectors * (VECTOR_BYTES + (HNSW_LINK_BYTES if approximate else 0))


class ByteBudget:
    """Entries ``(kind, key) -> value`` with a size in bytes; beyond ``budget`` bytes the least recently used go.

    ``kind`` names the cache in the metrics (``engine``, ``index``). An entry larger than the whole budget
    is not kept. Thread-safe.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[tuple[str, Hashable], tuple[Any, int]] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._evicted_since_trim = 0
        self._last_trim = 0.0
        BUDGET.set(budget)
        for kind in KINDS:  # every series exists from the start, at 0
            for series in (HITS, MISSES, EVICTIONS):
                series.labels(kind)
            HELD.labels(kind).set(0)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(self._bytes.values())

    def held(self, kind: str) -> int:
        with self._lock:
            return self._bytes.get(kind, 0)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, item: tuple[str, Hashable]) -> bool:
        with self._lock:
            return item in self._entries

    def peek(self, kind: str, key: Hashable) -> Any:
        """The entry, or None, without counting a lookup or refreshing its place."""
        with self._lock:
            found = self._entries.get((kind, key))
            return None if found is None else found[0]

    def get(self, kind: str, key: Hashable) -> Any:
        """The entry (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get((kind, key))
            if found is None:
                MISSES.labels(kind).inc()
                return None
            self._entries.move_to_end((kind, key))
            HITS.labels(kind).inc()
            return found[0]

    def pop(self, kind: str, key: Hashable) -> Any:
        """Take the entry out (a request works on it alone), or None."""
        with self._lock:
            found = self._entries.pop((kind, key), None)
            if found is None:
                MISSES.labels(kind).inc()
                return None
            self._add(kind, -found[1])
            HITS.labels(kind).inc()
            return found[0]

    def put(self, kind: str, key: Hashable, value: Any, size: int) -> None:
        """Keep ``value`` as the most recently used, evicting the least recently used beyond the budget."""
        with self._lock:
            old = self._entries.pop((kind, key), None)
            if old is not None:
                self._add(kind, -old[1])
            if size > self.budget:
                EVICTIONS.labels(kind).inc()
                return
            self._entries[(kind, key)] = (value, size)
            self._add(kind, size)
            self._evict()
        self._trim()

    def resize(self, kind: str, key: Hashable, size: int) -> None:
        """An entry's new size (its index grew); evicts if the budget is now exceeded."""
        with self._lock:
            found = self._entries.get((kind, key))
            if found is None:
                return
            self._entries[(kind, key)] = (found[0], size)
            self._add(kind, size - found[1])
            if sum(self._bytes.values()) > self.budget:
                self._entries.move_to_end((kind, key))
                self._evict()
        self._trim()

    def discard(self, kind: str, key: Hashable) -> None:
        with self._lock:
            found = self._entries.pop((kind, key), None)
            if found is not None:
                self._add(kind, -found[1])

    def _add(self, kind: str, size: int) -> None:
        self._bytes[kind] = self._bytes.get(kind, 0) + size
        HELD.labels(kind).set(self._bytes[kind])

    def _evict(self) -> None:
        while sum(self._bytes.values()) > self.budget and self._entries:
            (kind, _), (_, size) = self._entries.popitem(last=False)
            self._add(kind, -size)
            self._evicted_since_trim += size
            EVICTIONS.labels(kind).inc()

    def _trim(self) -> None:
        """Give freed memory back once an eighth of the budget was evicted (outside the lock)."""
        now = time.monotonic()
        with self._lock:
            due = self._evicted_since_trim * 8 >= self.budget and now - self._last_trim >= TRIM_EVERY_SECONDS
            if due:
                self._evicted_since_trim, self._last_trim = 0, now
        if due and TRIM is not None:
            TRIM(0)
