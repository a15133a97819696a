"""A stdio upstream: a child process spoken to over its stdin and stdout, its stderr logged; and the
reaper, a tiny process that stops the children's process groups once the gateway is gone, however
it went.

The child is run here rather than by the SDK's `stdio_client`, for the sake of stopping it: it is
given a short time to exit once its stdin is closed, then its whole process group is terminated and
killed, within `STDIN_CLOSE_GRACE + TERMINATE_GRACE` seconds (the SDK waits 2 s before even
signalling it, which is as long as an MCP client waits before signalling the gateway); and should
the gateway die first, even of SIGKILL, it is killed too (Linux: `PR_SET_PDEATHSIG`), and its
process group stopped by the gateway's reaper.

A gateway killed outright (SIGKILL, the OOM killer) cannot stop its children's process groups
itself; the parent-death signal its children ask for reaches them only, not what they started (it
is not inherited), and it has other limits (see `_exit_with_gateway`). So the first stdio child of
a gateway process also starts its reaper: a small Python process, in a session of its own (a signal
to the gateway's process group or terminal does not reach it), whose stdin is a pipe that only the
gateway holds (close-on-exec: no child inherits it). The gateway writes each child's process group
to it as the child starts (`+PGID`) and once the group is gone (`-PGID`). When the pipe ends, the
gateway has exited, whatever the way: the reaper sends SIGTERM to the groups still listed, waits up
to `TERMINATE_GRACE` seconds for them to go, sends SIGKILL to what is left, and exits. A group that
a child leaves (setsid, a daemon) is beyond its reach, as it is beyond a normal shutdown's.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from toolscout.config.models import StdioServerConfig
from toolscout.masking import mask_text
from toolscout.upstream.transport import watched

if TYPE_CHECKING:
    # The SDK is imported when a child starts (connection.py says why).
    from mcp.shared.message import SessionMessage

    from toolscout.upstream._sdk import SessionStreams
    from toolscout.upstream.transport import UpstreamTarget

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 20
STDERR_DRAIN_SECONDS = 0.5
"""How long a stopped or crashed child's last stderr lines are waited for (a grandchild may hold the pipe)."""
WRITER_FLUSH_SECONDS = 0.2
"""How long messages already accepted for a stopping child may take to reach its stdin."""
CANCELLED_LINE_GRACE = 2.0
"""How long a line half-written to a child may take to get out once its sender is cancelled (a call
timed out, the gateway stopping); a child that takes none of it meanwhile has stopped reading its
stdin, and its connection is cut rather than hold the sender (and a shutdown) for as long."""
STDIN_CLOSE_GRACE = 0.5
"""How long a child may take to exit on its own once its stdin is closed."""
TERMINATE_GRACE = 0.5
"""How long its process group may take to exit after SIGTERM, before SIGKILL (the reaper's groups too)."""
KILL_REAP_SECONDS = 0.5
"""How long the event loop waits to see a killed child gone before abandoning it (only an unkillable one)."""
_EXIT_POLL_SECONDS = 0.01
_STDERR_LINE_MAX = 16384
"""Longest stderr line kept whole; a longer one is logged in pieces of about this size."""
_CHUNK = 65536
_PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl() -> Callable[..., Any] | None:
    """libc's prctl (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only here: nothing else needs it

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _exit_with_gateway() -> Callable[[], None] | None:
    """What a child runs between fork and exec on Linux: ask to be killed (SIGKILL: a server that
    ignores SIGTERM dies all the same) when the gateway dies, even of SIGKILL; None elsewhere.

    The kernel sends it when the *thread* that started the child ends, not the process: only a child
    started by the main thread, which lasts as long as the gateway, asks for it. One started by
    another thread (a worker thread, an event loop run in a thread) would be killed as soon as that
    thread ended; it does without, and is left to the reaper (`Reaper`), as are the children's own
    children, which a parent-death signal never reaches.

    It only calls prctl through a foreign function resolved beforehand (no import, allocation or
    lock), which is what makes a `preexec_fn` safe in a process with threads.
    """
    prctl = _prctl()
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    import ctypes

    gateway = os.getpid()
    option, signum = ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL)

    def hook() -> None:
        prctl(option, signum)
        if os.getppid() != gateway:  # the gateway died before the signal was asked for
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _parse_logged(log: logging.Logger) -> Callable[[bytes], SessionMessage | Exception]:
    from toolscout.jsonrpc_lines import parse_message

    def parse(line: bytes) -> SessionMessage | Exception:
        message = parse_message(line)
        if isinstance(message, Exception):
            log.warning("not a JSON-RPC message on stdout: %r", line[:200].decode("utf-8", "replace"))
        return message

    return parse


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal (or a zombie, on macOS): not proof it is gone
        return True
    return True


def _signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to the process group; False when there is none left."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.warning("no permission to signal every process of group %d", pgid)  # (a setuid one)
    return True


async def _exited(process: subprocess.Popen[bytes], within: float) -> bool:
    """Whether the process exited (and was reaped) within `within` seconds."""
    if process.poll() is not None:
        return True
    with anyio.move_on_after(within):
        await _exit_of(process)
    return process.poll() is not None


async def _exit_of(process: subprocess.Popen[bytes]) -> None:
    """Return once the (not yet reaped) process has exited: told by a pidfd on Linux, polled elsewhere."""
    pidfd = -1
    if sys.platform == "linux":
        with contextlib.suppress(OSError):  # before Linux 5.3, or not allowed
            pidfd = os.pidfd_open(process.pid)
    if pidfd < 0:
        while process.poll() is None:  # noqa: ASYNC110 - without a pidfd, nothing signals a child's exit
            await anyio.sleep(_EXIT_POLL_SECONDS)
        return
    try:
        await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


@dataclass(frozen=True)
class _Command:
    """How a stdio server is started: its command line, the environment added to the default one
    (the SDK's `get_default_environment`: PATH, HOME and the like, never the gateway's secrets), and
    its working directory."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None


