"""Rate limits shared by every worker of a server, with ``Retry-After``.

Counters live in a small memory-mapped table: a file that ``memtrial serve``
creates for its workers (``MEMTRIAL_RATE_LIMIT_FILE``), or anonymous memory in
a single process. Each slot holds a key's digest, the current minute and the
counts of this minute and the last; the estimate of the last 60 seconds is
``count + previous * (1 - seconds into this minute / 60)`` (a sliding window
kept in O(1)). Slots are claimed by open addressing; a slot whose minute is
two or more minutes old is free again. Updates hold an exclusive ``flock`` on
the file (and a thread lock), so workers and threads count together.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import mmap
import os
import struct
import threading
import time
from dataclasses import dataclass

__all__ = ["Decision", "SharedRateLimiter"]

_SLOT = struct.Struct("<16sqii")  # digest, minute, count this minute, count last minute
SLOTS = 8192
PROBES = 64


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: int  # seconds until one more request would be allowed (0 when allowed)


class SharedRateLimiter:
    def __init__(self, path: str | None = None, slots: int = SLOTS) -> None:
        self.slots = slots
        size = slots * _SLOT.size
        self._thread_lock = threading.Lock()
        self._file: int | None = None
        if path is None:
            self._map = mmap.mmap(-1, size)
        else:
            self._file = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            if os.fstat(self._file).st_size < size:
                os.ftruncate(self._file, size)
            self._map = mmap.mmap(self._file, size)

    def close(self) -> None:
        self._map.close()
        if self._file is not None:
            os.close(self._file)

    def hit(self, key: str, per_minute: int, now: float | None = None) -> Decision:
        """Count one request of ``key`` if it is within ``per_minute`` (0: unlimited)."""
        if per_minute <= 0:
            return Decision(True, 0)
        moment = time.time() if now is None else now
        minute = int(moment // 60)
        into = moment / 60 - minute
        digest = hashlib.sha256(key.encode()).digest()[:16]
        start = int.from_bytes(digest[:8], "little") % self.slots
        with self._thread_lock:
            if self._file is not None:
                fcntl.flock(self._file, fcntl.LOCK_EX)
            try:
                return self._hit(digest, start, minute, into, per_minute)
            finally:
                if self._file is not None:
                    fcntl.flock(self._file, fcntl.LOCK_UN)

    def _hit(self, digest: bytes, start: int, minute: int, into: float, per_minute: int) -> Decision:
        free = None
        for probe in range(PROBES):
            slot = (start + probe) % self.slots
            offset = slot * _SLOT.size
            stored, stored_minute, count, previous = _SLOT.unpack_from(self._map, offset)
            if stored == digest:
                if stored_minute == minute - 1:
                    count, previous = 0, count
                elif stored_minute != minute:
                    count, previous = 0, 0
                return self._count(offset, digest, minute, into, count, previous, per_minute)
            if free is None and (stored_minute < minute - 1 or stored == bytes(16)):
                free = offset
        if free is None:  # the table is full of live keys: count nobody out rather than everybody
            return Decision(True, 0)
        return self._count(free, digest, minute, into, 0, 0, per_minute)

    def _count(self, offset: int, digest: bytes, minute: int, into: float, count: int, previous: int, per_minute: int) -> Decision:
        estimate = count + previous * (1.0 - into)
        if estimate + 1 > per_minute:
            _SLOT.pack_into(self._map, offset, digest, minute, count, previous)
            # wait until the weighted share of the last minute has decayed enough (or the minute turns)
            if previous > 0:
                needed = (estimate + 1 - per_minute) / previous * 60.0
                wait = min(needed, (1.0 - into) * 60.0 + 1.0)
            else:
                wait = (1.0 - into) * 60.0
            return Decision(False, max(1, math.ceil(wait)))
        _SLOT.pack_into(self._map, offset, digest, minute, count + 1, previous)
        return Decision(True, 0)
