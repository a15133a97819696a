"""The guards in front of the HTTP server that need no credential: a deadline for each request's
headers, a bound on the connections open at once, and the check of the `Host` and `Origin` headers.

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

A web page the user visits can make the browser send requests to the gateway: cross-origin (its
`Origin` is the page's), or after DNS rebinding (the page's own name made to resolve to the
gateway's address, so the browser thinks it is same-origin, and `Host` carries the page's name).
Checking both headers against names the gateway is really reached by closes both ways in. The SDK
does so only when bound to 127.0.0.1, localhost or ::1; `HostOriginGuard` does it for every address
(loopback, wildcard, a LAN address, a host name), stateful or stateless, in both protocol eras,
before a request reaches the session manager (so a refused request never opens a session).

Allowed by default (`AllowList.for_bind`):

* the address the request arrived at (the connection's local IP, any port): an IP literal in
  `Host` means the client dialled this machine by address, which DNS rebinding cannot produce;
* the bind address itself (a host name given to `--host` included);
* `localhost`, `127.0.0.1` and `[::1]` when bound to a loopback or wildcard address;
* the machine's host name (and `<name>.local`, its mDNS name) when bound to a wildcard address:
  other machines reach a gateway listening on every interface by that name, and only whoever
  answers the victim's own name lookups could point it elsewhere.

`Origin` is optional (non-browser clients send none); when sent it must be a page on an allowed
host (http or https, any port), or listed in `allowedOrigins`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle
from uvicorn.server import ServerState

from toolscout.config.http import (
    ANY,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    HttpServeConfig,
    canonical_name,
    parse_ip,
    split_host,
    split_origin,
)

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
    """Return `limits` fitted to the process's open files, raising its limit first where it can.

    The soft limit on open files (RLIMIT_NOFILE) is raised toward the hard limit to hold the
    connections, as Go's runtime does at start: the soft limit is a default, not a policy. Where even
    the hard limit would leave fewer than `OTHER_DESCRIPTORS` files for everything else, counting the
    `LISTEN_BACKLOG` connections a burst may hold for an instant beyond the bound, `max_connections`
    is lowered, with a warning."""
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
        """Record that `connection` now waits for a request's headers (it is the newest to wait)."""
        self._waiting.pop(connection, None)
        self._waiting[connection] = None

    def answering(self, connection: GuardedH11Protocol) -> None:
        """Record that `connection` has a request being answered, so it is not closed for another."""
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
    """The uvicorn h11 protocol with a header deadline and a connection bound (see the module)."""

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


# Host and Origin

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _shown(name: str, port: int | str | None = None) -> str:
    text = f"[{name}]" if ":" in name else name
    return text if port is None else f"{text}:{port}"


