"""Rate limits counted in Redis (``MEMTRIAL_REDIS_URL``): every replica, on every machine, shares them.

A limited key (an API key's digest, or a client address for wrong-key limits) is hashed and counted
under one Redis key per minute, ``{prefix}{<digest>}:<minute>``, expiring three minutes later. One Lua
script, atomic in Redis, reads this minute's and the last minute's counts, decides by the same sliding
estimate as the local table (``count + previous * (1 - seconds into this minute / 60)``) and counts
the request only when it is let through; ``Retry-After`` is computed from those counts exactly as
there (:func:`service.ratelimit.sliding_decision`). The clock is Redis's own (``TIME``), so replicas
whose clocks differ still agree on the minute.

When Redis does not answer (down, unreachable, timing out after ``TIMEOUT`` seconds, or refusing the
script), the request is counted in this machine's table instead: limits still hold, per machine. Each
such decision adds one to ``memtrial_rate_limit_fallbacks_total``; the first of an outage logs one
warning, and the first answer after it one line more. Redis is tried again ``RETRY_SECONDS`` after
a failure, so an outage costs a request at most one timeout. A request is never refused, nor does it
fail, because Redis is down.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from typing import Any

from prometheus_client import Counter

from service.ratelimit import Decision, RateLimiter, sliding_decision

__all__ = ["FALLBACKS", "RETRY_SECONDS", "TIMEOUT", "RedisRateLimiter"]

logger = logging.getLogger("memtrial.service")
FALLBACKS = Counter(
    "memtrial_rate_limit_fallbacks_total",
    "Rate-limit decisions counted on this machine alone because Redis did not answer",
)
TIMEOUT = 0.5  # seconds to connect to Redis, and for one answer
RETRY_SECONDS = 5.0  # after a failure, how long this process counts locally before asking Redis again

# KEYS[1]: the key's base name; ARGV: moment (seconds, empty: Redis's clock), limit, count it (1) or not (0)
SCRIPT = """
local moment = tonumber(ARGV[1])
local seconds, micros = 0, 0
if moment == nil then
  local now = redis.call('TIME')
  seconds, micros = tonumber(now[1]), tonumber(now[2])
  moment = seconds + micros / 1000000
end
local per_minute = tonumber(ARGV[2])
local minute = math.floor(moment / 60)
local into = moment / 60 - minute
local this_key = KEYS[1] .. ':' .. string.format('%d', minute)
local count = tonumber(redis.call('GET', this_key) or '0')
local previous = tonumber(redis.call('GET', KEYS[1] .. ':' .. string.format('%d', minute - 1)) or '0')
local allowed = 0
if count + previous * (1 - into) + 1 <= per_minute then
  allowed = 1
  if ARGV[3] == '1' then
    redis.call('INCR', this_key)
    redis.call('EXPIRE', this_key, 180)
  end
end
return {allowed, count, previous, seconds, micros}
"""


class RedisRateLimiter:
    """Counts in the Redis at ``url`` under ``prefix``; counts in ``fallback`` while Redis does not answer."""

    def __init__(self, url: str, prefix: str, fallback: RateLimiter) -> None:
        from memtrial.errors import import_extra

        redis = import_extra("redis", "service", "rate limits in Redis")
        self.prefix = prefix
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
        self._client: Any = redis.Redis.from_url(url, socket_connect_timeout=TIMEOUT, socket_timeout=TIMEOUT)
        self._script: Any = self._client.register_script(SCRIPT)
        self._fallback = fallback
        self._lock = threading.Lock()
        self._down = False
        self._retry_at = 0.0  # time.monotonic() before which Redis is not asked

    def hit(self, key: str, per_minute: int, now: float | None = None) -> Decision:
        """Count one request of ``key`` if it is within ``per_minute`` (0: unlimited)."""
        return self._decide(key, per_minute, now, count=True)

    def check(self, key: str, per_minute: int, now: float | None = None) -> Decision:
        """Whether one more request of ``key`` would be within ``per_minute``, counting nothing."""
        return self._decide(key, per_minute, now, count=False)

    def close(self) -> None:
        self._client.close()
        self._fallback.close()

    def _decide(self, key: str, per_minute: int, now: float | None, count: bool) -> Decision:
        if per_minute <= 0:
            return Decision(True, 0)
        if time.monotonic() >= self._retry_at:
            try:
                verdict = self._in_redis(key, per_minute, now, count)
            except self._errors as error:
                self._went_down(error)
            else:
                self._came_back()
                return verdict
        FALLBACKS.inc()
        return self._fallback.hit(key, per_minute, now) if count else self._fallback.check(key, per_minute, now)

    def _in_redis(self, key: str, per_minute: int, now: float | None, count: bool) -> Decision:
        digest = hashlib.sha256(key.encode()).digest()[:16].hex()
        moment_arg = "" if now is None else repr(float(now))
        allowed, counted, previous, seconds, micros = self._script(
            keys=[f"{self.prefix}{{{digest}}}"], args=[moment_arg, per_minute, int(count)]
        )
        if allowed:
            return Decision(True, 0)
        moment = float(now) if now is not None else int(seconds) + int(micros) / 1_000_000
        into = moment / 60 - math.floor(moment / 60)
        verdict = sliding_decision(int(counted), int(previous), into, per_minute)
        return verdict if not verdict.allowed else Decision(False, 1)  # Redis refused: never let it through here

    def _went_down(self, error: BaseException) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            first = not self._down
            self._down = True
        if not first:
            return
        from redis.exceptions import ResponseError

        if isinstance(error, ResponseError):  # it answered, and refused: a setting to fix, not an outage to wait out
            logger.error(
                "Redis refuses the rate limits' commands (check MEMTRIAL_REDIS_URL: its database number, user and "
                "password): rate limits are counted on this machine alone until it accepts them",
                extra={"error_type": type(error).__name__, "error": str(error).splitlines()[0][:200]},
            )
        else:
            logger.warning(
                "Redis does not answer: rate limits are counted on this machine alone until it does",
                extra={"error_type": type(error).__name__},
            )

    def _came_back(self) -> None:
        if not self._down:
            return
        with self._lock:
            was_down, self._down = self._down, False
        if was_down:
            logger.warning("Redis answers again: rate limits are counted in Redis")
