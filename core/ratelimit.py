"""Atomic rate limits: a sliding-window log per key, counted and decided in one step.

A limit "N per window" lets through at most N attempts in any window-long span, however many
clients race: on Redis (the default cache when REDIS_URL is set, shared by every process) a Lua
script prunes the key's log, counts it and records the attempt as one atomic command, with the
server's clock (TIME), so processes on skewed machines agree. On another cache backend (locmem:
development and most tests) the same steps run under a process lock, which is as wide as that
cache is shared.

Reading a count, comparing, then writing it back (DRF's SimpleRateThrottle does this with its
history list) lets concurrent requests all read the same count: 16 clients got 137 of 200
pushes through a 120/min limit that way.
"""

from __future__ import annotations

import threading
import time
import uuid
from functools import lru_cache

import redis
from django.conf import settings
from django.core.cache import cache

# KEYS[1] the log (a sorted set of attempt ids scored by time, µs). ARGV: limit, window (µs),
# a unique id for this attempt. Returns {1, 0} when counted, {0, µs to wait} when refused.
_SLIDING_LOG = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
"""

_local_lock = threading.Lock()
REDIS_BACKEND = "django.core.cache.backends.redis.RedisCache"


@lru_cache(maxsize=4)
def _redis_script(location: str) -> redis.commands.core.Script:
    return redis.Redis.from_url(location).register_script(_SLIDING_LOG)


def _redis_location() -> str | None:
    """The Redis URL of the default cache, or None when the cache is not Redis."""
    config = settings.CACHES["default"]
    if config.get("BACKEND") != REDIS_BACKEND:
        return None
    location = config["LOCATION"]
    return location if isinstance(location, str) else location[0]


def hit(key: str, limit: int, window_s: float) -> float | None:
    """Count one attempt under `key`; None when it is within `limit` per `window_s` seconds,
    else the seconds until the oldest counted attempt leaves the window (nothing counted)."""
    if limit <= 0:
        return float(window_s)
    key = f"ratelimit:{key}"
    location = _redis_location()
    if location is not None:
        script = _redis_script(location)
        args = [limit, int(window_s * 1_000_000), uuid.uuid4().hex]
        counted, wait_us = script(keys=[cache.make_key(key)], args=args)
        return None if counted else max(int(wait_us), 1) / 1_000_000
    with _local_lock:
        now = time.time()
        log = [t for t in (cache.get(key) or []) if t > now - window_s]
        if len(log) >= limit:
            return max(log[0] + window_s - now, 1e-6)
        log.append(now)
        cache.set(key, log, timeout=int(window_s) + 1)
        return None
