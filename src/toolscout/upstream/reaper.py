"""The reaper: a tiny process that stops the stdio upstreams' process groups once the gateway is gone,
however it went.

On a normal shutdown the gateway stops each child's process group itself (stdio_child.py: stdin
closed, SIGTERM, SIGKILL). A gateway killed outright (SIGKILL, the OOM killer) cannot; the
parent-death signal its children ask for reaches them only, not what they started (it is not
inherited), and it has other limits (see `stdio_child._exit_with_gateway`). So the first stdio child
of a gateway process also starts its reaper: a small Python process, in a session of its own (a
signal to the gateway's process group or terminal does not reach it), whose stdin is a pipe that
only the gateway holds (close-on-exec: no child inherits it). The gateway writes each child's
process group to it as the child starts (`+PGID`) and once the group is gone (`-PGID`). When the
pipe ends, the gateway has exited, whatever the way: the reaper sends SIGTERM to the groups still
listed, waits up to `TERMINATE_GRACE` seconds for them to go, sends SIGKILL to what is left, and exits.

A group that a child leaves (setsid, a daemon) is beyond its reach, as it is beyond a normal shutdown's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading

logger = logging.getLogger(__name__)

TERMINATE_GRACE = 0.5
"""How long the groups left get after SIGTERM, before SIGKILL (as on a normal shutdown)."""

_PROGRAM = """
import os, signal, sys, time
grace = float(sys.argv[1])
groups, pending = set(), b""
while True:
    try:
        chunk = os.read(0, 4096)
    except InterruptedError:
        continue
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
def send(signum):
    for group in list(groups):
        try:
            os.killpg(group, signum)
        except ProcessLookupError:
            groups.discard(group)
        except PermissionError:
            pass
send(signal.SIGTERM)
deadline = time.monotonic() + grace
while groups and time.monotonic() < deadline:
    time.sleep(0.01)
    send(0)
send(signal.SIGKILL)
"""


class Reaper:
    """The gateway process's reaper (one per process: see `reaper`), started on the first `watch()`.

    Safe to call from any thread. If it cannot be started, or has gone, the gateway carries on
    without it (a warning says so): a normal shutdown does not need it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._process: subprocess.Popen[bytes] | None = None
        self._failed = False
        self._groups: set[int] = set()

    def watch(self, pgid: int) -> None:
        """Have process group `pgid` stopped should the gateway die before calling `forget(pgid)`."""
        with self._lock:
            self._groups.add(pgid)
            if self._fd < 0 and not self._failed:
                self._start()
            self._tell(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        """Process group `pgid` is gone (or stopped otherwise): the reaper leaves it alone."""
        with self._lock:
            if pgid in self._groups:
                self._groups.discard(pgid)
                self._tell(f"-{pgid}\n")

    def kill_all(self) -> None:
        """SIGKILL every group being watched, now (a shutdown that ran out of time)."""
        with self._lock:
            groups = list(self._groups)
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    @property
    def pid(self) -> int | None:
        """The reaper's process id, once started."""
        return None if self._process is None else self._process.pid

    def _start(self) -> None:
        read_end, write_end = os.pipe()  # both close-on-exec: only the reaper gets read_end, as its stdin
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _PROGRAM, str(TERMINATE_GRACE)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
            )
        except OSError as exc:
            os.close(write_end)
            self._failed = True
            logger.warning(
                "could not start the reaper (%s): should the gateway be killed outright, what its stdio "
                "servers started may outlive it",
                exc,
            )
            return
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        self._fd = write_end

    def _tell(self, line: str) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, line.encode())  # a few bytes: a pipe takes them whole, or not at all
        except OSError as exc:  # it has gone (EPIPE), or stopped reading (EAGAIN)
            logger.warning(
                "the reaper is gone (%s): should the gateway be killed outright, what its stdio servers "
                "started may outlive it",
                exc,
            )
            os.close(self._fd)
            self._fd = -1
            self._failed = True


reaper = Reaper()
"""This process's reaper."""
