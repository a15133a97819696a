"""A guard that lets a thread start while another thread installs coverage's tracer (Python 3.11).

CPython 3.11 keeps one process-wide flag while any thread installs a trace function. When freeing
the old trace function lets another thread run, and that thread is just starting and installs the
trace function `threading.settrace` asked for (coverage's), `sys.settrace` raises RuntimeError in
the new thread before its target runs. The thread is gone: an AnyIO worker thread that dies this way
never runs its job, and pytest reports the lost exception as an error of whichever test comes next.
CPython 3.12 installs trace functions differently and has no such flag.

The guard gives `threading` a view of `sys` whose `settrace` tries again for a moment while the flag
is held. Everything else goes to `sys` itself, and nothing changes outside the test process.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

RETRIES = 1000
PAUSE = 0.001  # seconds between tries; the flag is held for as long as one object takes to free


class _SysRetryingSettrace:
    """`sys` as `threading` sees it, with a `settrace` that waits out another thread's install."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)

    @staticmethod
    def settrace(function: Any) -> None:
        for _ in range(RETRIES):
            try:
                sys.settrace(function)
            except RuntimeError:
                time.sleep(PAUSE)
            else:
                return
        sys.settrace(function)


def guard_thread_start() -> None:
    """Let new threads install their trace function safely; only Python 3.11 and older need it."""
    if sys.version_info < (3, 12):
        setattr(threading, "_sys", _SysRetryingSettrace())  # noqa: B010 -- a private name of threading