@dataclass(frozen=True)
class AllowList:
    """The `Host` names (each for any port, or one) and extra `Origin`s a gateway's HTTP server answers."""

    hosts: tuple[tuple[str, int | None], ...]
    origins: tuple[tuple[str, str, int | None], ...] = ()
    """Extra origins as (scheme, name, port), port None for any."""
    any_host: bool = False
    any_origin: bool = False
    arrival: bool = True
    """Whether the address a request arrived at is allowed as its Host (and its pages as Origin)."""

    @classmethod
    def for_bind(cls, bind_host: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> AllowList:
        """The defaults for a gateway listening on `bind_host` (see the module), plus `hosts` and `origins`."""
        names: list[str] = []
        address = parse_ip(bind_host)
        if address is None:
            names.append(bind_host)
            if canonical_name(bind_host) == "localhost":
                names.extend(LOOPBACK_NAMES)
        elif address.is_unspecified:
            names.extend(LOOPBACK_NAMES)
            names.extend(machine_names())
        else:
            names.append(bind_host)
            if address.is_loopback:
                names.extend(LOOPBACK_NAMES)
        return cls.of(names, hosts, origins)

    @classmethod
    def of(cls, defaults: Sequence[str], hosts: Iterable[str], origins: Iterable[str]) -> AllowList:
        """Return the allow list of `defaults`, the configured `hosts` (entries validated by
        `check_host_entry`) and `origins`."""
        parsed: list[tuple[str, int | None]] = []
        any_host = False
        for entry in [*defaults, *hosts]:
            if entry.strip() == ANY:
                any_host = True
                continue
            split = split_host(entry)
            if split is not None and split not in parsed:
                parsed.append(split)
        extra = tuple(
            dict.fromkeys(p for o in origins if o.strip() != ANY and (p := split_origin(o, any_port=True)) is not None)
        )
        any_origin = any(o.strip() == ANY for o in origins)
        return cls(tuple(parsed), extra, any_host=any_host, any_origin=any_origin)

    def host_allowed(self, host: str | None, arrived: str | None = None) -> bool:
        """Whether a request with this `Host` header, arriving at local address `arrived`, is answered."""
        if self.any_host:
            return host is not None
        split = split_host(host) if host else None
        return split is not None and self._known(*split, arrived=arrived)

    def origin_allowed(self, origin: str | None, arrived: str | None = None) -> bool:
        """Whether a request with this `Origin` header (None: not a browser's cross-origin request) is answered."""
        if origin is None or self.any_origin:
            return True
        parsed = split_origin(origin)
        if parsed is None:  # `null` (a sandboxed page, a file) or garbage: no page of an allowed host
            return False
        scheme, name, port = parsed
        if any(scheme == s and name == n and (p is None or port == p) for s, n, p in self.origins):
            return True
        return scheme in ("http", "https") and self._known(name, port, arrived=arrived)

    def _known(self, name: str, port: int | None, *, arrived: str | None) -> bool:
        if self.arrival and arrived is not None and parse_ip(name) is not None and canonical_name(arrived) == name:
            return True
        return any(
            name == allowed and (allowed_port is None or port == allowed_port) for allowed, allowed_port in self.hosts
        )

    def describe(self) -> str:
        """What `serve` prints at start."""
        if self.any_host:
            hosts = "any Host (the check is off: allowedHosts has '*')"
        else:
            listed = [_shown(name, port) for name, port in self.hosts]
            if self.arrival:
                listed.append("the address a request arrives at")
            hosts = "Host " + ", ".join(listed) + " (any port unless one is given)"
        if self.any_origin:
            origins = "any Origin (allowedOrigins has '*')"
        else:
            origins = "Origin: none (non-browser clients), pages on those hosts"
            if self.origins:
                origins += ", " + ", ".join(f"{s}://{_shown(n, '*' if p is None else p)}" for s, n, p in self.origins)
        return f"{hosts}; {origins}"


def machine_names() -> list[str]:
    """This machine's host name, and its mDNS name when the host name is a single label (no DNS lookup:
    `socket.getfqdn` can wait seconds on a machine without a working resolver)."""
    name = canonical_name(socket.gethostname())
    if not name or name == "localhost":
        return []
    return [name] if "." in name else [name, f"{name}.local"]


def _refusal(status: int, message: str) -> tuple[int, bytes]:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    return status, json.dumps(body).encode()


def refusal_for(
    allow: AllowList, host: str | None, origin: str | None, arrived: str | None
) -> tuple[int, bytes] | None:
    """The HTTP status and JSON-RPC error body a request with these headers gets, or None if it is answered."""
    if not allow.host_allowed(host, arrived):
        if not host:
            return _refusal(421, "The request has no Host header; send one naming the gateway's address.")
        return _refusal(
            421,
            f"This gateway does not answer to Host {host!r} (a guard against DNS rebinding). If clients reach it "
            f"under that name, start it with `toolscout serve --allow-host {host}` or add the name to "
            "`http.allowedHosts` in the config.",
        )
    if not allow.origin_allowed(origin, arrived):
        return _refusal(
            403,
            f"Web pages from Origin {origin!r} may not call this gateway (a guard against cross-site requests). "
            f"If that page should, start it with `toolscout serve --allow-origin {origin}` or add it to "
            "`http.allowedOrigins` in the config.",
        )
    return None


class HostOriginGuard:
    """ASGI middleware answering a request whose `Host` or `Origin` is not allowed with 421 or 403."""

    def __init__(self, app: ASGIApp, allow: AllowList) -> None:
        self.app = app
        self.allow = allow

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        server: tuple[str, int | None] | None = scope.get("server")
        arrived = server[0] if server else None
        refused = refusal_for(self.allow, headers.get("host"), headers.get("origin"), arrived)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, body = refused
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated Host or Origin is refused as a whole (joined)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").lower()
        if name in ("host", "origin"):
            value = raw_value.decode("latin-1")
            found[name] = f"{found[name]}, {value}" if name in found else value
    return found
