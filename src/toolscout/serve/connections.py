"""HTTP connections that cannot hold the gateway's descriptors: a deadline for each request's headers,
and a bound on the connections open at once.

uvicorn times a connection out only between two requests, and only until its first byte: a client that
sends half a request line, or half its headers, is held open for ever, and a few hundred of them use up
the process's open files. Its `limit_concurrency` answers 503 once a request's headers are complete, so
it does nothing against connections that never complete them. `GuardedH11Protocol` is uvicorn's h11
protocol (chosen explicitly: with `http="auto"` uvicorn would switch to httptools if it happened to be
installed) with two additions:

- A header deadline: armed when a connection is made, and again when a response is complete (a
  keep-alive connection waits for its next request); cancelled as soon as a request's headers are
  complete. When it passes, a client that had sent part of a request gets 408, one that had sent
  nothing gets nothing, and the connection is closed. While a request is being answered, a long tool
  call or an SSE stream, no deadline runs.
- A connection bound (`ConnectionGuard`): at `max_connections`, a new connection closes the one that
  has waited longest for its request's headers (an idle keep-alive connection, or a stalled one),
  so a new client still gets in during a flood of half-open connections; only when every open
  connection has a request being answered is the new one answered 503 and closed.

The bound is kept below the process's open-file limit (`fit_to_open_files`): a connection refused by
the bound costs a descriptor for an instant, while at the limit every `accept` fails and asyncio stops
accepting anyone for a second (and an upstream child cannot be started). A burst can exceed the bound
by the connections accepted in one go (`LISTEN_BACKLOG`, which `serve` gives uvicorn) until their
protocols run and close the oldest.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle
from uvicorn.server import ServerState

from toolscout.config.http import DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, HttpServeConfig

logger = logging.getLogger(__name__)

LISTEN_BACKLOG = 128
"""Connections the kernel queues before the gateway accepts them, and the most it accepts in one go
before their protocols run: by how many the open connections can exceed the bound for an instant."""
OTHER_DESCRIPTORS = 256
"""Open files kept for everything but client connections when `maxConnections` is fitted to the
process's limit: upstream children's pipes, connections to HTTP upstreams and Redis, the stores, logs."""
MIN_CONNECTIONS = 16
"""The fewest connections a fitted bound allows, however low the open-file limit."""
LOGGED_EVERY = 60.0
"""Seconds between two log lines about connections timed out, closed for others or refused."""


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a connection may take to send a request's headers, and how many may be open at once."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    @classmethod
    def of(cls, config: HttpServeConfig) -> ConnectionLimits:
        """The limits a config sets."""
        return cls(config.header_timeout, config.max_connections)


def fit_to_open_files(limits: ConnectionLimits) -> ConnectionLimits:
    """`limits`, the process's soft limit on open files (RLIMIT_NOFILE) raised toward its hard limit to
    hold them (as Go's runtime does at start: the soft limit is a default, not a policy); and where even
    the hard limit would leave fewer than `OTHER_DESCRIPTORS` files for everything else, counting the
    `LISTEN_BACKLOG` connections a burst may hold for an instant beyond the bound, `max_connections`
    lowered, with a warning."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    reserved = OTHER_DESCRIPTORS + LISTEN_BACKLOG
    wanted = limits.max_connections + reserved
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError) as exc:  # not allowed here (a sandbox): the limit stays as it was
            logger.info("could not raise the limit on open files from %d to %d: %s", soft, raised, exc)
    if soft == resource.RLIM_INFINITY or wanted <= soft:
        return limits
    fitted = max(MIN_CONNECTIONS, soft - reserved)
    logger.warning(
        "http.maxConnections is %d but this process may open only %d files: serving at most %d connections "
        "(raise the limit with `ulimit -n`, or LimitNOFILE= under systemd, to allow more)",
        limits.max_connections,
        soft,
        fitted,
    )
    return replace(limits, max_connections=fitted)