class _Child:
    """A stdio server process: its stdout and stdin as the session's streams, and how it is stopped.

    It runs in a session (and process group) of its own, so that stopping it reaches whatever it
    started; its group is watched by the reaper until stopped, and on Linux it is also killed with the
    gateway (see `_exit_with_gateway`).
    """

    def __init__(self, params: _Command, stderr: int, log: logging.Logger) -> None:
        from mcp.client.stdio import get_default_environment

        from toolscout.jsonrpc_lines import MessageReader, MessageWriter

        self._log = log
        child_stdin, self._to_child = os.pipe()
        self._from_child, child_stdout = os.pipe()
        try:
            # Raises FileNotFoundError and the like.
            self.process = subprocess.Popen(
                [params.command, *params.args],
                stdin=child_stdin,
                stdout=child_stdout,
                stderr=stderr,
                env=get_default_environment() | dict(params.env),
                cwd=params.cwd,
                start_new_session=True,
                preexec_fn=_exit_with_gateway(),  # see there: safe with threads
            )
        except BaseException:
            os.close(self._to_child)
            os.close(self._from_child)
            raise
        finally:
            os.close(child_stdin)
            os.close(child_stdout)
        reaper.watch(self.process.pid)  # its group's id (start_new_session)
        self.answered = False
        """Whether it has sent a message yet (one that never did is not waited for when stopped)."""
        self.read_stream = MessageReader(self._from_child, _parse_logged(log), on_message=self._on_message)
        # A child that closed its stdin or exited ends the session's read stream too, so that no
        # request waits for an answer that cannot come.
        self.write_stream = MessageWriter(
            self._to_child, on_broken=self.read_stream.end, cancelled_grace=CANCELLED_LINE_GRACE
        )

    def _on_message(self, _: SessionMessage) -> None:
        self.answered = True

    async def stop(self) -> None:
        """Let accepted messages out (briefly), close the child's stdin, and give it
        `STDIN_CLOSE_GRACE` seconds to exit; then terminate its process group (what is left of it,
        if it did exit): SIGTERM, `TERMINATE_GRACE` seconds, SIGKILL. Every wait is bounded.

        A child that never sent a message gets no grace: it has no session to end, and one that
        did not answer within its connect timeout (a hung server) would only add the grace to it."""
        await self.read_stream.aclose()  # (the reader drains from here on: see _child_streams)
        await self.write_stream.aclose()
        with anyio.move_on_after(WRITER_FLUSH_SECONDS):
            await self.write_stream.flushed()
        self.write_stream.abort()
        await self.write_stream.flushed()
        os.close(self._to_child)
        self._to_child = -1
        process = self.process
        # The leader's pid is the group's id (start_new_session); never getpgid(), which fails once
        # the leader is reaped while others of its group live on.
        pgid = process.pid
        try:
            await self._stop_group(process, pgid)
        finally:
            process.poll()  # a zombie leader keeps its group alive until reaped
            if not _group_alive(pgid):
                reaper.forget(pgid)

    async def _stop_group(self, process: subprocess.Popen[bytes], pgid: int) -> None:
        if self.answered:
            await _exited(process, STDIN_CLOSE_GRACE)
        if not _signal_group(pgid, signal.SIGTERM):
            return
        with anyio.move_on_after(TERMINATE_GRACE):
            while _group_alive(pgid):
                process.poll()  # a zombie leader keeps its group alive until reaped
                await anyio.sleep(_EXIT_POLL_SECONDS)
            return
        _signal_group(pgid, signal.SIGKILL)
        if not await _exited(process, KILL_REAP_SECONDS):
            self._log.warning("process %d is still alive after SIGKILL; abandoning it", process.pid)

    def close(self) -> None:
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                os.close(fd)
        self._to_child = self._from_child = -1


