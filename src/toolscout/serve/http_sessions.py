"""Streamable HTTP sessions that one client cannot use up: a bound per client address, a shorter idle
expiry, and the least recently used idle session closed to make room before anyone is refused.

The SDK's `StreamableHTTPSessionManager` has one global limit (`max_sessions`, refusing with 503
until sessions expire, by default after 30 idle minutes): one client opening sessions in a loop
locks every other client out. `BoundedSessionManager` keeps the SDK's manager and changes only the
admission of a new session (`_admit_session`, called under the manager's creation lock):

0. a client address (`peer`) opens sessions at most `opening_rate` a second (after a burst of
   `max_per_client`); the rest are refused from their headers alone (`PeerAdmission`), after a
   second's wait, so a flood costs the event loop a little per request and few requests a second;
1. a client address (`peer`) with `max_per_client` sessions open gets its own least recently used
   idle session closed for the new one, so a flood from one address holds that many at most;
2. at `max_sessions` overall, the least recently used idle session of anyone is closed;
3. only when every session in the way has a request in flight is the request refused (429 for the
   one client, 503 for the whole gateway).

Every refusal has a body saying what to do.

"Idle" and "least recently used" are the SDK's own idle clock: a session's `idle_scope.deadline` is
infinite while a request of it is in flight (an open GET stream included), else the moment its idle
time runs out, so the earliest deadline is the session idle longest. Closing one is what the idle
expiry does (cancelling that scope), only sooner; its ID answers 404 from that moment, and the spec
has the client open a new session on a 404.

The client address comes from `PeerAdmission`, the ASGI middleware in front of the manager, through
a context variable (the admission runs in the request's own task).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolscout.config.http import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSION_OPENING_RATE,
    HttpServeConfig,
)
from toolscout.serve.auth import peer_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionLimits:
    """How many stateful sessions the gateway keeps, and for how long an idle one."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT
    idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    opening_rate: float = DEFAULT_SESSION_OPENING_RATE
    """New sessions a second one client address may open, after a burst of `max_per_client`."""

    @classmethod
    def of(cls, config: HttpServeConfig) -> SessionLimits:
        """The limits a config sets."""
        return cls(
            config.max_sessions,
            config.max_sessions_per_client,
            config.session_idle_timeout,
            config.session_opening_rate,
        )


@dataclass
class _Admission:
    """One request on its way in: who sent it, and why it was refused a session if it was."""

    peer: str
    refusal: tuple[int, str] | None = None


_admission: ContextVar[_Admission | None] = ContextVar("toolscout_http_admission", default=None)

REFUSAL_DELAY = 1.0
"""Seconds before a client opening sessions too fast is answered 429 (its Retry-After)."""
REFUSALS_LOGGED_EVERY = 60.0
"""Seconds between two log lines about one client address's refused sessions."""


