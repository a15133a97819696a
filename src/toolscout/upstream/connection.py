"""One upstream server: its connection's run loop, its tool list, calls to its tools, and what the
server sends the gateway unasked.

Each upstream runs as one task that owns its own exit stack: connecting, listing tools, staying
open, and tearing down all happen there, so one broken server can fail or be dropped without
touching the others. Its status moves only through `ConnectionState.move` (spec.py, where the
transitions are drawn); requests go out through `CallsInFlight.send` (calls.py).

What the server sends unasked is handled by `ClientCallbacks`: list changes, resource updates,
logs, and its requests to the client (sampling, elicitation). Its requests and logs during a call
go back to the client of that call (its `Relay`, relay.py), or are refused with an error the
upstream can act on; list changes and resource updates go to the gateway (the callbacks given to
`ClientCallbacks`). A handshake-era server pushes changes on its session (`on_message`); one
reached at 2026-07-28 sends them only on a `subscriptions/listen` stream we open
(`listen_for_changes`).

The SDK (`mcp`) is imported where a connection is made, not with this module: a command answered
from the stored catalog builds upstreams that never connect, and importing the SDK would be most
of its start (tests/test_cli_imports.py keeps it so). The other modules of this package do the same.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout import __version__
from toolscout.errors import ScopeRequired, ServerUnavailable, SignInRequired, ToolExecutionError, UpstreamError
from toolscout.masking import mask_text
from toolscout.telemetry.metrics import Histogram
from toolscout.upstream.calls import (
    CallsInFlight,
    Relay,
    Request,
    SamplingResult,
    ServerTools,
    ToolCall,
    ToolListing,
    current_relay,
    describe_exception,
    innermost,
)
from toolscout.upstream.spec import ConnectionState, ListKind, ServerIdentity, Status, UpstreamSpec
from toolscout.upstream.watch import EndpointWatch, ResourceWatch

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import ClientRequestContext, IncomingMessage

    from toolscout.upstream.oauth import ScopeChallenge
    from toolscout.upstream.transport import UpstreamTarget

logger = logging.getLogger(__name__)

DEFAULT_LAZY_IDLE = 300.0
"""A lazy server's connection is closed after this many seconds without calls, unless configured."""
BACKOFF_INITIAL = 1.0  # seconds before connecting again after a failure, doubling up to the spec's backoff_max
T = TypeVar("T")