@contextlib.asynccontextmanager
async def _child_streams(child: _Child) -> AsyncGenerator[SessionStreams]:
    """The child's pipes as the session's streams; the child is stopped (see `_Child.stop`) on the way out,
    cancelled or not."""
    try:
        async with anyio.create_task_group() as tg:
            try:
                yield child.read_stream, child.write_stream
            finally:
                # Once the session has gone, the child's stdout is still read (and dropped), so a
                # child blocked writing can still get to its exit.
                tg.start_soon(child.read_stream.drain, name=f"stdout of {child.process.pid}")
                with anyio.CancelScope(shield=True):
                    await child.stop()
                tg.cancel_scope.cancel()  # the drain, if something outside the group holds its stdout
    finally:
        child.close()


class StdioUpstream:
    """A child process spoken to over stdin/stdout; its stderr goes to the gateway's log."""

    def __init__(self, name: str, config: StdioServerConfig) -> None:
        self._name = name
        self._params = _Command(
            command=config.command,
            args=tuple(config.args),
            env=dict(config.env),
            cwd=os.path.expanduser(config.cwd) if config.cwd else None,
        )
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._log = logging.getLogger(f"toolscout.upstream.{name}")

    @property
    def label(self) -> str:
        return "stdio: " + mask_text(shlex.join([self._params.command, *self._params.args]))

    def diagnostics(self) -> str | None:
        lines = [line for line in self._stderr if line.strip()]
        return "\n".join(lines[-5:]) if lines else None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return watched(self._spawn(), on_closed)

    @contextlib.asynccontextmanager
    async def _spawn(self) -> AsyncGenerator[SessionStreams]:
        self._stderr.clear()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        drained = anyio.Event()
        pumping = False
        try:
            async with anyio.create_task_group() as tg:
                try:
                    child = _Child(self._params, write_fd, self._log)
                    # The child holds its own copy now; closing ours lets the pipe
                    # report end-of-file when the child (and its children) exit.
                    os.close(write_fd)
                    write_fd = -1
                    tg.start_soon(self._pump_stderr, read_fd, drained)
                    pumping = True
                    async with _child_streams(child) as streams:
                        yield streams
                finally:
                    # Keep the last words of a crashing server, but never wait on a
                    # grandchild that holds the pipe open.
                    if pumping:
                        with anyio.move_on_after(STDERR_DRAIN_SECONDS, shield=True):
                            await drained.wait()
                    tg.cancel_scope.cancel()
        finally:
            if write_fd >= 0:
                os.close(write_fd)
            os.close(read_fd)

    async def _pump_stderr(self, fd: int, drained: anyio.Event) -> None:
        pending = b""
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    self._record(raw)
                if len(pending) > _STDERR_LINE_MAX:  # a line that never ends is logged in pieces, in linear time
                    self._record(pending)
                    pending = b""
            if pending:
                self._record(pending)
        finally:
            # Also when cancelled (the gateway stopping this server): nobody should wait for more output then.
            drained.set()

    def _record(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip()
        self._stderr.append(line)
        self._log.info("%s", line)


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
