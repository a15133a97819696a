"""The gateway's MCP face: the tools of the configured mode (surfaces/), and every upstream's
resources and prompts (mirror/, the same in every mode), over stdio or streamable HTTP.

This is the edge where `ToolscoutError`s become `isError` results with
`structuredContent: {"success": false, "error": {...}}` (tools), or MCP errors with the error as
`data` (resources and prompts: an upstream's own error keeps its code). An upstream's protocol error
on one of its own tools (passthrough, a loaded tool) is passed on as the same MCP error.
"""

from __future__ import annotations

import logging
import signal
import socket
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
import mcp_types as types
import uvicorn
from mcp.server import NotificationOptions, Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp

from toolscout import __version__
from toolscout.config.models import ModeName
from toolscout.errors import (
    AGENT_STEPS,
    AmbiguousName,
    InvalidArguments,
    Phrasing,
    PromptDisabled,
    PromptNotFound,
    ResourceDisabled,
    ResourceNotFound,
    ServerNotFound,
    ToolscoutError,
    UpstreamRefused,
)
from toolscout.face.http_access import AllowList, HostOriginGuard
from toolscout.face.http_sessions import BoundedSessionManager, PeerAdmission, SessionLimits
from toolscout.face.rounds import Rounds
from toolscout.face.sessions import ClientSessions, ClientState, ConnectionScope, Context, ListChanged
from toolscout.face.stdio import serve_process_stdio
from toolscout.gateway.core import Gateway
from toolscout.mirror.completions import complete
from toolscout.mirror.list_names import LIST_NAMES, ListName
from toolscout.mirror.subscriptions import UNSUBSCRIBE_WAIT, ResourceSubscriptions
from toolscout.naming import call_target
from toolscout.present import render
from toolscout.suggestions import unknown_tool
from toolscout.surfaces.base import Surface, SurfaceOptions, make_surface
from toolscout.surfaces.digest import digest_off_loop
from toolscout.upstream.relay import relaying

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
R = TypeVar("R")
ItemT = TypeVar("ItemT", types.Resource, types.ResourceTemplate, types.Prompt)
HTTP_SHUTDOWN_GRACE = 2
"""How long, once HTTP serving is asked to stop, responses in progress may take before they are cut."""
HTTP_PATH = "/mcp"
CHANGE_QUIET_SECONDS = 0.2
"""How long catalog changes are gathered before clients are told about them."""


def error_result(error: ToolscoutError, next_steps: Phrasing = AGENT_STEPS, /, **context: str) -> types.CallToolResult:
    """A failed meta-tool call as the agent sees it (`next_steps` in terms of the tools it has)."""
    payload = {**{k: v for k, v in context.items() if k not in error.details}, **error.to_dict(next_steps)}
    return types.CallToolResult(
        content=[types.TextContent(text=render.error_text(payload))],
        structured_content={"success": False, "error": payload},
        is_error=True,
    )


_INVALID_PARAMS_ERRORS = (
    AmbiguousName,
    ServerNotFound,
    ResourceNotFound,
    ResourceDisabled,
    PromptNotFound,
    PromptDisabled,
    InvalidArguments,
)
"""What the spec answers with -32602 (an unknown resource or prompt); other failures are -32603."""


def mcp_error(error: ToolscoutError) -> MCPError:
    """A failed resources/prompts request as the client sees it: an upstream's own error keeps its code."""
    upstream = error.details.get("upstreamCode")
    if isinstance(upstream, int):
        code = upstream
    else:
        code = types.INVALID_PARAMS if isinstance(error, _INVALID_PARAMS_ERRORS) else types.INTERNAL_ERROR
    return MCPError(code=code, message=error.explain(), data=error.to_dict())


def passed_on(error: UpstreamRefused) -> MCPError:
    """An upstream's own protocol error on one of its tools, as that upstream sent it (code, message, data)."""
    code = error.details.get("upstreamCode")
    return MCPError(
        code=code if isinstance(code, int) else types.INTERNAL_ERROR,
        message=error.upstream_message,
        data=error.details.get("upstreamData"),
    )


@contextmanager
def mcp_errors(method: str) -> Generator[None]:
    """Turn what goes wrong while serving `method` into an MCP error with a clear message."""
    try:
        yield
    except ToolscoutError as exc:
        raise mcp_error(exc) from None
    except MCPError:
        raise
    except Exception as exc:  # a bug of ours: a clear failure for the client, the traceback for the log
        logger.exception("%s failed unexpectedly", method)
        raise MCPError(
            code=types.INTERNAL_ERROR, message=f"Internal error in {method}: {type(exc).__name__}: {exc}"
        ) from None