class Upstream:
    """A live (or failed, or disabled) upstream server."""

    def __init__(
        self,
        spec: UpstreamSpec,
        catalog: ToolListing,
        *,
        on_tools_listed: Callable[[Upstream, Sequence[types.Tool]], None] | None = None,
        on_list_changed: Callable[[Upstream, ListKind], None] | None = None,
        on_resource_updated: Callable[[Upstream, str], Awaitable[None]] | None = None,
        durations: Histogram | None = None,
        connecting: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.spec = spec
        self._connecting = connecting
        """Shared by the gateway's upstreams: a connection attempt holds one of its places from the
        start of the handshake until the tools are listed (or the attempt fails)."""
        self.name = spec.name
        self._state = ConnectionState(spec.name, disabled=spec.disabled)
        self.identity: ServerIdentity | None = None
        self._on_tools_listed = on_tools_listed
        self._tools = ServerTools(spec.name, catalog, spec.static_tools, self._tools_listed)
        self._on_list_changed = on_list_changed
        self._on_resource_updated = on_resource_updated
        self._calls = CallsInFlight(
            self._state,
            reconnect=spec.reconnect,
            on_gone=self._on_closed,
            on_ended=self._call_ended,
            durations=durations,
        )
        self._callbacks = ClientCallbacks(
            spec.name,
            self._calls,
            tools_changed=self._request_refresh,
            list_changed=self._list_changed,
            resource_updated=self._resource_updated,
        )
        self.resource_subscriptions = ResourceWatch(self.name, self.request, self._resource_updated)
        self._endpoint = EndpointWatch(spec, self._tools, self.request, self._request_refresh, self._on_closed)
        """The resources subscribed to on this server for the gateway's clients (watch.py)."""
        self._wake = anyio.Event()
        """Wakes `_serve`: the connection lost, a tool list to fetch, a call ended (the idle countdown)."""
        self._scope: anyio.CancelScope | None = None
        """What `stop()` cancels: the current attempt, the backoff, or the idle wait."""
        self._wanted = anyio.Event()
        """Set by `connect_if_idle()`; consumed (replaced) when the idle wait ends."""
        self._mode = "legacy" if spec.protocol == "legacy-first" else spec.protocol
        """The era asked for when connecting (`legacy-first`: `auto` once `initialize` is refused, for as
        long as the server is then reached at 2026-07-28; the handshake first again otherwise)."""
        self._fell_back = False
        self._turn = False
        """Whether this attempt holds a place in `_connecting`."""
        self._connected_since: float | None = None
        self.reconnects = 0
        """Attempts to connect again after a failure or a lost connection (a metric)."""
        if not spec.disabled:
            self._tools.list_offline()

    @property
    def status(self) -> Status:
        """Its status as users see it."""
        return self._state.status

    @property
    def error(self) -> str | None:
        """Why the last attempt failed (kept while connecting again), None once connected."""
        return self._state.error

    @property
    def connected_since(self) -> float | None:
        """When the current connection was made (epoch seconds), while connected."""
        if self._connected_since is None or self.status is not Status.CONNECTED:
            return None
        return time.time() - (anyio.current_time() - self._connected_since)

    @property
    def retry_at(self) -> float | None:
        """When the next connection attempt is due (epoch seconds), while waiting for it."""
        return self._state.retry_at

    @property
    def era(self) -> str | None:
        """The era of MCP it was last reached at: "2026-07-28" (stateless) or "handshake" (None: never reached)."""
        if self.identity is None:
            return None
        return "2026-07-28" if self.identity.protocol_version in MODERN_PROTOCOL_VERSIONS else "handshake"

    @property
    def listed_at(self) -> float | None:
        """When (anyio's clock) the server last listed its tools live; None: not yet."""
        return self._tools.listed_at

    async def relist(self, within: float) -> None:
        """List a connected server's tools again now, and wait at most `within` seconds for the list
        (a server not connected is left as it is: its last list stands)."""
        client = self._state.live_session
        if client is None or self._state.status is not Status.CONNECTED:
            return
        self._request_refresh()
        with anyio.move_on_after(within):
            while self._tools.stale and self._state.live_session is client:
                await self._state.wait_changed()

    def retry_now(self) -> bool:
        """Connect at once instead of waiting: a server waiting out its backoff tries now, an idle one
        connects. Whether it did anything (a connected or connecting server is left alone)."""
        if self._state.status is Status.IDLE:
            self.connect_if_idle()
            return True
        waiting = self._state.status in (Status.ERROR, Status.DISCONNECTED) and self._state.retry_at is not None
        if (waiting or self._state.status is Status.NEEDS_LOGIN) and self._scope is not None:
            self._scope.cancel()  # the backoff's sleep: the loop goes on to the next attempt
            return True
        return False

    @property
    def own_description(self) -> str:
        """Its configured description, else what it said about itself (its description, else its title)."""
        if self.spec.description:
            return self.spec.description
        identity = self.identity
        return (identity.description or identity.title or "") if identity is not None else ""

    @property
    def description(self) -> str:
        """Its configured description, else what it said about itself, else one made from its listed
        tools (`Catalog.described`): every server has words for `list_mcp_servers` and the search."""
        return self.own_description or self._tools.catalog.described(self.name)

    async def run(self) -> None:
        """Connect and stay connected until stopped; after a failure or a lost connection, connect
        again after a backoff that doubles (with jitter) up to the spec's `backoff_max` seconds."""
        state = self._state
        if self.spec.disabled or state.stopping:  # stopped before its task got to run
            return
        delay = BACKOFF_INITIAL
        if self.spec.lazy and (self._tools.offline is not None or self.spec.static_tools):
            await self._stay_idle()  # its tools are known: nothing to connect for until a call
        while not state.stopping:
            attempt = anyio.current_time()
            idle = await self._connect_and_serve()
            if self._fell_back:  # the handshake era was refused: the other one at once, no backoff
                self._fell_back = False
                continue
            if idle:
                delay = BACKOFF_INITIAL
                await self._stay_idle()
                continue
            if state.status is Status.NEEDS_LOGIN:
                await self._wait_for_sign_in()
                if state.stopping:
                    return
                delay = BACKOFF_INITIAL
                state.move(Status.CONNECTING)
                continue
            if state.stopping or not self.spec.reconnect:
                return
            if self._connected_since is not None and self._connected_since >= attempt:
                # It was up: start over from a short wait, as for a first failure.
                delay = BACKOFF_INITIAL
            # Jitter, so that servers that failed together (a network blip) do not retry together.
            wait = delay * random.uniform(0.5, 1.0)
            state.retry_at = time.time() + wait
            logger.info("%s: connecting again in %.1fs", self.name, wait)
            with anyio.CancelScope() as sleeping:
                self._scope = sleeping
                if not state.stopping:
                    await anyio.sleep(wait)
            if state.stopping:
                return
            delay = min(delay * 2, self.spec.backoff_max)
            self.reconnects += 1
            state.move(Status.CONNECTING)

    async def _wait_for_sign_in(self) -> None:
        """Wait, without connecting, until the server's sign-in is written anew (or `stop()`)."""
        from toolscout.upstream.transport import RemoteUpstream

        transport = self.spec.transport
        with anyio.CancelScope() as waiting:
            self._scope = waiting
            if not self._state.stopping:
                if isinstance(transport, RemoteUpstream):
                    await transport.wait_for_sign_in()
                else:
                    await anyio.sleep_forever()

    def connect_if_idle(self) -> None:
        """Someone needs the server: connect if it is idle."""
        self._wanted.set()
        if self._state.status is Status.IDLE:
            self._state.move(Status.CONNECTING)

    async def _stay_idle(self) -> None:
        """Disconnected on purpose until `connect_if_idle()` or `stop()`."""
        if not self._wanted.is_set():
            self._state.move(Status.IDLE)
            logger.info("%s: idle, connects on the next call", self.name)
            with anyio.CancelScope() as waiting:
                self._scope = waiting
                if not self._state.stopping:
                    await self._wanted.wait()
        self._wanted = anyio.Event()

    def _idle_after(self) -> float | None:
        idle = self.spec.idle_timeout
        return idle if idle is not None else (DEFAULT_LAZY_IDLE if self.spec.lazy else None)

    async def _connect_and_serve(self) -> bool:
        """One connection: connect (within connectTimeout), list tools, serve until it ends.

        True when it ended because it was idle (no failure), False otherwise."""
        if not await self._take_turn():
            return False
        try:
            return await self._attempt()
        finally:
            self._end_turn()

    async def _take_turn(self) -> bool:
        """Wait for a place among the servers connecting at once (`maxConnecting`); False when
        stopped meanwhile. The wait is not part of `connectTimeout`: it counts from the handshake."""
        self._turn = False
        if self._connecting is None:
            return not self._state.stopping
        with anyio.CancelScope() as waiting:
            self._scope = waiting
            if not self._state.stopping:
                await self._connecting.acquire()
                self._turn = True
        if self._state.stopping:
            self._end_turn()
            return False
        return self._turn

    def _end_turn(self) -> None:
        """Give the place back (at once when connected: serving holds none)."""
        if self._turn and self._connecting is not None:
            self._turn = False
            self._connecting.release()

    async def _attempt(self) -> bool:
        state = self._state
        state.begin_attempt()
        self._connected_since = None
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.spec.connect_timeout)
        self._scope = scope
        failure: str | None = None
        sign_in: BaseException | None = None
        handshaking = False
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = self._callbacks.client(self.spec.transport.target(self._on_closed), self._mode)
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
                        if self._callbacks.announces_changes(client):
                            # Subscribe before listing, so no change can fall between the two.
                            await tg.start(self._callbacks.listen_for_changes, client)
                        tools = await self._tools.fetch(client)
                        # Connected: from here on only stop() or a lost connection ends this.
                        scope.deadline = math.inf
                        self._end_turn()
                        self._on_connected(client, tools)
                        tg.start_soon(self._endpoint.watch, client, tools)
                        self._connected_since = anyio.current_time()
                        tg.start_soon(self.resource_subscriptions.keep, client)
                        idle = await self._serve(client)
                        tg.cancel_scope.cancel()
                    if idle:
                        return True
                    failure = "connection closed by the server"
        except Exception as exc:
            from mcp.shared.exceptions import MCPError

            refused = innermost(exc) if handshaking else None
            if isinstance(refused, MCPError) and self.spec.protocol == "legacy-first" and self._mode == "legacy":
                # Perhaps a server of the 2026-07-28 era only: ask the way that finds out, at once.
                message = refused.error.message
                logger.info("%s: initialize refused (%s); connecting with protocol auto", self.name, message)
                self._mode = "auto"
                self._fell_back = True
            elif isinstance(innermost(exc), SignInRequired):
                sign_in = innermost(exc)
            else:
                failure = describe_exception(exc)
        finally:
            state.end_attempt()
            if not state.stopping:
                # (Stopped for good, it is being forgotten: listing its tools again would show them, for a
                # moment, under the names that suit the servers left.)
                self._tools.list_offline()
        if handshaking and not self._fell_back and self.spec.protocol == "legacy-first":
            self._mode = "legacy"  # not reached in either era: no reason to skip the handshake next time
        if state.stopping or self._fell_back:
            return False
        if isinstance(sign_in, SignInRequired):
            self._state.move(Status.NEEDS_LOGIN, error=sign_in.message)
            logger.warning("%s: %s", self.name, sign_in.message)
            return False
        if scope.cancel_called and state.status is Status.CONNECTING:
            failure = f"did not finish connecting within {self.spec.connect_timeout:g}s"
        self._fail(failure or "stopped unexpectedly")
        return False

    def use_offline_tools(self, tools: Sequence[types.Tool]) -> None:
        """List `tools` whenever not connected, instead of the declared ones (what the server really offered)."""
        self._tools.offline = tuple(tools)
        if self._state.session is None and not self.spec.disabled:
            self._tools.list_offline()

    def stop(self, reason: str | None = None) -> None:
        """End the connection; the run task tears everything down. `reason` ("removed from the gateway"):
        what calls on it are told from now on (unset: the gateway is stopping)."""
        self._state.stop(reason)
        if self._scope is not None:
            self._scope.cancel()
        self._calls.drop()

    async def wait_settled(self) -> None:
        """Wait until the server is connected, has failed, or is disabled (bound it with a cancel scope)."""
        await self._state.wait_settled()

    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called (it never connects again); `stop_reason`: the reason it was given."""
        return self._state.stopping

    @property
    def stop_reason(self) -> str | None:
        return self._state.stop_reason

    @property
    def first_attempt_over(self) -> bool:
        """Whether the first attempt to connect has ended, however (or the server never tries)."""
        return self._state.first_attempt_over

    async def wait_first_attempt(self) -> None:
        """Wait until the first attempt to connect has ended, however it did (never for a later one)."""
        await self._state.wait_first_attempt()

    async def wait_changed(self) -> None:
        """Wait for the next change of status (connected, failed) or of the tool list."""
        await self._state.wait_changed()

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Forward one call on the kept session; cancelled upstream after the server's timeout.

        Only a tool this server listed under exactly the name `tool`, enabled by `toolRules`, is
        sent (`admit` of the catalog, else `ToolNotFound`/`ToolDisabled`): every path to a tool crosses
        here. While a list it announced is being fetched, the call waits for it (at most the
        server's `timeout`; then a `SERVER_UNAVAILABLE` to retry), never sent on the old one.
        """
        state = self._state
        call = ToolCall(self.name, tool)
        client = state.live_session
        if client is not None and self._tools.stale:
            with anyio.move_on_after(self.spec.call_timeout):
                while self._tools.stale and state.live_session is client:
                    await self.wait_changed()
        if client is None or state.live_session is not client:
            raise call.unavailable(state)
        if self._tools.stale:
            raise ServerUnavailable(
                f"Server {self.name!r} changed its tools and has not listed them again yet; try again shortly.",
                server=self.name,
                tool=tool,
                status=state.status.value,
            )
        self._tools.catalog.admit_tool(self.name, tool)
        relay = current_relay()
        progress = relay.progress if relay is not None else None
        try:
            return await self._calls.send(
                call,
                lambda c: c.call_tool(tool, arguments, progress_callback=progress),
                limit=self.spec.call_timeout,
            )
        except ServerUnavailable as exc:
            raise self._sign_in_required() or exc from None
        except ToolExecutionError:
            scope_required = self._scope_required(f"tools/call {tool}", tool=tool)
            if scope_required is None:
                raise
            raise scope_required from None
        finally:
            self._forget_challenge(f"tools/call {tool}")  # noted for this call: never for a later one

    def _scope_required(self, request: str, *, tool: str | None = None) -> ScopeRequired | None:
        """The server answered `request` 403 `insufficient_scope`, if it did (by `request_name`): the
        error saying so. The challenge is forgotten as it is taken, so that whatever becomes of the
        request (a timeout, a lost connection), a later failure is never blamed on it."""
        challenge = self._forget_challenge(request)
        if challenge is None:
            return None
        return ScopeRequired.for_request(self.name, request, challenge.scopes, challenge.description, tool=tool)

    def _forget_challenge(self, request: str) -> ScopeChallenge | None:
        """The 403 `insufficient_scope` noted for `request` (None: none), forgotten as it is taken."""
        from toolscout.upstream.transport import RemoteUpstream

        transport = self.spec.transport
        return transport.scope_challenges.pop(request, None) if isinstance(transport, RemoteUpstream) else None

    def _sign_in_required(self) -> SignInRequired | None:
        """Why the server refused the connection's sign-in, when that is what ended it (a 401 was not processed)."""
        from toolscout.upstream.transport import RemoteUpstream

        transport = self.spec.transport
        return transport.sign_in_required if isinstance(transport, RemoteUpstream) else None

    @property
    def server_capabilities(self) -> types.ServerCapabilities | None:
        """What the server of the live connection declared (None while not connected)."""
        client = self._state.session
        return client.server_capabilities if client is not None else None

    async def request(
        self, what: str, operation: Callable[[Client], Awaitable[T]], *, within: float | None = None, use: bool = True
    ) -> T:
        """Run one request other than a tool call (resources and prompts, for resources/) on the kept session.

        It fails as a call does: `ServerUnavailable` when not connected or when the connection goes,
        `CallTimeout` after `within` seconds (default: the server's `timeout`; cancelled upstream), and the
        upstream's own error as `UpstreamRefused` with `upstreamCode` (and `upstreamData`), or `ScopeRequired`
        when an OAuth server wants a wider sign-in for it. `what` names the request in messages, as the method
        and the item asked about (`prompts/get summary`), the words `oauth.request_name` reads off the
        request sent. `use=False` (listings) leaves the `idleTimeout` clock alone.
        """
        limit = self.spec.call_timeout if within is None else within
        try:
            return await self._calls.send(Request(self.name, what), operation, limit=limit, use=use)
        except ServerUnavailable as exc:
            raise self._sign_in_required() or exc from None
        except UpstreamError:
            scope_required = self._scope_required(what)
            if scope_required is None:
                raise
            raise scope_required from None
        finally:
            self._forget_challenge(what)  # noted for this request: never for a later one

    def _on_connected(self, client: Client, tools: Sequence[types.Tool]) -> None:
        """The handshake and the first tool list are done: the session is live."""
        self.identity = ServerIdentity.of(client)
        self._state.attach(client)
        self._tools.list_live(tools)
        # Listed after subscribing to changes: only a change told since then is still to be fetched.
        self._tools.stale = self._tools.refresh_requested
        if self._tools.stale:
            self._wake.set()  # `_serve` fetches it first thing
        self._state.move(Status.CONNECTED)
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
        self._calls.last_used = anyio.current_time()
        while not self._state.lost:
            # A call in flight keeps it open, as do subscriptions; the end of a call wakes this loop to start counting.
            if idle_after is None or self._calls or self.resource_subscriptions:
                await self._wake.wait()
            else:
                with anyio.move_on_after(self._calls.last_used + idle_after - anyio.current_time()):
                    await self._wake.wait()
                if not self._wake.is_set():
                    logger.info("%s: closing after %gs without calls", self.name, idle_after)
                    return True
            self._wake = anyio.Event()
            tools = self._tools
            if tools.refresh_requested and not self._state.lost:
                tools.refresh_requested = False
                tools.list_live(await tools.fetch(client))
                tools.stale = tools.refresh_requested  # told of yet another change meanwhile
                self._state.notify_changed()
                logger.info("%s: tool list changed, now %d tools", self.name, tools.catalog.counts(self.name)[0])
        return False

    def _tools_listed(self, tools: Sequence[types.Tool]) -> None:
        if self._on_tools_listed is not None:
            self._on_tools_listed(self, tools)

    def _list_changed(self, kind: ListKind) -> None:
        if self._on_list_changed is not None:
            self._on_list_changed(self, kind)

    def _request_refresh(self) -> None:
        self._tools.announced_change()
        self._wake.set()

    def _fail(self, reason: str) -> None:
        detail = self.spec.transport.diagnostics()
        # A connection that was up and went away is `disconnected`; an attempt that never got there, `error`.
        lost = self._state.status is Status.CONNECTED
        status = Status.DISCONNECTED if lost else Status.ERROR
        # Told to clients (list_mcp_servers) and stored: an HTTP error quotes the URL, stderr may echo a token.
        self._state.move(status, error=mask_text(f"{reason}; last output: {detail}" if detail else reason))
        logger.warning("%s: %s (%s)", self.name, self._state.error, self.spec.transport.label)

    def _on_closed(self) -> None:
        """The connection went away (its transport, or the server forgot our session)."""
        self._state.lost = True
        self._wake.set()
        self._calls.drop()

    def _call_ended(self) -> None:
        if self._idle_after() is not None:
            self._wake.set()  # the idle countdown starts when the last call ends (`_serve`)

    async def _resource_updated(self, uri: str) -> None:
        if self._on_resource_updated is not None:
            await self._on_resource_updated(self, uri)


