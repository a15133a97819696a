"""The names the tests import from here now live in `benchmarks.processes`, shared with the benchmarks.

The tests may import them from there directly; this module only keeps their old imports working.
"""

from __future__ import annotations

from benchmarks.processes import (
    SERVE_READY,
    UVICORN_READY,
    Running,
    alive,
    collect_lines,
    exited,
    free_port,
    running,
    stop,
)

__all__ = [
    "SERVE_READY",
    "UVICORN_READY",
    "Running",
    "alive",
    "collect_lines",
    "exited",
    "free_port",
    "running",
    "stop",
]