def _one_page(params: types.PaginatedRequestParams | None) -> None:
    if params is not None and params.cursor is not None:
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown cursor: toolscout answers every list in one page.")


class GatewayServer(Server[ConnectionScope]):
    """The SDK's low-level server, with the capabilities toolscout really has.

    `tools.listChanged` only when the surface's list can change; `resources.listChanged` and
    `prompts.listChanged` always (upstreams come, go and change them); `resources.subscribe`
    always (passed on to the upstream that owns the resource; one that cannot says so). The SDK
    derives capabilities here both for the handshake (from `create_initialization_options`, which
    streamable HTTP calls with no arguments) and for `server/discover` at 2026-07-28, where it
    would otherwise set every flag from serving `subscriptions/listen`.
    """

    def __init__(self, *args: Any, tools_changed: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools_changed = tools_changed

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        update: dict[str, Any] = {}
        if capabilities.tools is not None:
            update["tools"] = types.ToolsCapability(list_changed=self.tools_changed)
        if capabilities.resources is not None:
            update["resources"] = types.ResourcesCapability(subscribe=True, list_changed=True)
        if capabilities.prompts is not None:
            update["prompts"] = types.PromptsCapability(list_changed=True)
        return capabilities.model_copy(update=update)


def build_server(
    gateway: Gateway,
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
    *,
    sessions: ClientSessions | None = None,
) -> GatewayServer:
    """The low-level MCP server exposing `gateway` through the surface of `mode`, and every
    upstream's resources and prompts whatever the mode."""
    surface: Surface = make_surface(mode, gateway, options)
    clients = sessions or ClientSessions()
    subscriptions = ResourceSubscriptions(gateway.mirror, clients)
    gateway.mirror.follow_updates(subscriptions.updated)
    clients.on_evict = subscriptions.drop_soon
    # The five meta-tools never change; every other surface follows the catalog or the client.
    tools_change = mode != "discovery"

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncGenerator[ConnectionScope]:
        # Once per connection on stdio and in process, once for all on HTTP (sessions.py).
        scope = ConnectionScope()
        async with anyio.create_task_group() as tg:
            if tools_change:
                tg.start_soon(watch_catalog, gateway, surface, clients, scope)
            tg.start_soon(watch_content, gateway, clients, scope)
            try:
                yield scope
            finally:
                with anyio.move_on_after(UNSUBSCRIBE_WAIT, shield=True):
                    await subscriptions.drop(scope.client)
                tg.cancel_scope.cancel()

    async def on_list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        state = clients.state(ctx)
        tools = await surface.tools(state)
        if tools_change:  # the digest is only ever compared when the list can change
            state.fetched("tools", await digest_off_loop(tools))
        return types.ListToolsResult(tools=tools)

    rounds = Rounds(gateway)

    async def relayed(
        ctx: Context, state: ClientState, params: types.InputResponseRequestParams, work: Callable[[], Awaitable[R]]
    ) -> R | types.InputRequiredResult:
        """`work()` with the way back to this request's client (relay.py): in rounds at 2026-07-28 (rounds.py)."""
        relay = clients.relay(ctx, state)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await rounds.run(state, relay, ctx.session.client_capabilities, params, work)
        with relaying(relay):
            return await work()

    async def on_call_tool(
        ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = params.arguments or {}
        context = call_target(arguments)
        client = clients.state(ctx)
        try:
            outcome = await relayed(ctx, client, params, lambda: surface.call(client, params.name, arguments))
        except UpstreamRefused as exc:
            if surface.native(params.name):
                raise passed_on(exc) from None
            return error_result(exc, surface.next_steps, **context)
        except ToolscoutError as exc:
            return error_result(exc, surface.next_steps, **context)
        except MCPError:  # a protocol error of the request itself (rounds.py)
            raise
        except Exception as exc:
            # A bug of ours must not take the session down; the agent gets a clear failure instead.
            logger.exception("%s failed unexpectedly", params.name)
            return error_result(
                ToolscoutError(f"Internal error in {params.name}: {type(exc).__name__}: {exc}"),
                surface.next_steps,
                **context,
            )
        finally:
            await clients.announce(ctx, client)
        if outcome is None:
            unknown = unknown_tool(params.name, [t.name for t in await surface.tools(client)])
            if surface.native(params.name):  # meant for an upstream: audited as refused
                with relaying(clients.relay(ctx, client)):
                    await gateway.record_refused({"tool": params.name, "arguments": arguments}, unknown)
            raise MCPError(code=types.INVALID_PARAMS, message=unknown.message)
        return outcome

    mirror = gateway.mirror

    async def listed(
        ctx: Context,
        params: types.PaginatedRequestParams | None,
        name: ListName,
        method: str,
        fetch: Callable[[], Awaitable[list[ItemT]]],
    ) -> list[ItemT]:
        """One of the mirror's lists, in one page, remembered as what this client was shown."""
        _one_page(params)
        with mcp_errors(method):
            items = await fetch()
        clients.state(ctx).fetched(name, await digest_off_loop(items))
        return items

    async def on_list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = await listed(ctx, params, "resources", "resources/list", mirror.resources)
        return types.ListResourcesResult(resources=resources)

    async def on_list_resource_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = await listed(
            ctx, params, "resource_templates", "resources/templates/list", mirror.resource_templates
        )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def on_read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        with mcp_errors("resources/read"):
            return await relayed(ctx, clients.state(ctx), params, lambda: mirror.read(params.uri))

    async def on_list_prompts(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        prompts = await listed(ctx, params, "prompts", "prompts/list", mirror.prompts)
        return types.ListPromptsResult(prompts=prompts)

    async def on_get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        with mcp_errors("prompts/get"):
            return await relayed(
                ctx, clients.state(ctx), params, lambda: mirror.get_prompt(params.name, params.arguments)
            )

    async def on_subscribe_resource(ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
        with mcp_errors("resources/subscribe"):
            await subscriptions.subscribe(clients.state(ctx), params.uri)
        return types.EmptyResult()

    async def on_unsubscribe_resource(ctx: Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        with mcp_errors("resources/unsubscribe"):
            await subscriptions.unsubscribe(clients.state(ctx), params.uri)
        return types.EmptyResult()

    async def on_completion(ctx: Context, params: types.CompleteRequestParams) -> types.CompleteResult:
        with mcp_errors("completion/complete"), relaying(clients.relay(ctx, clients.state(ctx))):
            return await complete(gateway.mirror, params)

    async def on_set_logging_level(ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
        clients.state(ctx).log_level = params.level
        return types.EmptyResult()

    with warnings.catch_warnings():
        # Logging is deprecated at 2026-07-28, but handshake-era clients still set their level,
        # and a server that sends them upstream logs must declare the capability.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return GatewayServer(
            "toolscout",
            version=__version__,
            title="toolscout MCP gateway",
            instructions=surface.instructions,
            lifespan=lifespan,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_set_logging_level=on_set_logging_level,
            on_list_resources=on_list_resources,
            on_list_resource_templates=on_list_resource_templates,
            on_read_resource=on_read_resource,
            on_list_prompts=on_list_prompts,
            on_get_prompt=on_get_prompt,
            on_subscribe_resource=on_subscribe_resource,
            on_unsubscribe_resource=on_unsubscribe_resource,
            on_completion=on_completion,
            # Always: resource and prompt lists change in every mode (tools too, except in discovery).
            on_subscriptions_listen=subscriptions.listen,
            tools_changed=tools_change,
        )


_NOTICES: dict[str, ListChanged] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "resource_templates": ResourcesListChanged(),  # templates have no notice of their own
    "prompts": PromptsListChanged(),
}


async def tell_news(clients: ClientSessions, news: dict[int, tuple[ClientState, set[ListChanged]]]) -> None:
    """Send each client its notices, once each."""
    for state, notices in news.values():
        for notice in notices:
            try:
                await clients.tell(state, notice)
            except Exception as exc:  # a client gone away must not stop the others being told
                logger.debug("could not tell a client %s: %s", notice, exc)


async def watch_catalog(gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose tool list the catalog changed, once per change, until cancelled.

    Only clients that have listed tools are told, and only when what they would now get differs
    from what they got (or were last told about): a server reconnecting with the same tools
    tells no one. Changes that come together (start-up, several servers at once) are told once.
    """
    async for _ in gateway.catalog.changes.bursts(CHANGE_QUIET_SECONDS):
        news: dict[int, tuple[ClientState, set[ListChanged]]] = {}
        shared: str | None = None  # a list that is the same for every client is listed once
        for state in [scope.client, *clients.http_states()]:
            if "tools" not in state.listed:
                continue
            current = shared or await digest_off_loop(await surface.tools(state))
            if not surface.per_client:
                shared = current
            if state.news("tools", current):
                news[id(state)] = (state, {_NOTICES["tools"]})
        await tell_news(clients, news)


async def watch_content(gateway: Gateway, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose resource, template or prompt list changed, once per change, until cancelled.

    As `watch_catalog` for tools. Templates and resources share one notice
    (`notifications/resources/list_changed`), sent once when both changed.
    """
    mirror = gateway.mirror
    async for _ in mirror.changes.bursts(CHANGE_QUIET_SECONDS):
        states = [scope.client, *clients.http_states()]
        news: dict[int, tuple[ClientState, set[ListChanged]]] = {}
        for name in LIST_NAMES:
            listeners = [state for state in states if name in state.listed]
            if not listeners:
                continue
            try:
                current = await digest_off_loop(await mirror.listed(name))
            except Exception:  # never a reason to stop telling clients about later changes
                logger.exception("could not list %s to compare", name)
                continue
            for state in listeners:
                if state.news(name, current):
                    news.setdefault(id(state), (state, set()))[1].add(_NOTICES[name])
        await tell_news(clients, news)


async def stop_on_signals(stop: anyio.Event) -> None:
    """Set `stop` on SIGINT, SIGTERM or SIGHUP, and keep receiving them until cancelled.

    One that comes once `stop` is set is logged and nothing more: left to its default action it
    would kill the process while it stops its upstream servers, and their children would outlive it.
    """
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if stop.is_set():
                logger.info("received %s; still stopping the upstream servers", name)
            else:
                logger.info("received %s, shutting down", name)
                stop.set()


async def serve_stdio(
    gateway: Gateway,
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
    *,
    stop: anyio.Event | None = None,
) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin, or `stop` is set.

    Without `stop`, until a stop signal arrives; signals are then handled only while serving, so a
    caller that stops the gateway afterwards should rather own them (`stop_on_signals`) for as long.
    """
    server = build_server(gateway, mode, options)
    async with anyio.create_task_group() as tg:

        async def stop_when_set(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        if stop is None:
            stop = anyio.Event()
            tg.start_soon(stop_on_signals, stop)
        tg.start_soon(stop_when_set, stop)
        async with serve_process_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling (the gateway owns shutdown, upstreams included), and
    whose shutdown does not wait on clients: connections still open `HTTP_SHUTDOWN_GRACE` seconds
    after it began are closed (a response being sent to a client that does not read it then ends as
    if the client had gone), and requests still running after twice that are cancelled."""

    @contextmanager
    def capture_signals(self) -> Generator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._close_connections_after, HTTP_SHUTDOWN_GRACE)
            await super().shutdown(sockets)
            tg.cancel_scope.cancel()

    async def _close_connections_after(self, grace: float) -> None:
        await anyio.sleep(grace)
        for connection in list(self.server_state.connections):
            connection.transport.abort()  # the connection is lost: a send waiting on the client returns


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0 picks a free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def http_app(
    server: Server[Any], *, allow: AllowList, stateless: bool = False, limits: SessionLimits | None = None
) -> ASGIApp:
    """`server` as streamable HTTP at /mcp: the SDK's session manager with toolscout's admission
    (http_sessions.py), behind the Host/Origin check (http_access.py), which replaces the SDK's own:
    that one runs only on the loopback names, after a session was already opened."""
    manager = BoundedSessionManager(
        server,
        limits or SessionLimits(),
        stateless=stateless,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app = Starlette(
        routes=[Route(HTTP_PATH, endpoint=StreamableHTTPASGIApp(manager))], lifespan=lambda _: manager.run()
    )
    return HostOriginGuard(PeerAdmission(app, manager), allow)


async def serve_http(
    gateway: Gateway,
    sock: socket.socket,
    *,
    host: str,
    stateless: bool = False,
    log_level: str | None = "warning",
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
    stop: anyio.Event | None = None,
    allow: AllowList | None = None,
    limits: SessionLimits | None = None,
) -> None:
    """Serve streamable HTTP at /mcp on an already listening socket until `stop` is set (without
    `stop`: until a stop signal arrives, as `serve_stdio`). `log_level=None` leaves uvicorn's
    loggers as they are (they are global: a second server in the process must not reset them).
    `allow`: the Host and Origin headers answered (unset: `AllowList.for_bind(host)`)."""
    server = build_server(gateway, mode, options)
    app = http_app(server, allow=allow or AllowList.for_bind(host), stateless=stateless, limits=limits)
    # log_config=None: uvicorn's own dictConfig would close the gateway's log handlers (and with them
    # its stderr log, see `toolscout.face.stderr_log`); its loggers go to the gateway's log instead.
    config = uvicorn.Config(
        app,
        log_level=log_level,
        log_config=None,
        lifespan="on",
        access_log=False,
        # What closing the connections did not end (see _Uvicorn) is cancelled.
        timeout_graceful_shutdown=2 * HTTP_SHUTDOWN_GRACE,
    )
    web = _Uvicorn(config)

    async def exit_when_set(event: anyio.Event) -> None:
        await event.wait()
        web.should_exit = True

    async with anyio.create_task_group() as tg:
        if stop is None:
            stop = anyio.Event()
            tg.start_soon(stop_on_signals, stop)
        tg.start_soon(exit_when_set, stop)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()
