"""Rate limits shared by every worker of a server, with ``Retry-After``.

Counters live in a small memory-mapped table: a file that ``memtrial serve``
creates for its workers (``MEMTRIAL_RATE_LIMIT_FILE``), or anonymous memory in
a single process. Each slot holds a key's digest, the current minute and the
counts of this minute and the last; the estimate of the last 60 seconds is
``count + previous * (1 - seconds into this minute / 60)`` (a sliding window
kept in O(1)). Slots are claimed by open addressing; a slot whose minute is
two or more minutes old is free again. When every slot a key may use holds a
live key, the one with the least recent traffic is evicted: the table never
grows and never stops counting (a flood of distinct keys cannot make a new key
unlimited). Updates hold an exclusive ``flock`` on the file (and a thread
lock), so workers and threads count together.

``Retry-After`` is the exact time until the sliding estimate lets one more
request through (rounded up to whole seconds), across minute boundaries, so a
client that waits it is served.

With ``MEMTRIAL_REDIS_URL`` the counts live in Redis instead, shared by every
replica on every machine, with the same estimate and ``Retry-After``
(:mod:`service.ratelimit_redis`); this table then counts only while Redis does
not answer.
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import math
import mmap
import os
import struct
import threading
import time
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Decision", "RateLimiter", "SharedRateLimiter", "TrustedProxies", "sliding_decision"]

_SLOT = struct.Struct("<16sqii")  # digest, minute, count this minute, count last minute
SLOTS = 8192
PROBES = 64


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: int  # seconds until one more request would be allowed (0 when allowed)


class RateLimiter(Protocol):
    """What the service asks of a rate limiter (this machine's table, or Redis: ``service.ratelimit_redis``)."""

    def hit(self, key: str, per_minute: int, now: float | None = None) -> Decision: ...

    def check(self, key: str, per_minute: int, now: float | None = None) -> Decision: ...

    def close(self) -> None: ...


class SharedRateLimiter:
    def __init__(self, path: str | None = None, slots: int = SLOTS) -> None:
        self.slots = slots
        size = slots * _SLOT.size
        self._thread_lock = threading.Lock()
        self._file: int | None = None
        if path is None:
            self._map = mmap.mmap(-1, size)
        else:
            try:  # never through a link: the file is written, and a link could aim it at any file of this user's
                self._file = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            except OSError as error:
                if os.path.islink(path):
                    raise ValueError(f"MEMTRIAL_RATE_LIMIT_FILE must not be a symbolic link, got {path!r}") from None
                raise error
            if os.fstat(self._file).st_size < size:
                os.ftruncate(self._file, size)
            self._map = mmap.mmap(self._file, size)

    def close(self) -> None:
        self._map.close()
        if self._file is not None:
            os.close(self._file)

    def hit(self, key: str, per_minute: int, now: float | None = None) -> Decision:
        """Count one request of ``key`` if it is within ``per_minute`` (0: unlimited)."""
        return self._locked(key, per_minute, now, count=True)

    def check(self, key: str, per_minute: int, now: float | None = None) -> Decision:
        """Whether one more request of ``key`` would be within ``per_minute``, counting nothing."""
        return self._locked(key, per_minute, now, count=False)

    def _locked(self, key: str, per_minute: int, now: float | None, count: bool) -> Decision:
        if per_minute <= 0:
            return Decision(True, 0)
        moment = time.time() if now is None else now
        digest = hashlib.sha256(key.encode()).digest()[:16]
        start = int.from_bytes(digest[:8], "little") % self.slots
        with self._thread_lock:
            if self._file is not None:
                fcntl.flock(self._file, fcntl.LOCK_EX)
            try:
                return self._hit(digest, start, moment, per_minute, count)
            finally:
                if self._file is not None:
                    fcntl.flock(self._file, fcntl.LOCK_UN)

    def _hit(self, digest: bytes, start: int, moment: float, per_minute: int, count_it: bool) -> Decision:
        minute = int(moment // 60)
        into = moment / 60 - minute
        free = None
        quietest, quietest_load = None, float("inf")
        for probe in range(PROBES):
            slot = (start + probe) % self.slots
            offset = slot * _SLOT.size
            stored, stored_minute, count, previous = _SLOT.unpack_from(self._map, offset)
            if stored == digest:
                if stored_minute == minute - 1:
                    count, previous = 0, count
                elif stored_minute != minute:
                    count, previous = 0, 0
                return self._count(offset, digest, minute, into, count, previous, per_minute, count_it)
            if free is None and (stored_minute < minute - 1 or stored == bytes(16)):
                free = offset
            load = _estimate(stored_minute, count, previous, minute, into)
            if load < quietest_load:
                quietest, quietest_load = offset, load
        if free is None:  # every slot this key may use is live: evict the one with the least recent traffic
            free = quietest
        assert free is not None
        return self._count(free, digest, minute, into, 0, 0, per_minute, count_it)

    def _count(
        self,
        offset: int,
        digest: bytes,
        minute: int,
        into: float,
        count: int,
        previous: int,
        per_minute: int,
        count_it: bool,
    ) -> Decision:
        verdict = sliding_decision(count, previous, into, per_minute)
        if count_it:
            _SLOT.pack_into(self._map, offset, digest, minute, count + verdict.allowed, previous)
        return verdict


def sliding_decision(count: int, previous: int, into: float, per_minute: int) -> Decision:
    """Whether one more request fits ``per_minute``, by the sliding estimate of the last 60 seconds.

    count, previous: requests counted in this minute and the last; into: the fraction of this minute
    gone, in [0, 1). The estimate is ``count + previous * (1 - into)``; a refusal carries the exact
    seconds until the estimate admits one more request (rounded up, at least 1).
    """
    if count + previous * (1.0 - into) + 1 > per_minute:
        return Decision(False, max(1, math.ceil(_wait(count, previous, into, per_minute) - 1e-9)))
    return Decision(True, 0)


def _estimate(stored_minute: int, count: int, previous: int, minute: int, into: float) -> float:
    """A slot's sliding estimate of its key's last 60 seconds now (0 for a slot two or more minutes old)."""
    if stored_minute == minute:
        return count + previous * (1.0 - into)
    if stored_minute == minute - 1:
        return count * (1.0 - into)
    return 0.0


def _wait(count: int, previous: int, into: float, per_minute: int) -> float:
    """Seconds until ``estimate + 1 <= per_minute``, the estimate decaying as time passes (refused requests are not counted).

    In this minute the estimate is ``count + previous * (1 - t)``; once the minute turns it is
    ``count * (1 - t')``; a minute later it is 0.
    """
    allowed = per_minute - 1  # the estimate must fall to this
    if count <= allowed and previous > 0:  # within this minute, as the last minute's share decays
        fraction = 1.0 - (allowed - count) / previous
        if fraction > into:
            return (fraction - into) * 60.0 + 0.5
        return 0.5
    to_turn = (1.0 - into) * 60.0
    if count <= allowed:
        return to_turn + 0.5
    fraction = 1.0 - allowed / count  # into the next minute
    return to_turn + fraction * 60.0 + 0.5


class TrustedProxies:
    """The peers whose ``X-Forwarded-For`` is believed (``MEMTRIAL_TRUSTED_PROXIES``: addresses or
    networks, comma-separated; empty: none, so a client cannot choose the address it is limited by)."""

    def __init__(self, spec: str) -> None:
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            try:
                self.networks.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise ValueError(f"MEMTRIAL_TRUSTED_PROXIES: {part!r} is not an IP address or network") from None

    def trusts(self, address: str) -> bool:
        if not self.networks:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip.version == network.version and ip in network for network in self.networks)
