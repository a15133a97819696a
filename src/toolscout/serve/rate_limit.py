"""Per-principal request rates: a token bucket for each client key and issued token that has a
`requestsPerMinute`, kept in memory.

A bucket holds up to a minute's worth of requests and refills continuously, so a principal may
make `requestsPerMinute` requests at once after a quiet minute, and that many a minute from then
on. A request over the rate is told how many whole seconds until one more would be let through
(its `Retry-After`). A restart starts every bucket full.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_BUCKETS = 100_000
"""Buckets kept at most; beyond, the full ones (idle for a minute or more) are forgotten."""


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets by principal subject."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, subject: str, per_minute: int) -> int | None:
        """Take one request from `subject`'s bucket: None if it may go ahead, else the seconds
        (at least 1) to wait before it would be let through."""
        now = self._clock()
        rate = per_minute / 60.0
        bucket = self._buckets.get(subject)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._forget_full(now)
            bucket = self._buckets[subject] = _Bucket(float(per_minute), now)
        else:
            bucket.tokens = min(float(per_minute), bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return max(1, math.ceil((1.0 - bucket.tokens) / rate))

    def _forget_full(self, now: float) -> None:
        # A bucket untouched for a minute is full again: forgetting it changes nothing.
        self._buckets = {s: b for s, b in self._buckets.items() if now - b.updated < 60.0}