CLIENT_INFO = types.Implementation(name="toolscout", version=__version__)
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


class ClientCallbacks:
    """The callbacks of the gateway's client session to one upstream."""

    def __init__(
        self,
        server: str,
        calls: CallsInFlight,
        *,
        tools_changed: Callable[[], None],
        list_changed: Callable[[ListKind], None],
        resource_updated: Callable[[str], Awaitable[None]],
    ) -> None:
        self._server = server
        self._calls = calls
        self._tools_changed = tools_changed
        self._list_changed = list_changed
        self._resource_updated = resource_updated

    def client(self, target: UpstreamTarget, mode: str) -> Client:
        """A client session to `target` in protocol `mode`, with these callbacks (not yet entered)."""
        from mcp import Client

        return Client(
            target,
            mode=mode,
            client_info=CLIENT_INFO,
            message_handler=self.on_message,
            cache=None,
            # Declared so the upstream may ask; each request goes to the client of the
            # call it belongs to, which may refuse (relay.py).
            sampling_callback=self.on_sampling,
            sampling_capabilities=types.SamplingCapability(
                context=types.SamplingContextCapability(), tools=types.SamplingToolsCapability()
            ),
            elicitation_callback=self.on_elicitation,
            logging_callback=self.on_log,
            # At 2026-07-28 logs come only to requests that opt in; each client's own
            # level is applied on the way out (SessionRelay.log).
            log_level="debug",
        )

    @staticmethod
    def announces_changes(client: Client) -> bool:
        """Whether changes are to be listened for on a `subscriptions/listen` stream."""
        # Handshake-era servers push notifications/*/list_changed on their own (see on_message);
        # on 2026-07-28 they arrive only on a subscriptions/listen stream we open.
        caps = client.server_capabilities
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and any(
            c is not None and bool(c.list_changed) for c in (caps.tools, caps.resources, caps.prompts)
        )

    async def listen_for_changes(
        self, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the server's list changes on a `subscriptions/listen` stream (started once it is open)."""
        from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

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
                        self._tools_changed()
                    elif isinstance(event, ResourcesListChanged):
                        self._list_changed("resources")
                    elif isinstance(event, PromptsListChanged):
                        self._list_changed("prompts")
        except Exception as exc:
            # Without the stream the catalog can go stale, but the server itself still works.
            logger.warning("%s: stopped listening for list changes: %s", self._server, describe_exception(exc))
        if not started:
            task_status.started()

    async def on_message(self, message: IncomingMessage) -> None:
        """Handle a notification (or a transport's exception) that arrived on the session."""
        # The SDK also hands listen-stream frames here, so one list change may be told twice: the
        # gateway compares what it lists before telling anyone (serve/), so that is harmless.
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, types.ResourceListChangedNotification):
            self._list_changed("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._list_changed("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

            meta = message.params.meta or {}
            if SUBSCRIPTION_ID_META_KEY not in meta:  # a listen stream's are taken from the stream (watch.py)
                await self._resource_updated(message.params.uri)
        elif isinstance(message, Exception):
            logger.debug("%s: transport reported %r", self._server, message)

    def relay_for(self, what: str) -> Relay | types.ErrorData:
        """Return the relay of the client an upstream request or message belongs to.

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
        relays = self._calls.relays
        clients = {id(r.origin) for r in relays}
        if relays and len(clients) == 1:
            return relays[-1]
        reason = (
            "no call to it is in flight"
            if not relays
            else f"calls from {len(clients)} clients are in flight and the request does not say which it is for"
        )
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"toolscout cannot route {what}: {reason}.")

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> SamplingResult:
        """Ask the client of the call it belongs to for a `sampling/createMessage`."""
        relay = self.relay_for("sampling/createMessage")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: sampling request relayed to %s", self._server, relay.client or "the client")
        return await relay.sample(params)

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Ask the client of the call it belongs to for an `elicitation/create`."""
        relay = self.relay_for("elicitation/create")
        if isinstance(relay, types.ErrorData):
            return relay
        logger.info("%s: elicitation request relayed to %s", self._server, relay.client or "the client")
        return await relay.elicit(params)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Write an upstream's log message to the gateway's own log, and pass it on to a client only when it
        is clear whose call it is about."""
        level = _LOG_LEVELS.get(params.level, logging.INFO)
        logger.log(level, "%s%s: %s", self._server, f" [{params.logger}]" if params.logger else "", params.data)
        relay = self.relay_for("a log message")
        if not isinstance(relay, types.ErrorData):
            await relay.log(params)
