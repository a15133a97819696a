"""The names the tests import from here now live in `benchmarks.processes`, shared with the benchmarks.

The tests may import them from there directly; this module only keeps their old imports working.
"""

from __future__ import annotations

from benchmarks.processes import (
    RedisServer,
    redis_server,
)

__all__ = ["RedisServer", "redis_server"]
