"""Serving the gateway's MCP server: on stdio, or as streamable HTTP on a listening socket (`bind`),
until the client goes away or a stop signal (or the caller's `stop` event) ends it.

Shutdown never waits on a client: on stdio, see `toolscout.serve.stdio`; over HTTP, connections
still open `HTTP_SHUTDOWN_GRACE` seconds after shutdown began are closed, and what still runs
twice that long after is cancelled.

The HTTP server also answers `/healthz` and `/readyz` for load balancers and orchestrators (`Health`),
before authentication and session admission: a health check carries no credential and opens no
session.

* `GET /healthz`: 200 while the process serves (its event loop answers).
* `GET /readyz`: 200 when it can serve what needs its registry (the configuration is loaded, since it
  serves; the registry answers within `READY_WAIT` seconds), else 503 saying what is wrong, so that
  a balancer sends nothing to a replica whose Redis is unreachable.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.registry.base import Registry, SharedClientState
from toolscout.serve.api import API_PREFIX, TokenEvents, api_exception_handlers, api_mount
from toolscout.serve.auth import (
    PIPELINE_MCP_PATH,
    AnonymousPrincipals,
    NotOAuth,
    PrincipalAdmission,
    PrincipalResolver,
)
from toolscout.serve.discovery_api import DiscoveryApi
from toolscout.serve.http_guards import (
    LISTEN_BACKLOG,
    AllowList,
    ConnectionLimits,
    HostOriginGuard,
    fit_to_open_files,
    guarded_protocol,
)
from toolscout.serve.rounds import Forwarder, ReplicaDirectory
from toolscout.serve.server import GatewayServer, build_server
from toolscout.serve.sessions import BoundedSessionManager, PeerAdmission, SessionLimits
from toolscout.serve.stdio import serve_process_stdio
from toolscout.serve.telemetry import CountedPrincipals, MetricsAccess

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HTTP_SHUTDOWN_GRACE = 2
"""How long, once HTTP serving is asked to stop, responses in progress may take before they are cut."""
HTTP_PATH = "/mcp"


async def stop_on_signals(stop: anyio.Event, *, reload: Callable[[], None] | None = None) -> None:
    """Set `stop` on SIGINT, SIGTERM or SIGHUP, and keep receiving them until cancelled; with `reload`,
    SIGHUP calls it instead (`toolscout serve` reads its config file again).

    One that comes once `stop` is set is logged and nothing more: left to its default action it
    would kill the process while it stops its upstream servers, and their children would outlive it.
    """
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            name = signal.Signals(signum).name
            if signum == signal.SIGHUP and reload is not None and not stop.is_set():
                logger.info("received SIGHUP, reading the configuration again")
                reload()
            elif stop.is_set():
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
    """The uvicorn server without its own signal handling (the gateway owns shutdown, upstreams included), and
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
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def http_app(
    server: Server[Any],
    *,
    allow: AllowList,
    stateless: bool = False,
    limits: SessionLimits | None = None,
    principals: PrincipalResolver | None = None,
    registry: Registry | None = None,
    api_routes: Sequence[BaseRoute] = (),
    replica: str | None = None,
    metrics: MetricsAccess | None = None,
    config_file: Path | None = None,
    dashboard: ASGIApp | None = None,
) -> ASGIApp:
    """Return `server` as streamable HTTP at /mcp: the SDK's session manager with toolscout's admission
    (sessions.py), behind the Host/Origin check (http_guards.py), which replaces the SDK's own:
    that one runs only on the loopback names, after a session was already opened. `principals`
    decides who each request is from, and refuses those without a valid credential (auth.py;
    unset: everyone is anonymous). The discovery API is at /api/v1 always (discovery_api.py; a
    change of the search settings is written to `config_file`, when given); with a `registry`, the
    token routes and `api_routes` too (api.py). With `metrics`, `/metrics` (serve/telemetry.py).
    With a `dashboard` (dashboard/app.py), it answers /dashboard, with its own login in place of
    the bearer admission.

    In front of everything, the Host/Origin check; then the session admission; then the principal
    (authentication, rate limits): a bad Origin is refused before any credential is looked at."""
    manager = BoundedSessionManager(
        server,
        limits or SessionLimits(),
        stateless=stateless,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    mcp_app = StreamableHTTPASGIApp(manager)
    # The pipeline's agents reach the same endpoint at its path (serve/pipeline_api.py).
    routes: list[BaseRoute] = [Route(HTTP_PATH, endpoint=mcp_app), Route(PIPELINE_MCP_PATH, endpoint=mcp_app)]
    discovery, aliases = (
        ([], []) if not isinstance(server, GatewayServer) else DiscoveryApi(server, config_file=config_file).routes()
    )
    if registry is not None:
        events = principals if isinstance(principals, TokenEvents) else None
        routes.append(api_mount(registry, events, [*api_routes, *discovery]))
    else:  # (the command line's local socket has routes of its own: `config reload`)
        routes.append(Mount(API_PREFIX, routes=[*api_routes, *discovery]))
    routes += aliases
    resolver: PrincipalResolver = principals or AnonymousPrincipals()
    if metrics is not None:
        routes.append(metrics.route())
        resolver = CountedPrincipals(resolver, metrics.metrics, public_metrics=metrics.public)
    app = Starlette(routes=routes, lifespan=lambda _: manager.run(), exception_handlers=api_exception_handlers)
    inner: ASGIApp = app
    if replica is not None and isinstance(registry, ReplicaDirectory):  # another replica's retries go there
        inner = Forwarder(app, replica, registry)
    identified: ASGIApp = PeerAdmission(PrincipalAdmission(inner, resolver), manager)
    if dashboard is not None:  # its pages log people in themselves (a session cookie, or the bearer header)
        identified = DashboardDispatch(identified, dashboard)
    # OAuth discovery is answered before authentication: it says this gateway takes a bearer credential.
    return HostOriginGuard(Health(NotOAuth(identified), registry), allow)


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
    principals: PrincipalResolver | None = None,
    registry: Registry | None = None,
    api_routes: Sequence[BaseRoute] = (),
    replica: str | None = None,
    connections: ConnectionLimits | None = None,
    metrics: MetricsAccess | None = None,
    config_file: Path | None = None,
    dashboard: ASGIApp | None = None,
) -> None:
    """Serve streamable HTTP at /mcp on an already listening socket until `stop` is set (without
    `stop`: until a stop signal arrives, as `serve_stdio`). `log_level=None` leaves uvicorn's
    loggers as they are (they are global: a second server in the process must not reset them).
    `allow`: the Host and Origin headers answered (unset: `AllowList.for_bind(host)`); `principals`:
    who each request is from (unset: anonymous); `registry` and `api_routes`: the HTTP API (`http_app`);
    `connections`: how long a connection may take to send a request's headers, and how many may be
    open at once (http_guards.py); `metrics`: `/metrics`, and who may read it; `config_file`: where
    the discovery API writes a change of the search settings; `dashboard`: the web dashboard's app,
    served at /dashboard."""
    shared = registry if isinstance(registry, SharedClientState) else None
    server = build_server(gateway, mode, options, shared=shared, replica=replica)
    app = http_app(
        server,
        allow=allow or AllowList.for_bind(host),
        stateless=stateless,
        limits=limits,
        principals=principals,
        registry=registry,
        api_routes=api_routes,
        replica=replica,
        metrics=metrics,
        config_file=config_file,
        dashboard=dashboard,
    )
    # log_config=None: uvicorn's own dictConfig would close the gateway's log handlers (and with them
    # its stderr log, see `toolscout.serve.stdio`); its loggers go to the gateway's log instead.
    config = uvicorn.Config(
        app,
        log_level=log_level,
        log_config=None,
        lifespan="on",
        access_log=False,
        # h11 with the header deadline and the connection bound, whatever else is installed (see
        # http_guards.py); the gateway answers no WebSocket, so no upgrade may take a connection past them.
        http=guarded_protocol(fit_to_open_files(connections or ConnectionLimits())),
        ws="none",
        # uvicorn listens again with its own (2,048), and asyncio accepts that many at once: a burst would
        # take that many descriptors before the bound closes any.
        backlog=LISTEN_BACKLOG,
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


async def serve_app(app: ASGIApp, sock: socket.socket, *, stop: anyio.Event, log_level: str | None = "warning") -> None:
    """Serve a plain ASGI app (the dashboard alone: `toolscout dashboard`) on a listening socket until
    `stop` is set, with the same connection bounds and shutdown as `serve_http`."""
    config = uvicorn.Config(
        app,
        log_level=log_level,
        log_config=None,
        lifespan="off",
        access_log=False,
        http=guarded_protocol(fit_to_open_files(ConnectionLimits())),
        ws="none",
        backlog=LISTEN_BACKLOG,
        timeout_graceful_shutdown=2 * HTTP_SHUTDOWN_GRACE,
    )
    web = _Uvicorn(config)

    async def exit_when_set() -> None:
        await stop.wait()
        web.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(exit_when_set)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()


# The dashboard

DASHBOARD_PATH = "/dashboard"


class DashboardDispatch:
    """ASGI app sending the dashboard's paths to `dashboard`, everything else to `app`.

    `/dashboard/api/` stays with `app`: the HTTP API answers the smart-discovery path other gateways
    document there (`POST /dashboard/api/mcp/execute`), with the bearer admission of the API."""

    def __init__(self, app: ASGIApp, dashboard: ASGIApp) -> None:
        self.app = app
        self.dashboard = dashboard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        ours = path == DASHBOARD_PATH or path.startswith(DASHBOARD_PATH + "/")
        if ours and not path.startswith(DASHBOARD_PATH + "/api/"):
            await self.dashboard(scope, receive, send)
        else:
            await self.app(scope, receive, send)


# Health checks

READY_WAIT = 2.0
"""Seconds the registry has to answer a readiness check."""


class Health:
    """ASGI middleware answering the two health paths itself, passing everything else on."""

    def __init__(self, app: ASGIApp, registry: Registry | None) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path == "/healthz":
            await _answer(send, 200, {"status": "ok"})
        elif path == "/readyz":
            status, body = await self._readiness()
            await _answer(send, status, body)
        else:
            await self.app(scope, receive, send)

    async def _readiness(self) -> tuple[int, dict[str, Any]]:
        if self.registry is None:
            return 200, {"status": "ready"}
        try:
            with anyio.fail_after(READY_WAIT):
                await self.registry.version()
        except TimeoutError:
            return 503, {"status": "not ready", "registry": f"no answer within {READY_WAIT:g} s"}
        except Exception as exc:  # RegistryUnavailable (Redis), sqlite3.Error, OSError (the file)
            return 503, {"status": "not ready", "registry": getattr(exc, "message", None) or str(exc)}
        return 200, {"status": "ready", "registry": "ok"}


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    content = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
