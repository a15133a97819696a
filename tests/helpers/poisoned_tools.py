"""The names the tests import from here now live in `benchmarks.poisoned_tools`, shared with the benchmarks.

The tests may import them from there directly; this module only keeps their old imports working.
"""

from __future__ import annotations

from benchmarks.poisoned_tools import (
    ATTACKS,
    UNSEEN,
)

__all__ = ["ATTACKS", "UNSEEN"]
