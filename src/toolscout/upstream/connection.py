"""One upstream server: its connection, its state, and calls to its tools.

Each upstream runs as one task that owns its own exit stack: connecting,
listing tools, staying open, and tearing down all happen there, so one broken
server can fail or be dropped without touching the others.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, TypeVar, cast

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout import __version__
from toolscout.config.models import DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, AnyServerConfig
from toolscout.errors import (
    CallTimeout,
    ServerUnavailable,
    ToolExecutionError,
    ToolRefused,
    UpstreamError,
    UpstreamRefused,
    server_unavailable,
)
from toolscout.gateway.catalog import Catalog
from toolscout.gateway.store import config_hash
from toolscout.masking import mask_text
from toolscout.upstream.relay import Relay, SamplingResult, current_relay
from toolscout.upstream.transport import UpstreamTransport, transport_for
from toolscout.upstream.watch import ResourceWatch

logger = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100
DEFAULT_LAZY_IDLE = 300.0
"""A lazy server's connection is closed after this many seconds without calls, unless configured."""
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 60.0
"""Seconds between connection attempts: doubling from the first, capped at the second."""
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
CLIENT_INFO = types.Implementation(name="toolscout", version=__version__)
ListKind = Literal["resources", "prompts"]
"""The lists besides tools whose changes an upstream announces (content.py follows them)."""
T = TypeVar("T")


class Status(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    IDLE = "idle"
    """Not connected on purpose (lazy, or closed after `idleTimeout`); connects on the next call."""
    ERROR = "error"
    DISABLED = "disabled"


@dataclass(frozen=True)
class UpstreamSpec:
    """Everything needed to run one upstream: its name, how to reach it, and its limits."""

    name: str
    transport: UpstreamTransport
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    description: str | None = None
    disabled: bool = False
    protocol: str = "auto"
    """`auto`: probe `server/discover` (2026-07-28), else `initialize`; `legacy`: `initialize` only;
    `legacy-first`: `initialize`, and `auto` if the server refuses it, kept for as long as the server is
    then reached at 2026-07-28 (what a configured server gets unless its entry says otherwise)."""
    reconnect: bool = True
    """Connect again (with backoff) after a failure or a lost connection."""
    lazy: bool = False
    """Connect on first use when a catalog is known without connecting (cached or declared)."""
    idle_timeout: float | None = None
    """Close the connection after this many seconds without calls (lazy servers: 300 unless set)."""
    static_tools: tuple[types.Tool, ...] = ()
    """Declared in the config: listed until the server's own list replaces them."""
    cache_key: str | None = None
    """Its key in the persistent catalog (a hash of its config entry); None: never kept there."""

    @classmethod
    def from_config(cls, name: str, config: AnyServerConfig) -> UpstreamSpec:
        return cls(
            name=name,
            transport=transport_for(name, config),
            call_timeout=config.timeout,
            connect_timeout=config.connect_timeout,
            description=config.description,
            disabled=config.disabled,
            # The handshake era unless configured, whatever the transport: a server that speaks both eras
            # keeps its requests to the client (sampling, elicitation) and resources/subscribe there,
            # which a server written for the handshake era has no way to offer at 2026-07-28.
            protocol=config.protocol or "legacy-first",
            reconnect=config.reconnect,
            lazy=config.connect == "lazy",
            idle_timeout=config.idle_timeout,
            static_tools=tuple(
                types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema)
                for t in config.tools
            ),
            cache_key=config_hash(config),
        )


@dataclass(frozen=True)
class ServerIdentity:
    """What the upstream said about itself when connecting."""

    name: str | None
    version: str | None
    title: str | None
    description: str | None
    instructions: str | None
    protocol_version: str


def innermost(exc: BaseException) -> BaseException:
    """The meaningful exception inside task groups' exception groups (the first that is not a cancellation)."""
    while isinstance(exc, BaseExceptionGroup):
        members: tuple[BaseException, ...] = cast(BaseExceptionGroup[BaseException], exc).exceptions
        cancelled = anyio.get_cancelled_exc_class()
        exc = next((e for e in members if not isinstance(e, cancelled)), members[0])
    return exc