class _Tally:
    """Counts of what the guard did, logged at most once every `LOGGED_EVERY` seconds: a flood must not
    become a flood of log lines."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.logged = -LOGGED_EVERY

    def note(self, what: str, limits: ConnectionLimits) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        now = time.monotonic()
        if now - self.logged < LOGGED_EVERY:
            return
        self.logged = now
        done = ", ".join(f"{count} {what}" for what, count in self.counts.items())
        self.counts.clear()
        logger.warning(
            "HTTP connections: %s (http.headerTimeout %gs, http.maxConnections %d)",
            done,
            limits.header_timeout,
            limits.max_connections,
        )


class ConnectionGuard:
    """The open connections of one HTTP server, those waiting for a request's headers in the order they
    began waiting, and the bound on them."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: set[GuardedH11Protocol] = set()
        self._waiting: dict[GuardedH11Protocol, None] = {}  # a dict keeps insertion order: oldest first
        self._tally = _Tally()

    def let_in(self, connection: GuardedH11Protocol) -> bool:
        """Count `connection` as open and return True, or return False when it may not stay open.

        At the bound, the connection that has waited longest for its request's headers is closed to
        make room; when none is waiting, every open connection has a request being answered and
        `connection` is not let in."""
        if len(self._open) >= self.limits.max_connections:
            if not self._waiting:
                self.note("refused (every connection busy)")
                return False
            oldest = next(iter(self._waiting))
            self.gone(oldest)
            oldest.expire()
            self.note("closed for a newer one")
        self._open.add(connection)
        return True

    def waiting(self, connection: GuardedH11Protocol) -> None:
        """`connection` now waits for a request's headers (the newest to)."""
        self._waiting.pop(connection, None)
        self._waiting[connection] = None

    def answering(self, connection: GuardedH11Protocol) -> None:
        """`connection` has a request being answered: it is not closed for another."""
        self._waiting.pop(connection, None)

    def gone(self, connection: GuardedH11Protocol) -> None:
        self._open.discard(connection)
        self._waiting.pop(connection, None)

    def note(self, what: str) -> None:
        self._tally.note(what, self.limits)


def _response(status: int, reason: str, text: str, *extra: str) -> bytes:
    """A whole HTTP/1.1 response that closes the connection, written outside h11's state machine (which
    allows a response only to a request it has parsed: these answer requests that never arrived)."""
    body = text.encode()
    head = [f"HTTP/1.1 {status} {reason}", "content-type: text/plain; charset=utf-8", *extra]
    head += [f"content-length: {len(body)}", "connection: close", "", ""]
    return "\r\n".join(head).encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a connection bound (see the module)."""

    guard: ClassVar[ConnectionGuard]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None
        self._partial = False
        """Whether bytes of the awaited request arrived (a timed-out client then gets 408)."""

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        if not self.guard.let_in(self):
            text = (
                f"Every one of the gateway's {self.guard.limits.max_connections} connections has a request "
                "being answered: retry in a moment (the operator can raise http.maxConnections)."
            )
            transport.write(_response(503, "Service Unavailable", text, "retry-after: 1"))
            transport.close()
            return
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        if self._deadline is not None:
            self._partial = True
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        self.guard.gone(self)
        super().connection_lost(exc)

    def expire(self) -> None:
        """Close this connection, which is waiting for a request's headers: with 408 if part of one came."""
        self._stop_deadline()
        self.guard.gone(self)
        if self.transport.is_closing():
            return
        if self._partial:
            text = f"The request's headers did not arrive within {self.guard.limits.header_timeout:g} seconds."
            self.transport.write(_response(408, "Request Timeout", text))
        self.transport.close()

    def _answering(self) -> bool:
        cycle = cast("RequestResponseCycle | None", self.cycle)  # None until a first request, whatever its type says
        return cycle is not None and not cycle.response_complete

    def _follow(self) -> None:
        """Start or stop the deadline after what just happened: a request's headers completed (stop), a
        response completed with no request after it (start)."""
        if self.transport.is_closing():
            return
        if self._answering():
            self._stop_deadline()
            self.guard.answering(self)
        elif self._deadline is None:
            self._await_headers()

    def _await_headers(self) -> None:
        self._partial = False
        self.guard.waiting(self)
        self._deadline = self.loop.call_later(self.guard.limits.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._deadline = None
        if not self._answering():
            self.guard.note("timed out before their headers")
            self.expire()

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """The protocol class for one HTTP server (uvicorn's `http=`), with its own `ConnectionGuard`."""

    class Guarded(GuardedH11Protocol):
        guard = ConnectionGuard(limits)

    return Guarded
