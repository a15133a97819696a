"""The gateway's log on stderr, written so that nobody reading it slowly can stall the gateway.

An MCP client that launches `toolscout serve` owns the other end of its stderr, and many never read
it. Once the pipe's 64 KiB are full, a plain `StreamHandler` blocks the event loop at the next log
line: every call stalls, and so does every stdio upstream whose stderr lines the gateway logs. Here
the lines are written by a thread of their own; while it is blocked, up to `limit` bytes wait, and
lines past that are dropped and counted in a line written once stderr moves again.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections import deque

DEFAULT_LIMIT = 1 << 20
"""Bytes of log lines kept waiting while stderr is not read; later lines are dropped."""
LINGER_SECONDS = 0.02
"""How long the writer gathers lines after the first before writing them: one wake-up per burst, not
per line (a thread woken per line costs each tool call tens of microseconds of the event loop's time)."""
CLOSE_WAIT_SECONDS = 1.0
"""How long closing waits for waiting lines to be written (a reader that never reads must not hold up exit)."""


class BackgroundStderrHandler(logging.Handler):
    """A logging handler that never blocks its caller on a full stderr pipe."""

    def __init__(self, fd: int = 2, *, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__()
        # A descriptor of its own: the line writes go on whatever the process does with fd 2 later.
        self._fd = os.dup(fd)
        self._limit = limit
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._dropped = 0
        self._writing = False
        self._idle = False
        self._flushing = False
        self._stuck = False
        """A flush ran out of time with the writer blocked on a full stderr."""
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._write_lines, name="toolscout stderr log", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Lines dropped since the last note about dropped lines."""
        return self._dropped

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "backslashreplace")
        except Exception:
            self.handleError(record)
            return
        with self._ready:
            if self._closed:
                return
            if self._pending_bytes + len(line) > self._limit:
                self._dropped += 1
                return
            if self._dropped:
                note = f"toolscout: {self._dropped} log lines dropped: stderr was not read fast enough\n".encode()
                self._pending.append(note)
                self._pending_bytes += len(note)
                self._dropped = 0
            self._pending.append(line)
            self._pending_bytes += len(line)
            if self._idle:
                self._ready.notify_all()

    def flush(self) -> None:
        """Wait (a bounded while) until the lines logged so far are written.

        Once a wait has run out, later flushes return at once until stderr moves again: at exit,
        logging flushes and closes every handler, and a reader that never reads costs one wait.
        """
        with self._ready:
            if self._stuck:
                return
            self._flushing = True
            self._ready.notify_all()
            done = self._ready.wait_for(
                lambda: not (self._pending or self._writing) or self._closed, CLOSE_WAIT_SECONDS
            )
            self._flushing = False
            self._stuck = not done

    def close(self) -> None:
        self.flush()
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self._thread.join(0 if self._stuck else CLOSE_WAIT_SECONDS)
        if not self._thread.is_alive():
            os.close(self._fd)
        super().close()

    def _write_lines(self) -> None:
        while True:
            with self._ready:
                self._idle = True
                self._ready.wait_for(lambda: bool(self._pending) or self._closed)
                self._idle = False
                self._ready.wait_for(lambda: self._flushing or self._closed, LINGER_SECONDS)
                if self._closed:
                    return
                chunk = b"".join(self._pending)
                self._pending.clear()
                self._pending_bytes = 0
                self._writing = True
            try:
                view = memoryview(chunk)
                while view:
                    try:
                        view = view[os.write(self._fd, view) :]
                    except BlockingIOError:  # a terminal shared with a non-blocking stdout: wait for room
                        select.select([], [self._fd], [])
            except OSError:  # stderr is gone (the reader closed it): nothing more can be said there
                with self._ready:
                    self._closed = True
                    self._pending.clear()
                    self._ready.notify_all()
                return
            with self._ready:
                self._writing = False
                self._stuck = False
                self._ready.notify_all()
