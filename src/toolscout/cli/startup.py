"""The cyclic garbage collector while a command starts (off), and once it has started (on).

Start-up makes some 150,000 objects that live as long as the process: the MCP SDK's pydantic models
of every protocol era, the config and search modules. Collecting while they are made walks them
again and again for nothing (one full collection of them takes 80 ms on two cores); see
docs/BENCHMARKS.md, cold start. Once start-up is over they are frozen (moved out of the
collector's generations), so that the collections made while serving walk only what serving
allocates.
"""

from __future__ import annotations

import gc

_deferred = False


def defer_collection() -> None:
    """Turn the collector off until `startup_over` (a no-op if something else turned it off)."""
    global _deferred
    if gc.isenabled():
        gc.disable()
        _deferred = True


def startup_over() -> None:
    """Freeze what start-up made and turn the collector back on (only if `defer_collection` turned it off)."""
    global _deferred
    if _deferred:
        _deferred = False
        gc.freeze()
        gc.enable()