class _OursAlreadyLogged(logging.Filter):
    """Drops the SDK's own line about a refused session when the refusal is ours: ours says why, and is
    logged at most once a minute per client (the SDK's would be one line per refused request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        admission = _admission.get()
        return admission is None or admission.refusal is None


class BoundedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with a per-client bound and eviction of idle sessions (see the module)."""

    def __init__(
        self,
        app: Server[Any],
        limits: SessionLimits,
        *,
        stateless: bool = False,
        security_settings: TransportSecuritySettings | None = None,
    ) -> None:
        super().__init__(
            app,
            stateless=stateless,
            security_settings=security_settings,
            session_idle_timeout=limits.idle_timeout,
            max_sessions=limits.max_sessions,
        )
        self.limits = limits
        sdk_log = logging.getLogger(StreamableHTTPSessionManager.__module__)
        if not any(isinstance(f, _OursAlreadyLogged) for f in sdk_log.filters):
            sdk_log.addFilter(_OursAlreadyLogged())
        self._by_peer: dict[str, dict[str, None]] = {}
        self._peer_of: dict[str, str] = {}
        self._warned: set[str] = set()
        self._last_logged: dict[str, float] = {}
        self._openings: dict[str, tuple[float, float]] = {}
        """Per client address, a token bucket of session openings: (tokens, when last counted)."""

    def open_sessions(self, peer: str | None = None) -> int:
        """How many sessions are open (of one client address)."""
        if peer is None:
            return len(self._server_instances)
        return len(self._by_peer.get(peer, ()))

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        admission = _admission.get()
        peer = admission.peer if admission is not None else "unknown"
        if not self._may_open(peer):
            return self._refuse(admission, 429, self._too_fast(peer))
        own = self._by_peer.get(peer, {})
        if len(own) >= self.limits.max_per_client:
            if peer not in self._warned:
                self._warned.add(peer)
                logger.warning(
                    "client %s has %d HTTP sessions open (http.maxSessionsPerClient); "
                    "its least recently used idle ones are closed to open new ones",
                    peer,
                    len(own),
                )
            if not self._evict_idlest(own):
                return self._refuse(
                    admission,
                    429,
                    f"This client ({peer}) already has {len(own)} MCP sessions open, each with a request in "
                    "progress. Close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) or "
                    "wait for a request to finish, then try again.",
                )
        if len(self._server_instances) >= self.limits.max_sessions and not self._evict_idlest(self._server_instances):
            return self._refuse(
                admission,
                503,
                f"The gateway has {len(self._server_instances)} MCP sessions open (http.maxSessions), each with "
                "a request in progress. Try again when one finishes.",
            )
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._by_peer.setdefault(peer, {})[transport.mcp_session_id] = None
            self._peer_of[transport.mcp_session_id] = peer
        return transport

    def _tokens(self, peer: str, now: float) -> float:
        burst = float(self.limits.max_per_client)
        tokens, then = self._openings.get(peer, (burst, now))
        return min(burst, tokens + (now - then) * self.limits.opening_rate)

    def _may_open(self, peer: str) -> bool:
        """Whether `peer` may open a session now (and if so, counted): a burst of `max_per_client`,
        then `opening_rate` a second."""
        now = time.monotonic()
        tokens = self._tokens(peer, now)
        if tokens < 1:
            self._openings[peer] = (tokens, now)
            return False
        self._openings[peer] = (tokens - 1, now)
        if len(self._openings) > 4 * self.limits.max_sessions:  # forget addresses whose bucket refilled
            refill = self.limits.max_per_client / self.limits.opening_rate
            self._openings = {p: (t, w) for p, (t, w) in self._openings.items() if now - w < refill}
        return True

    def refuse_early(self, scope: Scope, admission: _Admission) -> bool:
        """Whether a request that would open a session comes from an address out of openings, decided
        from its headers alone: then it is refused (`admission.refusal`) before its body is read or the
        SDK sees it, for a fraction of what even the SDK's refusal costs. `_admit_session` still counts."""
        if self.stateless or scope["method"] != "POST":
            return False
        for name, value in scope["headers"]:
            if name == b"mcp-session-id":
                return False
            if name == b"mcp-protocol-version" and value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
                return False  # 2026-07-28: no sessions
        if self._tokens(admission.peer, time.monotonic()) >= 1:
            return False
        self._refuse(admission, 429, self._too_fast(admission.peer))
        return True

    def _too_fast(self, peer: str) -> str:
        return (
            f"This client ({peer}) opens MCP sessions faster than {self.limits.opening_rate:g} a second "
            "(http.sessionOpeningRate). Keep using the session you have (its Mcp-Session-Id), or wait a "
            "second and try again."
        )

    def _refuse(self, admission: _Admission | None, status: int, message: str) -> None:
        # Logged once a minute per client address: a client refused in a loop must not flood the log.
        peer = admission.peer if admission is not None else "unknown"
        now = time.monotonic()
        if now - self._last_logged.get(peer, -math.inf) >= REFUSALS_LOGGED_EVERY:
            self._last_logged[peer] = now
            if len(self._last_logged) > 4 * self.limits.max_sessions:
                self._last_logged = {p: t for p, t in self._last_logged.items() if now - t < REFUSALS_LOGGED_EVERY}
            logger.warning("refused a new HTTP session (logged once a minute per client): %s", message)
        if admission is not None:
            admission.refusal = (status, message)

    def _evict_idlest(self, session_ids: Iterable[str]) -> bool:
        """Close the session among `session_ids` idle the longest; False if every one is busy."""
        chosen: tuple[str, StreamableHTTPServerTransport] | None = None
        earliest = math.inf
        for session_id in session_ids:
            transport = self._server_instances.get(session_id)
            scope = transport.idle_scope if transport is not None else None
            if transport is None or scope is None:  # not started yet: its opening request is being served
                continue
            deadline = -math.inf if scope.cancel_called else scope.deadline  # already on its way out: first
            if deadline < earliest:
                chosen, earliest = (session_id, transport), deadline
        if chosen is None:
            return False
        session_id, transport = chosen
        # Forgotten at once (its ID answers 404 from here, and the room is free for the caller);
        # cancelling its idle scope ends its server task as the idle expiry would, which discards it.
        self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        self._forget(session_id)
        assert transport.idle_scope is not None
        transport.idle_scope.cancel()
        logger.debug("closed idle HTTP session %s to make room", session_id)
        return True

    def _forget(self, session_id: str) -> None:
        peer = self._peer_of.pop(session_id, None)
        if peer is None:
            return
        own = self._by_peer.get(peer)
        if own is not None:
            own.pop(session_id, None)
            if not own:
                del self._by_peer[peer]
                self._warned.discard(peer)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)


class PeerAdmission:
    """ASGI middleware telling `BoundedSessionManager` who a request is from, and turning its refusal
    into a response with the status and message it chose (the SDK's own is a bare 503)."""

    def __init__(self, app: ASGIApp, manager: BoundedSessionManager) -> None:
        self.app = app
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admission = _Admission(peer_of(scope))
        if self.manager.refuse_early(scope, admission):
            # Answered after a second (its Retry-After), not at once: a client opening sessions in a
            # loop, however many at a time, is then held to that many requests a second, where an
            # instant answer would let it keep the event loop busy with refusals instead.
            await anyio.sleep(REFUSAL_DELAY)
            await _refusal_response(admission, send)
            return
        token = _admission.set(admission)
        replaced = False

        async def sending(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and admission.refusal is not None:
                replaced = True
                await _refusal_response(admission, send)
                return
            if replaced:  # the SDK's own refusal, already answered with ours
                return
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _admission.reset(token)


async def _refusal_response(admission: _Admission, send: Send) -> None:
    assert admission.refusal is not None
    status, text = admission.refusal
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": text}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(round(REFUSAL_DELAY)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
