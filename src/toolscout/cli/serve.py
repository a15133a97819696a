"""`toolscout serve`, `toolscout demo` and `toolscout version`."""

from __future__ import annotations

import logging
import socket
import sys
from enum import StrEnum
from typing import Annotated

import anyio
import typer

from toolscout import __version__
from toolscout.cli.common import EXIT_INVALID, ConfigOption, Output, load, run
from toolscout.cli.startup import startup_over
from toolscout.config import GatewayConfig
from toolscout.config.models import ModeName
from toolscout.errors import ToolscoutError
from toolscout.render import counted


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(demo)
    app.command()(version)


def setup_logging(level: LogLevel, *, background: bool = False) -> None:
    """Everything goes to stderr: on stdio, stdout belongs to the MCP stream.

    `background`: written by a thread of its own, dropping lines while stderr is not read, so that a
    client that never reads it cannot stall the gateway (see `toolscout.stderr_log`).
    """
    handler: logging.Handler
    if background:
        from toolscout.stderr_log import BackgroundStderrHandler

        handler = BackgroundStderrHandler()
    else:
        handler = logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        handlers=[handler],
        level=level.value.upper(),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        force=True,
    )
    if level is not LogLevel.debug:
        # The SDK and HTTP client narrate every request at INFO; keep the log about our servers.
        for noisy in ("mcp", "httpx", "httpx2", "httpcore", "httpcore2", "uvicorn.error"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def serve(
    config: ConfigOption = None,
    transport: Annotated[Transport, typer.Option(help="stdio for desktop clients, http for streamable HTTP.")] = (
        Transport.stdio
    ),
    host: Annotated[str, typer.Option(help="Interface to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (http); 0 picks a free one.")] = 8765,
    stateless: Annotated[bool, typer.Option(help="Serve stateless streamable HTTP (no sessions).")] = False,
    demo: Annotated[bool, typer.Option(help="Front the bundled demo servers instead of a config file.")] = False,
    log_level: Annotated[LogLevel, typer.Option(help="Log level (logs go to stderr).")] = LogLevel.info,
    mode: Annotated[
        ModeName | None,
        typer.Option(
            help="What the agent sees: discovery (5 meta-tools), compact (inspect + exec), passthrough "
            "(every tool) or dynamic (meta-tools + the tools the agent loads)."
        ),
    ] = None,
) -> None:
    """Run the gateway as an MCP server."""
    setup_logging(log_level, background=True)
    output = Output()
    gateway_config, _ = load(config, output, demo=demo)
    if mode is not None:
        gateway_config = gateway_config.model_copy(update={"mode": mode})
    sock: socket.socket | None = None
    if transport is Transport.http:
        from toolscout.server import bind

        try:
            sock = bind(host, port)
        except OSError as exc:
            output.fail(
                ToolscoutError(f"cannot listen on {host}:{port}: {exc.strerror or exc}. Pick another --port."),
                EXIT_INVALID,
            )
    run(_serve, gateway_config, sock, host, stateless, log_level)


async def _serve(
    config: GatewayConfig, sock: socket.socket | None, host: str, stateless: bool, level: LogLevel
) -> None:
    from toolscout.gateway import Gateway
    from toolscout.server import serve_http, serve_stdio, stop_on_signals
    from toolscout.surfaces import SurfaceOptions

    gateway = Gateway.from_config(config)
    stop = anyio.Event()
    async with anyio.create_task_group() as signals:
        # Stop signals are handled from before the first upstream starts until the last has stopped:
        # one that came while they are being stopped must not kill the gateway and leave them running.
        signals.start_soon(stop_on_signals, stop)
        async with gateway:
            startup_over()  # everything is imported and the gateway is built: what follows is serving
            count = len(config.mcp_servers)
            if sock is None:
                typer.echo(
                    f"toolscout {__version__}: serving MCP on stdio "
                    f"({counted(count, 'upstream server')}, {config.mode} mode)",
                    err=True,
                )
                await serve_stdio(gateway, config.mode, SurfaceOptions.from_config(config), stop=stop)
            else:
                bound_host, bound_port = sock.getsockname()[:2]
                shown = f"[{bound_host}]" if ":" in bound_host else bound_host
                typer.echo(
                    f"toolscout {__version__}: serving streamable HTTP at http://{shown}:{bound_port}/mcp "
                    f"({'stateless' if stateless else 'stateful'}, {count} upstream servers, {config.mode} mode)",
                    err=True,
                )
                await serve_http(
                    gateway,
                    sock,
                    host=host,
                    stateless=stateless,
                    log_level=level.value,
                    mode=config.mode,
                    options=SurfaceOptions.from_config(config),
                    stop=stop,
                )
            stop.set()  # serving is over (stdin closed, or a signal): a signal from now on is only logged
        signals.cancel_scope.cancel()


def demo() -> None:
    """See toolscout work: a real MCP client drives the gateway in front of the bundled demo servers."""
    from toolscout.demo.run import run_demo

    setup_logging(LogLevel.warning)
    run(run_demo)


def version() -> None:
    """Print the version."""
    typer.echo(__version__)
