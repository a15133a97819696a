"""The memory a search index build frees goes back to the system instead of staying in glibc's arenas.

An index is built in a worker thread, and glibc keeps what a thread frees in that thread's arena: at
10,000 tools that held back a couple of hundred MiB (docs/BENCHMARKS.md, "Memory and start-up").
The gateway trims after each build, so a `malloc_trim(0)` right after the first search finds next to
nothing left to return. Without the gateway's trim it returns about 14 MiB at this size.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers.paths import PYTHON, ROOT
from toolscout.gateway.index import _malloc_trim  # pyright: ignore[reportPrivateUsage]

SCRIPT = ROOT / "tests" / "fixtures" / "index_memory.py"
LEFT_KIB = 4 * 1024
"""At most this much memory may be left for a trim to return: a few MiB of the search's own work."""


@pytest.mark.skipif(_malloc_trim() is None, reason="malloc_trim is glibc's: without glibc there are no arenas to trim")
def test_after_the_first_search_nothing_is_left_for_a_trim_to_return() -> None:
    done = subprocess.run([PYTHON, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    left = measured["searched"] - measured["trimmed"]
    assert left <= LEFT_KIB, f"{left / 1024:.1f} MiB freed by the index build was still held: {measured}"
