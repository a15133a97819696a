"""The `dashboard` command: the web dashboard alone, on this machine, for a setup whose clients run the
gateway on stdio (so no HTTP face to open it on): it runs its own gateway from the same config file,
whose rule changes the clients' gateways take up as any edit of the file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolscout import __version__
from toolscout.cli.common import EXIT_INVALID, ConfigOption, Output, load, run
from toolscout.cli.serve import LogLevel, setup_logging, smart_box
from toolscout.config import GatewayConfig
from toolscout.errors import ToolscoutError

HOST = "127.0.0.1"


def register(app: typer.Typer) -> None:
    app.command()(dashboard)


def dashboard(
    config: ConfigOption = None,
    port: Annotated[int, typer.Option(help="Port to listen on (on 127.0.0.1); 0 picks a free one.")] = 8766,
    log_level: Annotated[LogLevel, typer.Option(help="Log level (logs go to stderr).")] = LogLevel.warning,
) -> None:
    """Open the web dashboard for this config: servers, tools and their rules, tokens (on this machine only)."""
    from toolscout.serve.http import bind

    setup_logging(log_level, background=True)
    output = Output()
    gateway_config, source = load(config, output)
    try:
        sock = bind(HOST, port)
    except OSError as exc:
        output.fail(
            ToolscoutError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}. Pick another --port."), EXIT_INVALID
        )
    run(_dashboard, gateway_config, sock, source.path if source is not None else None)


async def _dashboard(config: GatewayConfig, sock: object, path: Path | None) -> None:
    import functools
    import socket

    import anyio
    from starlette.responses import PlainTextResponse

    from toolscout.gateway.core import Gateway
    from toolscout.gateway.registrations import Registrations
    from toolscout.registry.requests import open_registry
    from toolscout.serve.auth import AnonymousPrincipals, BearerPrincipals, PrincipalResolver
    from toolscout.serve.dashboard.app import dashboard_app
    from toolscout.serve.dashboard.context import Dashboard
    from toolscout.serve.http import DashboardDispatch, serve_app, stop_on_signals
    from toolscout.serve.http_guards import AllowList, HostOriginGuard
    from toolscout.serve.reload import ConfigReloader, reloading

    assert isinstance(sock, socket.socket)
    async with open_registry(config) as registry:
        gateway = Gateway.from_config(config, embed_in_background=True)
        reloader = ConfigReloader(gateway, path, config) if path is not None else None
        limits = config.registry
        registrations = Registrations(
            registry, gateway, per_namespace=limits.max_registrations_per_namespace, total=limits.max_registrations
        )
        # Keys configured: the same login as on the HTTP face; none: open, as the loopback /mcp is.
        principals: PrincipalResolver = (
            BearerPrincipals(config.auth, registry) if config.auth.configured else AnonymousPrincipals()
        )
        app = dashboard_app(
            Dashboard(
                gateway,
                principals,
                registry,
                registrations,
                config_path=path,
                reloader=reloader,
                smart=smart_box(config, gateway),
                mode=config.mode,
            )
        )
        stop = anyio.Event()
        async with anyio.create_task_group() as signals:
            signals.start_soon(functools.partial(stop_on_signals, stop, reload=reloader.request if reloader else None))
            async with gateway, registrations.running(), reloading(reloader):
                port = sock.getsockname()[1]
                typer.echo(f"toolscout {__version__}: dashboard at http://{HOST}:{port}/dashboard", err=True)
                only = DashboardDispatch(PlainTextResponse("Not found: this serves the dashboard only.", 404), app)
                await serve_app(HostOriginGuard(only, AllowList.for_bind(HOST)), sock, stop=stop)
                stop.set()
            signals.cancel_scope.cancel()