def describe_exception(exc: BaseException) -> str:
    """A one-line reason for a failure, from the innermost meaningful exception."""
    exc = innermost(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc} (is it installed and on PATH?)"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"HTTP transport error: {exc or type(exc).__name__}"
    if isinstance(exc, MCPError):
        return f"{exc.error.message} (MCP error {exc.error.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _session_expired(exc: MCPError) -> bool:
    """Whether an HTTP server said it does not know our session (404 at the transport)."""
    message = exc.error.message.lower()
    return exc.error.code == types.INVALID_REQUEST and (
        "session not found" in message or "session terminated" in message
    )


class Upstream:
    """A live (or failed, or disabled) upstream server."""

    def __init__(
        self,
        spec: UpstreamSpec,
        catalog: Catalog,
        *,
        on_tools_listed: Callable[[Upstream, Sequence[types.Tool]], None] | None = None,
        on_list_changed: Callable[[Upstream, ListKind], None] | None = None,
        on_resource_updated: Callable[[Upstream, str], Awaitable[None]] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self._catalog = catalog
        self.status = Status.DISABLED if spec.disabled else Status.CONNECTING
        self.error: str | None = None
        self.identity: ServerIdentity | None = None
        self.offline_tools: tuple[types.Tool, ...] | None = None
        """The last live list the gateway knows of (see `use_offline_tools`); None: the declared tools."""
        self._on_tools_listed = on_tools_listed
        self._on_list_changed = on_list_changed
        self._on_resource_updated = on_resource_updated
        self.resources = ResourceWatch(self.name, self.request, self._resource_updated)
        """The resources subscribed to on this server for the gateway's clients (watch.py)."""
        self._client: Client | None = None
        self._settled = anyio.Event()
        self._first_attempt = anyio.Event()
        """Set once the first attempt to connect has ended (see `wait_first_attempt`); never cleared."""
        self._changed = anyio.Event()
        self._wake = anyio.Event()
        self._lost = False
        self._refresh_requested = False
        self._tools_stale = False
        """The server said its tools changed and the new list has not arrived yet: calls wait for it."""
        self._scope: anyio.CancelScope | None = None
        self._stopping = False
        self._in_flight: dict[object, Relay] = {}
        """The relays of calls in flight, in the order they started."""
        self._calls: set[anyio.CancelScope] = set()
        self._last_used = 0.0
        self._wanted = anyio.Event()
        self._wanted_flag = False
        self._mode = "legacy" if spec.protocol == "legacy-first" else spec.protocol
        """The era asked for when connecting (`legacy-first`: `auto` once `initialize` is refused, for as
        long as the server is then reached at 2026-07-28; the handshake first again otherwise)."""
        self._fell_back = False
        self._connected_since: float | None = None
        self.retry_at: float | None = None
        """When the next connection attempt is due (epoch seconds), while waiting for it."""
        if spec.disabled:
            self._settle()
        else:
            self._list_declared_tools()

    @property
    def description(self) -> str:
        if self.spec.description:
            return self.spec.description
        identity = self.identity
        if identity is not None:
            return identity.description or identity.title or ""
        return ""

    async def run(self) -> None:
        """Connect and stay connected until stopped; after a failure or a lost connection, connect
        again after a backoff that doubles (with jitter) up to `BACKOFF_MAX` seconds."""
        if self.spec.disabled or self._stopping:  # stopped before its task got to run
            return
        delay = BACKOFF_INITIAL
        if self.spec.lazy and (self.offline_tools is not None or self.spec.static_tools):
            await self._stay_idle()  # its tools are known: nothing to connect for until a call
        while not self._stopping:
            attempt = anyio.current_time()
            idle = await self._connect_and_serve()
            if self._fell_back:  # the handshake era was refused: the other one at once, no backoff
                self._fell_back = False
                continue
            if idle:
                delay = BACKOFF_INITIAL
                await self._stay_idle()
                continue
            if self._stopping or not self.spec.reconnect:
                return
            if self._connected_since is not None and self._connected_since >= attempt:
                # It was up: start over from a short wait, as for a first failure.
                delay = BACKOFF_INITIAL
            # Jitter, so that servers that failed together (a network blip) do not retry together.
            wait = delay * random.uniform(0.5, 1.0)
            self.retry_at = time.time() + wait
            logger.info("%s: connecting again in %.1fs", self.name, wait)
            with anyio.CancelScope() as sleeping:
                self._scope = sleeping
                if not self._stopping:
                    await anyio.sleep(wait)
            if self._stopping:
                return
            delay = min(delay * 2, BACKOFF_MAX)
            self.retry_at = None
            self.status = Status.CONNECTING
            if self._settled.is_set():  # nobody waits on a set event: safe to replace
                self._settled = anyio.Event()
            self._notify_changed()

    def want(self) -> None:
        """Someone needs the server: connect if it is idle."""
        self._wanted_flag = True
        self._wanted.set()
        if self.status is Status.IDLE:
            self.status = Status.CONNECTING
            if self._settled.is_set():  # nobody waits on a set event: safe to replace
                self._settled = anyio.Event()
            self._notify_changed()

    async def _stay_idle(self) -> None:
        """Disconnected on purpose until `want()` or `stop()`."""
        if not self._wanted_flag:
            self.status = Status.IDLE
            self._settle()
            self._notify_changed()
            logger.info("%s: idle, connects on the next call", self.name)
            with anyio.CancelScope() as waiting:
                self._scope = waiting
                if not self._stopping:
                    await self._wanted.wait()
        self._wanted_flag = False
        self._wanted = anyio.Event()

    def _idle_after(self) -> float | None:
        if self.spec.idle_timeout is not None:
            return self.spec.idle_timeout
        return DEFAULT_LAZY_IDLE if self.spec.lazy else None

    async def _connect_and_serve(self) -> bool:
        """One connection: connect (within connectTimeout), list tools, serve until it ends.

        True when it ended because it was idle (no failure), False otherwise."""
        self._lost = False
        self._connected_since = None
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.spec.connect_timeout)
        self._scope = scope
        failure: str | None = None
        handshaking = False
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = Client(
                        self.spec.transport.target(self._on_closed),
                        mode=self._mode,
                        client_info=CLIENT_INFO,
                        message_handler=self._on_message,
                        cache=None,
                        # Declared so the upstream may ask; each request goes to the client of the
                        # call it belongs to, which may refuse (relay.py).
                        sampling_callback=self._on_sampling,
                        sampling_capabilities=types.SamplingCapability(
                            context=types.SamplingContextCapability(), tools=types.SamplingToolsCapability()
                        ),
                        elicitation_callback=self._on_elicitation,
                        logging_callback=self._on_log,
                        # At 2026-07-28 logs come only to requests that opt in; each client's own
                        # level is applied on the way out (SessionRelay.log).
                        log_level="debug",
                    )
                    handshaking = True
                    await stack.enter_async_context(client)
                    handshaking = False
                    if self.spec.protocol == "legacy-first":
                        # `auto` is kept only for a server that refused `initialize` and then spoke
                        # 2026-07-28: one that refused it for another reason (an HTTP error of the
                        # moment) is asked in the handshake era again next time.
                        self._mode = "auto" if client.protocol_version in MODERN_PROTOCOL_VERSIONS else "legacy"
                    idle = False
                    async with anyio.create_task_group() as tg:
                        if self._announces_changes(client):
                            # Subscribe before listing, so no change can fall between the two.
                            await tg.start(self._listen_for_changes, client)
                        tools = await self._list_tools(client)
                        # Connected: from here on only stop() or a lost connection ends this.
                        scope.deadline = math.inf
                        self._connected(client, tools)
                        self._connected_since = anyio.current_time()
                        tg.start_soon(self.resources.keep, client)
                        idle = await self._serve(client)
                        tg.cancel_scope.cancel()
                    if idle:
                        return True
                    failure = "connection closed by the server"
        except Exception as exc:
            refused = innermost(exc) if handshaking else None
            if isinstance(refused, MCPError) and self.spec.protocol == "legacy-first" and self._mode == "legacy":
                # Perhaps a server of the 2026-07-28 era only: ask the way that finds out, at once.
                message = refused.error.message
                logger.info("%s: initialize refused (%s); connecting with protocol auto", self.name, message)
                self._mode = "auto"
                self._fell_back = True
            else:
                failure = describe_exception(exc)
        finally:
            self._client = None
            self._list_declared_tools()
        if handshaking and not self._fell_back and self.spec.protocol == "legacy-first":
            self._mode = "legacy"  # not reached in either era: no reason to skip the handshake next time
        if self._stopping or self._fell_back:
            return False
        if scope.cancel_called and self.status is Status.CONNECTING:
            failure = f"did not finish connecting within {self.spec.connect_timeout:g}s"
        self._fail(failure or "stopped unexpectedly")
        return False

    def use_offline_tools(self, tools: Sequence[types.Tool]) -> None:
        """List `tools` whenever not connected, instead of the declared ones (what the server really offered)."""
        self.offline_tools = tuple(tools)
        if self._client is None and not self.spec.disabled:
            self._list_declared_tools()

    def _list_declared_tools(self) -> None:
        if self.offline_tools is not None:
            self._catalog.set_server_tools(self.name, self.offline_tools)
        elif self.spec.static_tools:
            self._catalog.set_server_tools(self.name, self.spec.static_tools)
        else:
            self._catalog.drop_server(self.name)

    def stop(self) -> None:
        """End the connection; the run task tears everything down."""
        self._stopping = True
        self._first_attempt.set()  # nobody is to wait for a server that will not connect
        if self._scope is not None:
            self._scope.cancel()
        self._drop_calls()

    async def wait_settled(self) -> None:
        """Wait until the server is connected, has failed, or is disabled (bound it with a cancel scope)."""
        await self._settled.wait()

    @property
    def first_attempt_over(self) -> bool:
        """Whether the first attempt to connect has ended, however (or the server never tries)."""
        return self._first_attempt.is_set()

    async def wait_first_attempt(self) -> None:
        """Wait until the first attempt to connect has ended: connected, failed (its connect timeout
        bounds that), idle on purpose, disabled or stopped. Later attempts (reconnecting after a
        failure) are not waited for."""
        await self._first_attempt.wait()

    def _settle(self) -> None:
        self._settled.set()
        self._first_attempt.set()

    async def wait_changed(self) -> None:
        """Wait for the next change of status (connected, failed) or of the tool list."""
        await self._changed.wait()

    def _notify_changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Forward one call on the kept session; cancelled upstream after the server's timeout.

        Only a tool this server listed under exactly the name `tool`, enabled by `toolRules`, is
        sent (`Catalog.admit`, else `ToolNotFound`/`ToolDisabled`): every path to a tool crosses
        here. While a list it announced is being fetched, the call waits for it (at most the
        server's `timeout`; then a `SERVER_UNAVAILABLE` to retry), never sent on the old one.
        """
        client = self._client
        if client is not None and self._tools_stale and not self._lost:
            with anyio.move_on_after(self.spec.call_timeout):
                while self._tools_stale and self._client is client and not self._lost:
                    await self.wait_changed()
        if client is None or self._lost or self._client is not client:
            raise server_unavailable(self.name, self.status.value, self.error, tool=tool)
        if self._tools_stale:
            raise ServerUnavailable(
                f"Server {self.name!r} changed its tools and has not listed them again yet; try again shortly.",
                server=self.name,
                tool=tool,
                status=self.status.value,
            )
        self._catalog.admit(self.name, tool)
        timeout = self.spec.call_timeout
        relay = current_relay()
        token = object()
        if relay is not None:
            self._in_flight[token] = relay
        progress = relay.progress if relay is not None else None
        self._last_used = now = anyio.current_time()
        # One scope for both ends of a call: its deadline (the timeout), and `_drop_calls` (the
        # connection lost, or the gateway stopping: told apart from a timeout below by `_lost`/`_stopping`).
        with anyio.CancelScope(deadline=now + timeout) as connection_scope:
            self._calls.add(connection_scope)
            try:
                return await client.call_tool(tool, arguments, progress_callback=progress)
            except MCPError as exc:
                if _session_expired(exc):
                    # The server forgot our session (it restarted): connect again, from scratch.
                    self._on_closed()
                    raise self._gone(tool, "its HTTP session expired") from None
                if exc.error.code == types.CONNECTION_CLOSED:
                    # The SDK's word for a transport that is gone (an HTTP server that went away).
                    self._on_closed()
                    raise self._gone(tool, exc.error.message) from None
                raise ToolRefused(
                    f"{self.name}.{tool} failed: {exc.error.message} (MCP error {exc.error.code})",
                    upstream_message=exc.error.message,
                    server=self.name,
                    tool=tool,
                    upstreamCode=exc.error.code,
                    upstreamData=exc.error.data,
                ) from None
            except Exception as exc:
                if self._lost:
                    raise self._gone(tool, describe_exception(exc)) from None
                raise ToolExecutionError(
                    f"{self.name}.{tool} failed: {describe_exception(exc)}", server=self.name, tool=tool
                ) from None
            finally:
                self._last_used = anyio.current_time()
                self._calls.discard(connection_scope)
                if self._idle_after() is not None:
                    self._wake.set()  # the idle countdown starts when the last call ends (`_serve`)
                self._in_flight.pop(token, None)
        if self._lost or self._stopping:
            raise self._gone(tool, "the connection was lost" if not self._stopping else "the gateway is stopping")
        raise CallTimeout(
            f"{self.name}.{tool} did not answer within {timeout:g}s; the call was cancelled upstream. "
            f"Raise `timeout` for {self.name!r} in the config if the tool is expected to be slow.",
            server=self.name,
            tool=tool,
            timeoutSeconds=timeout,
        )

    def _gone(self, tool: str, reason: str) -> ServerUnavailable:
        again = " toolscout is connecting to it again." if self.spec.reconnect and not self._stopping else ""
        return ServerUnavailable(
            f"Server {self.name!r} went away during the call to {tool!r} ({reason}); the call may or may not "
            f"have taken effect.{again}",
            server=self.name,
            tool=tool,
            status=Status.ERROR.value,
        )

    @property
    def server_capabilities(self) -> types.ServerCapabilities | None:
        """What the server of the live connection declared (None while not connected)."""
        client = self._client
        return client.server_capabilities if client is not None else None

    async def request(
        self, what: str, operation: Callable[[Client], Awaitable[T]], *, within: float | None = None, use: bool = True
    ) -> T:
        """Run one request other than a tool call (resources and prompts, content.py) on the kept session.

        It fails as a call does: `ServerUnavailable` when not connected or when the connection goes,
        `CallTimeout` after `within` seconds (default: the server's `timeout`; cancelled upstream), and the
        upstream's own error as `UpstreamRefused` with `upstreamCode` (and `upstreamData`). `what` names
        the request in messages. `use=False` (listings) leaves the `idleTimeout` clock alone.
        """
        client = self._client
        if client is None or self._lost:
            raise server_unavailable(self.name, self.status.value, self.error)
        limit = self.spec.call_timeout if within is None else within
        relay = current_relay()
        token = object()
        if relay is not None:
            self._in_flight[token] = relay
        if use:
            self._last_used = anyio.current_time()
        with anyio.CancelScope() as connection_scope:
            self._calls.add(connection_scope)
            try:
                with anyio.move_on_after(limit):
                    return await operation(client)
            except MCPError as exc:
                if _session_expired(exc) or exc.error.code == types.CONNECTION_CLOSED:
                    self._on_closed()
                    raise self._gone_during(what, exc.error.message) from None
                raise UpstreamRefused(
                    f"{self.name}: {what} failed: {exc.error.message}",
                    upstream_message=exc.error.message,
                    server=self.name,
                    upstreamCode=exc.error.code,
                    upstreamData=exc.error.data,
                ) from None
            except Exception as exc:
                if self._lost:
                    raise self._gone_during(what, describe_exception(exc)) from None
                reason = describe_exception(exc)
                raise UpstreamError(f"{self.name}: {what} failed: {reason}", server=self.name) from None
            finally:
                if use:
                    self._last_used = anyio.current_time()
                self._calls.discard(connection_scope)
                self._wake.set()
                self._in_flight.pop(token, None)
        if connection_scope.cancelled_caught:
            reason = "the connection was lost" if not self._stopping else "the gateway is stopping"
            raise self._gone_during(what, reason)
        raise CallTimeout(
            f"{self.name}: {what} did not answer within {limit:g}s and was cancelled upstream.",
            server=self.name,
            timeoutSeconds=limit,
        )

    def _gone_during(self, what: str, reason: str) -> ServerUnavailable:
        again = " toolscout is connecting to it again." if self.spec.reconnect and not self._stopping else ""
        return ServerUnavailable(
            f"Server {self.name!r} went away during {what} ({reason}).{again}",
            server=self.name,
            status=Status.ERROR.value,
        )

    async def _list_tools(self, client: Client) -> list[types.Tool]:
        capabilities = client.server_capabilities
        if capabilities.tools is None:
            return []
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        else:
            logger.warning("%s: stopped listing tools after %d pages", self.name, MAX_TOOL_PAGES)
        return tools

    def _connected(self, client: Client, tools: Sequence[types.Tool]) -> None:
        info = client.server_info
        self.identity = ServerIdentity(
            name=info.name if info else None,
            version=(info.version or None) if info else None,
            title=info.title if info else None,
            description=info.description if info else None,
            instructions=client.instructions,
            protocol_version=client.protocol_version,
        )
        self._client = client
        self._list_live_tools(tools)
        # Listed after subscribing to changes: only a change told since then is still to be fetched.
        self._tools_stale = self._refresh_requested
        if self._tools_stale:
            self._wake.set()  # `_serve` fetches it first thing
        self.status = Status.CONNECTED
        self.error = None
        self._settle()
        self._notify_changed()
        logger.info(
            "%s: connected (%s, protocol %s), %d tools",
            self.name,
            self.spec.transport.label,
            client.protocol_version,
            len(tools),
        )

    async def _serve(self, client: Client) -> bool:
        """Keep the connection until it is lost (False) or idle for `_idle_after()` seconds (True)."""
        idle_after = self._idle_after()
        self._last_used = anyio.current_time()
        while not self._lost:
            # A call in flight keeps it open, as do subscriptions; the end of a call wakes this loop to start counting.
            if idle_after is None or self._calls or self.resources:
                await self._wake.wait()
            else:
                with anyio.move_on_after(self._last_used + idle_after - anyio.current_time()):
                    await self._wake.wait()
                if not self._wake.is_set():
                    logger.info("%s: closing after %gs without calls", self.name, idle_after)
                    return True
            self._wake = anyio.Event()
            if self._refresh_requested and not self._lost:
                self._refresh_requested = False
                self._list_live_tools(await self._list_tools(client))
                self._tools_stale = self._refresh_requested  # told of yet another change meanwhile
                self._notify_changed()
                logger.info("%s: tool list changed, now %d tools", self.name, self._catalog.counts(self.name)[0])
        return False

    def _list_live_tools(self, tools: Sequence[types.Tool]) -> None:
        self._catalog.set_server_tools(self.name, tools)
        # What it really offers: listed while it is idle, reconnecting or down, until it says otherwise.
        self.offline_tools = tuple(tools)
        if self._on_tools_listed is not None:
            self._on_tools_listed(self, tools)

    @staticmethod
    def _announces_changes(client: Client) -> bool:
        # Handshake-era servers push notifications/*/list_changed on their own (see _on_message);
        # on 2026-07-28 they arrive only on a subscriptions/listen stream we open.
        caps = client.server_capabilities
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and any(
            c is not None and bool(c.list_changed) for c in (caps.tools, caps.resources, caps.prompts)
        )

    async def _listen_for_changes(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        caps = client.server_capabilities
        started = False
        try:
            async with client.listen(
                tools_list_changed=bool(caps.tools and caps.tools.list_changed),
                resources_list_changed=bool(caps.resources and caps.resources.list_changed),
                prompts_list_changed=bool(caps.prompts and caps.prompts.list_changed),
            ) as subscription:
                task_status.started()
                started = True
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._request_refresh()
                    elif isinstance(event, ResourcesListChanged):
                        self._list_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        self._list_changed("prompts")
        except Exception as exc:
            # Without the stream the catalog can go stale, but the server itself still works.
            logger.warning("%s: stopped listening for list changes: %s", self.name, describe_exception(exc))
        if not started:
            task_status.started()

    def _list_changed(self, kind: ListKind) -> None:
        # The SDK also hands listen-stream frames to _on_message, so one change may be told twice:
        # the gateway compares what it lists before telling anyone (server.py), so that is harmless.
        if self._on_list_changed is not None:
            self._on_list_changed(self, kind)

    def _request_refresh(self) -> None:
        self._refresh_requested = True
        self._tools_stale = True
        self._wake.set()

    def _fail(self, reason: str) -> None:
        detail = self.spec.transport.diagnostics()
        # Told to clients (list_mcp_servers) and stored: an HTTP error quotes the URL, stderr may echo a token.
        self.error = mask_text(f"{reason}; last output: {detail}" if detail else reason)
        self.status = Status.ERROR
        self._settle()
        self._notify_changed()
        logger.warning("%s: %s (%s)", self.name, self.error, self.spec.transport.label)

    def _on_closed(self) -> None:
        self._lost = True
        self._wake.set()
        self._drop_calls()

    def _drop_calls(self) -> None:
        # Calls in flight on a connection that is gone would wait for an answer that cannot come.
        for scope in list(self._calls):
            scope.cancel()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._request_refresh()
        elif isinstance(message, types.ResourceListChangedNotification):
            self._list_changed("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._list_changed("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            meta = message.params.meta or {}
            if SUBSCRIPTION_ID_META_KEY not in meta:  # a listen stream's are taken from the stream (watch.py)
                await self._resource_updated(message.params.uri)
        elif isinstance(message, Exception):
            logger.debug("%s: transport reported %r", self.name, message)

    async def _resource_updated(self, uri: str) -> None:
        if self._on_resource_updated is not None:
            await self._on_resource_updated(self, uri)

    def _relay_for(self, what: str) -> Relay | types.ErrorData:
        """The client an upstream request or message belongs to.

        A request an upstream makes while answering a 2026-07-28 call (input required) runs in
        the calling task, so its relay is current. A handshake-era upstream's request arrives on
        its own, carrying nothing that ties it to a call: it goes to the client of the call in
        flight when there is one, or to the one client all calls in flight come from; with calls
        from several clients it would be a guess, and a guess could show one user's data to
        another, so the upstream gets an error instead.
        """
        relay = current_relay()
        if relay is not None:
            return relay
        relays = list(self._in_flight.values())
        clients = {id(r.origin) for r in relays}
        if relays and len(clients) == 1:
            return relays[-1]
        reason = (
            "no call to it is in flight"
            if not relays
            else f"calls from {len(clients)} clients are in flight and the request does not say which it is for"
        )
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"toolscout cannot route {what}: {reason}.")

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> SamplingResult:
        relay = self._relay_for("sampling/createMessage")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: sampling request relayed to %s", self.name, relay.client or "the client")
        return await relay.sample(params)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        relay = self._relay_for("elicitation/create")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: elicitation request relayed to %s", self.name, relay.client or "the client")
        return await relay.elicit(params)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        # Always in the gateway's own log; to a client only when it is clear whose call it is about.
        level = _LOG_LEVELS.get(params.level, logging.INFO)
        logger.log(level, "%s%s: %s", self.name, f" [{params.logger}]" if params.logger else "", params.data)
        relay = self._relay_for("a log message")
        if not isinstance(relay, types.ErrorData):
            await relay.log(params)
