"""The gateway's MCP face: the tools of the configured mode (surfaces.py), over stdio or streamable HTTP.

This is the edge where `ToolscoutError`s become `isError` results with
`structuredContent: {"success": false, "error": {...}}`.
"""

from __future__ import annotations

import hashlib
import logging
import signal
import socket
import warnings
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import InitializationOptions, NotificationOptions, Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from toolscout import __version__, render
from toolscout.config.models import ModeName
from toolscout.errors import ToolscoutError
from toolscout.gateway import Gateway
from toolscout.relay import relaying
from toolscout.sessions import ClientSessions, ConnectionScope, Context, SessionRelay
from toolscout.stdio import serve_process_stdio
from toolscout.surfaces import Surface, SurfaceOptions, make_surface
from toolscout.tokens import tool_definitions_json

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
CHANGE_QUIET_SECONDS = 0.2
"""How long catalog changes are gathered before clients are told about them."""


def error_result(error: ToolscoutError, **context: str) -> types.CallToolResult:
    """A failed meta-tool call as the agent sees it."""
    payload = {**{k: v for k, v in context.items() if k not in error.details}, **error.to_dict()}
    return types.CallToolResult(
        content=[types.TextContent(text=render.error_text(payload))],
        structured_content={"success": False, "error": payload},
        is_error=True,
    )


class GatewayServer(Server[ConnectionScope]):
    """The SDK's low-level server, advertising `tools.listChanged` when the surface's list can change.

    The SDK derives handshake-era capabilities from `create_initialization_options`, which the
    streamable HTTP transport calls with no arguments; this is where the flag gets in for every
    transport. (At 2026-07-28 the flag follows from serving `subscriptions/listen`.)
    """

    def __init__(self, *args: Any, tools_changed: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools_changed = tools_changed

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=self.tools_changed)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def build_server(
    gateway: Gateway,
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
    *,
    sessions: ClientSessions | None = None,
) -> GatewayServer:
    """The low-level MCP server exposing `gateway` through the surface of `mode`."""
    surface: Surface = make_surface(mode, gateway, options)
    clients = sessions or ClientSessions()
    # The five meta-tools never change; every other surface follows the catalog or the client.
    tools_change = mode != "discovery"

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncGenerator[ConnectionScope]:
        # Once per connection on stdio and in process, once for all on HTTP (sessions.py).
        scope = ConnectionScope()
        async with anyio.create_task_group() as tg:
            if tools_change:
                tg.start_soon(watch_catalog, gateway, surface, clients, scope)
            yield scope
            tg.cancel_scope.cancel()

    async def on_list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        state = clients.state(ctx)
        tools = await surface.tools(state)
        state.listed = state.announced = fingerprint(tools)
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        context = {
            key: v
            for key, names in (("server", ("server", "server_name")), ("tool", ("tool", "tool_name")))
            for name in names
            if isinstance(v := arguments.get(name), str)
        }
        client = clients.state(ctx)
        try:
            with relaying(SessionRelay(ctx, client, clients.describe(ctx))):
                outcome = await surface.call(client, params.name, arguments)
        except ToolscoutError as exc:
            return error_result(exc, **context)
        except Exception as exc:
            # A bug of ours must not take the session down; the agent gets a clear failure instead.
            logger.exception("%s failed unexpectedly", params.name)
            return error_result(
                ToolscoutError(f"Internal error in {params.name}: {type(exc).__name__}: {exc}"), **context
            )
        finally:
            await clients.announce(ctx, client)
        if outcome is None:
            offered = ", ".join(t.name for t in await surface.tools(client))
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}; this gateway offers {offered}.",
            )
        return outcome

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
            on_subscriptions_listen=clients.listen if tools_change else None,
            tools_changed=tools_change,
        )


def fingerprint(tools: Sequence[types.Tool]) -> str:
    """What a tool list says, as a short digest: equal lists, equal digests."""
    return hashlib.sha256(tool_definitions_json(tools).encode()).hexdigest()


async def watch_catalog(gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose tool list the catalog changed, once per change, until cancelled.

    Only clients that have listed tools are told, and only when what they would now get differs
    from what they got (or were last told about): a server reconnecting with the same tools
    tells no one. Changes that come together (start-up, several servers at once) are told once.
    """
    seen = gateway.catalog.version
    while True:
        if gateway.catalog.version == seen:
            await gateway.catalog.wait_changed()
        await anyio.sleep(CHANGE_QUIET_SECONDS)
        seen = gateway.catalog.version
        for state in [scope.client, *clients.http_states()]:
            if state.listed is None:
                continue
            current = fingerprint(await surface.tools(state))
            if current in (state.listed, state.announced):
                continue
            state.announced = current
            try:
                await clients.tell_tools_changed(state)
            except Exception as exc:  # a client gone away must not stop the others being told
                logger.debug("could not tell a client its tools changed: %s", exc)


async def _stop_on_signal(stop: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            logger.info("received %s, shutting down", signal.Signals(signum).name)
            stop()
            return


async def serve_stdio(gateway: Gateway, mode: ModeName = "discovery", options: SurfaceOptions | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin or a stop signal arrives."""
    server = build_server(gateway, mode, options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope.cancel)
        async with serve_process_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the gateway owns shutdown, upstreams included."""

    @contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


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


async def serve_http(
    gateway: Gateway,
    sock: socket.socket,
    *,
    host: str,
    stateless: bool = False,
    log_level: str = "warning",
    mode: ModeName = "discovery",
    options: SurfaceOptions | None = None,
) -> None:
    """Serve streamable HTTP at /mcp on an already listening socket until a stop signal arrives."""
    server = build_server(gateway, mode, options)
    app = server.streamable_http_app(stateless_http=stateless, host=host)
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False)
    web = _Uvicorn(config)

    def stop() -> None:
        web.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, stop)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()
