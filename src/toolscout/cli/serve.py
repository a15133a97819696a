"""The commands that run the gateway: `toolscout serve`, `toolscout demo` and `toolscout version`
(also `toolscout --version`).

`serve` loads the config, binds its port (HTTP) and serves until stdin closes or a signal comes,
while also answering this machine's command line on a local socket. When replicas share one
registry (Redis), it says which replica it is and where the others reach it
(`registry.advertiseUrl`, else its own address), and drops from its cache the tokens revoked
through another replica.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import secrets
import socket
import sqlite3
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import ExitStack, asynccontextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from toolscout import __version__
from toolscout.cli import startup_over
from toolscout.cli.common import EXIT_CONFIG, EXIT_INVALID, ConfigOption, Output, load, run
from toolscout.config import ConfigSource, GatewayConfig
from toolscout.config.models import ModeName
from toolscout.errors import ConfigurationError, RegistryUnavailable, ToolscoutError
from toolscout.masking import install_log_masking
from toolscout.render.text import counted

if TYPE_CHECKING:
    from toolscout.gateway.core import Gateway
    from toolscout.modes.smart import SmartDiscovery
    from toolscout.registry.base import Registry
    from toolscout.serve.auth import BearerPrincipals
    from toolscout.serve.reload import ConfigReloader


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class LogFormat(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.callback()(options)
    app.command()(serve)
    app.command()(demo)
    app.command()(version)


def setup_logging(level: LogLevel, *, background: bool = False, log_format: LogFormat = LogFormat.text) -> None:
    """Everything goes to stderr: on stdio, stdout belongs to the MCP stream. Secrets are masked
    in every record (`toolscout.masking.install_log_masking`). `log_format=json`: one JSON object
    a line (`toolscout.telemetry.logs`).

    `background`: written by a thread of its own, dropping lines while stderr is not read, so that a
    client that never reads it cannot stall the gateway (see `toolscout.serve.stdio`).
    """
    install_log_masking()
    handler: logging.Handler
    if background:
        from toolscout.serve.stdio import BackgroundStderrHandler

        handler = BackgroundStderrHandler()
    else:
        handler = logging.StreamHandler(sys.stderr)
    if log_format is LogFormat.json:
        from toolscout.telemetry.logs import JsonFormatter

        handler.setFormatter(JsonFormatter())
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
    log_format: Annotated[
        LogFormat, typer.Option(help="text for people, json for a log collector (one object a line).")
    ] = LogFormat.text,
    mode: Annotated[
        ModeName | None,
        typer.Option(
            help="What the agent sees: discovery (5 meta-tools), compact (inspect + exec), passthrough "
            "(every tool), dynamic (meta-tools + the tools the agent loads), smart (one tool that picks "
            "and fills the tool) or code (search + run_code, a program that calls the tools)."
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="(http) Also answer requests with this Host header: name, name:port, or * for any; "
            "repeat for more. Added to http.allowedHosts."
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="(http) Also answer browser pages of this Origin: scheme://host[:port] (:* for any port), "
            "or * for any; repeat for more. Added to http.allowedOrigins."
        ),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="(http) Serve on a non-loopback address without any key configured: anyone who reaches "
            "the port can run every tool. Without it, that refuses to start.",
        ),
    ] = False,
    require_config: Annotated[
        bool,
        typer.Option(
            "--require-config",
            help="Exit with a message (code 2) when no configuration file is found, instead of serving "
            "the built-in empty configuration.",
        ),
    ] = False,
) -> None:
    """Run the gateway as an MCP server."""
    setup_logging(log_level, background=True, log_format=log_format)
    output = Output()
    default_path = None if require_config or demo or config is not None else _default_config_path()
    if default_path is not None:
        gateway_config, source = GatewayConfig(), ConfigSource(default_path, "built-in default")
        typer.echo(
            f"toolscout: no configuration file found; serving none until one is written to {default_path} "
            "(read as soon as it is saved). See `toolscout config sources` for every place looked in, "
            "or pass --config FILE.",
            err=True,
        )
    else:
        gateway_config, source = load(config, output, demo=demo)
    loaded = gateway_config
    if allow_host or allow_origin:
        gateway_config = _with_allowed(gateway_config, allow_host or [], allow_origin or [], output)
    # Where this machine's command line asks this gateway instead of starting the servers itself
    # (local_socket.py): worked out from the config as loaded, whatever --mode shows the clients.
    answering: tuple[Path, Path] | None = None
    if source is not None and default_path is None:
        from toolscout.serve.local_socket import socket_path

        cli_path = socket_path(source.path, gateway_config)
        answering = (cli_path, source.path) if cli_path is not None else None
    if mode is not None:
        gateway_config = gateway_config.model_copy(update={"mode": mode})
    sock: socket.socket | None = None
    if transport is Transport.http:
        from toolscout.serve.http import bind

        try:
            sock = bind(host, port)
        except OSError as exc:
            output.fail(
                ToolscoutError(f"cannot listen on {host}:{port}: {exc.strerror or exc}. Pick another --port."),
                EXIT_INVALID,
            )
    # The file as loaded, before any option changed it: what its next version is compared with (reload.py).
    watched = (source.path, loaded) if source is not None else None
    if watched is not None and loaded.config_reload == "restart":
        typer.echo("toolscout: configReload is restart: changes to the configuration take a restart", err=True)
    run(_serve, gateway_config, sock, host, stateless, log_level, answering, watched, insecure_no_auth)


def _default_config_path() -> Path | None:
    """Where the configuration goes when none is found anywhere (None: one was found, or named)."""
    from toolscout.config.locations import CONFIG_ENV_VAR, candidate_paths, user_config_dir

    if os.environ.get(CONFIG_ENV_VAR) or any(c.path.is_file() for c in candidate_paths()):
        return None
    return user_config_dir() / "config.json"


def _with_allowed(config: GatewayConfig, hosts: list[str], origins: list[str], output: Output) -> GatewayConfig:
    """Return `config` with the command line's --allow-host and --allow-origin added (exit 1 on a malformed one)."""
    from toolscout.config.http import check_host_entry, check_origin_entry

    try:
        for host in hosts:
            check_host_entry(host)
        for origin in origins:
            check_origin_entry(origin)
    except ValueError as exc:
        output.fail(ToolscoutError(f"{exc}."), EXIT_INVALID)
    http = config.http.model_copy(
        update={
            "allowed_hosts": [*config.http.allowed_hosts, *hosts],
            "allowed_origins": [*config.http.allowed_origins, *origins],
        }
    )
    return config.model_copy(update={"http": http})


async def _serve(
    config: GatewayConfig,
    sock: socket.socket | None,
    host: str,
    stateless: bool,
    level: LogLevel,
    answering: tuple[Path, Path] | None,
    watched: tuple[Path, GatewayConfig] | None,
    insecure_no_auth: bool = False,
) -> None:
    from toolscout.registry.requests import open_registry, registry_location
    from toolscout.serve.auth import BearerPrincipals
    from toolscout.telemetry.tracing import check_traces

    try:  # here, not where traces start: a refusal inside the task groups would come with their traceback
        check_traces(config.telemetry.traces)
    except ConfigurationError as exc:
        Output().fail(exc, EXIT_CONFIG)
    # Issued tokens, and servers and tools registered at run time (the API, or the CLI's local registry):
    # the embedded file, or Redis shared by the replicas (registry.backend).
    async with open_registry(config) as registry:
        principals: BearerPrincipals | None = None
        if sock is not None:
            principals = BearerPrincipals(config.auth, registry)
            try:
                authenticating = await principals.check_tokens()
            except RegistryUnavailable as exc:
                # A replica may start before its Redis: it serves what needs no registry, /readyz says
                # 503 until Redis answers, and issued tokens count from then on (checked every second).
                typer.echo(f"toolscout: WARNING: {exc.message}", err=True)
                authenticating = principals.on
            except (sqlite3.Error, OSError) as exc:
                Output().fail(
                    ConfigurationError(
                        f"cannot open the registry of issued tokens ({registry_location(config)}): {exc}. "
                        "Set registry.path to a file this user may write."
                    ),
                    EXIT_CONFIG,
                )
            _check_exposure(config, sock, authenticating, insecure_no_auth)
        await _serve_with(config, registry, principals, sock, host, stateless, level, answering, watched)


async def _serve_with(
    config: GatewayConfig,
    registry: Registry,
    principals: BearerPrincipals | None,
    sock: socket.socket | None,
    host: str,
    stateless: bool,
    level: LogLevel,
    answering: tuple[Path, Path] | None,
    watched: tuple[Path, GatewayConfig] | None,
) -> None:
    from toolscout.gateway.core import Gateway
    from toolscout.gateway.registrations import Registrations
    from toolscout.modes.base import SurfaceOptions
    from toolscout.serve.api import registry_routes
    from toolscout.serve.http import serve_http, serve_stdio, stop_on_signals
    from toolscout.serve.http_guards import AllowList, ConnectionLimits
    from toolscout.serve.pipeline_api import pipeline_routes
    from toolscout.serve.reload import ConfigReloader, reloading
    from toolscout.serve.sessions import SessionLimits
    from toolscout.serve.telemetry import MetricsAccess

    # A serve keeps running: a catalog of many new tools is searchable by its words while it embeds.
    gateway = Gateway.from_config(config, embed_in_background=True)
    metrics = (
        MetricsAccess(gateway.metrics, public=config.telemetry.metrics.public) if gateway.metrics.enabled else None
    )
    live = watched is not None and watched[1].config_reload == "live"
    reloader = ConfigReloader(gateway, *watched) if watched is not None and live else None
    # The file itself, for the pages that edit it: none while the built-in default is served.
    config_file = watched[0] if watched is not None and watched[0].is_file() else None
    shared = config.registry.backend == "redis" and config.catalog_cache.enabled
    per_namespace, total = config.registry.max_registrations_per_namespace, config.registry.max_registrations
    registrations = Registrations(registry, gateway, shared_catalog=shared, per_namespace=per_namespace, total=total)
    if principals is not None:
        registrations.listen(forget_revoked(principals))
    stop = anyio.Event()
    async with anyio.create_task_group() as signals:
        # Stop signals are handled from before the first upstream starts until the last has stopped:
        # one that came while they are being stopped must not kill the gateway and leave them running.
        signals.start_soon(
            functools.partial(
                stop_on_signals,
                stop,
                reload=reloader.request if reloader is not None else (restart_notice if watched is not None else None),
            )
        )
        async with (
            tracing(config),
            gateway,
            registrations.running(),
            _answering_the_command_line(gateway, config, answering, stop, reloader),
            reloading(reloader),
        ):
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
                from toolscout.serve.auth import AnonymousPrincipals
                from toolscout.serve.dashboard.app import dashboard_app
                from toolscout.serve.dashboard.context import Dashboard

                allow = AllowList.for_bind(host, config.http.allowed_hosts, config.http.allowed_origins)
                # Before the line that says it serves: whoever waits for that one has this one too.
                typer.echo(f"toolscout: answering {allow.describe()}", err=True)
                bound_host, bound_port = sock.getsockname()[:2]
                shown = f"[{bound_host}]" if ":" in bound_host else bound_host
                typer.echo(
                    f"toolscout {__version__}: serving streamable HTTP at http://{shown}:{bound_port}/mcp "
                    f"({'stateless' if stateless else 'stateful'}, {count} upstream servers, {config.mode} mode)",
                    err=True,
                )
                typer.echo(f"toolscout: dashboard at http://{shown}:{bound_port}/dashboard", err=True)
                replica, where = replica_of(config, registry, shown, bound_port)
                async with announced(registry, replica, where):
                    await serve_http(
                        gateway,
                        sock,
                        host=host,
                        stateless=stateless,
                        log_level=level.value,
                        mode=config.mode,
                        options=SurfaceOptions.from_config(config),
                        stop=stop,
                        allow=allow,
                        limits=SessionLimits.of(config.http),
                        principals=principals,
                        registry=registry,
                        api_routes=[*registry_routes(registrations), *pipeline_routes(registrations, principals)],
                        replica=replica,
                        connections=ConnectionLimits.of(config.http),
                        metrics=metrics,
                        config_file=config_file,
                        dashboard=dashboard_app(
                            Dashboard(
                                gateway,
                                principals or AnonymousPrincipals(),
                                registry,
                                registrations,
                                config_path=config_file,
                                reloader=reloader,
                                smart=smart_box(config, gateway),
                                mode=config.mode,
                            )
                        ),
                    )
            stop.set()  # serving is over (stdin closed, or a signal): a signal from now on is only logged
        signals.cancel_scope.cancel()


def restart_notice() -> None:
    """SIGHUP under `configReload: restart`: nothing is read again, and the log says so."""
    logging.getLogger(__name__).warning(
        "received SIGHUP; configReload is restart, so the configuration is not read again: restart toolscout serve"
    )


def smart_box(config: GatewayConfig, gateway: Gateway) -> SmartDiscovery | None:
    """Smart mode's engine for the dashboard's request box, when smart mode is configured."""
    from toolscout.modes.base import SurfaceOptions

    if config.mode != "smart" and not config.smart_tool:
        return None
    return SurfaceOptions.from_config(config).smart_discovery(gateway)


def _check_exposure(config: GatewayConfig, sock: socket.socket, authenticating: bool, insecure: bool) -> None:
    """Refuse (exit 2) to serve HTTP beyond this machine without authentication, unless told to; say
    on stderr whether requests need a credential."""
    from toolscout.config.http import parse_ip

    address = parse_ip(str(sock.getsockname()[0]))
    loopback = address is not None and address.is_loopback
    if authenticating:
        keys = config.auth
        typer.echo(
            f"toolscout: every HTTP request needs a credential ({counted(len(keys.admin_keys), 'admin key')}, "
            f"{counted(len(keys.keys), 'client key')}, and the tokens issued into the registry)",
            err=True,
        )
    elif loopback:
        typer.echo("toolscout: no keys configured: requests from this machine need no credential", err=True)
    elif insecure:
        typer.echo(
            "toolscout: WARNING: serving beyond this machine without authentication (--insecure-no-auth): "
            "anyone who reaches the port can run every tool",
            err=True,
        )
    else:
        Output().fail(
            ConfigurationError(
                f"refusing to serve HTTP on {sock.getsockname()[0]} without authentication: anyone who reaches "
                "the port could run every tool of every server. Configure auth.adminKeys or auth.keys "
                "(values from ${ENV} references), listen on 127.0.0.1, or pass --insecure-no-auth if "
                "something in front of the gateway authenticates its clients."
            ),
            EXIT_CONFIG,
        )


@asynccontextmanager
async def tracing(config: GatewayConfig) -> AsyncGenerator[None]:
    """Export traces while serving, when asked to (`toolscout.telemetry.tracing`); a missing `otel`
    extra is a configuration error (exit 2), said before anything starts."""
    from toolscout.telemetry.tracing import exporting_traces

    with ExitStack() as stack:
        try:
            stack.enter_context(exporting_traces(config.telemetry.traces))
        except ConfigurationError as exc:
            Output().fail(exc, EXIT_CONFIG)
        yield


@asynccontextmanager
async def _answering_the_command_line(
    gateway: Gateway,
    config: GatewayConfig,
    answering: tuple[Path, Path] | None,
    stop: anyio.Event,
    reloader: ConfigReloader | None = None,
) -> AsyncGenerator[None]:
    """While serving, also serve the discovery meta-tools on the command line's local socket (see
    local_socket.py), when one could be made: stateless streamable HTTP, until `stop` is set; and,
    with a `reloader`, `toolscout config reload`'s route."""
    from toolscout.modes.base import SurfaceOptions
    from toolscout.serve.http import serve_http
    from toolscout.serve.local_socket import SOCKET_HOST, listen, release
    from toolscout.serve.reload import reload_route

    listening = listen(*answering) if answering is not None else None
    if answering is None or listening is None:
        yield
        return
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                functools.partial(
                    serve_http,
                    gateway,
                    listening,
                    host=SOCKET_HOST,
                    stateless=True,
                    # uvicorn's loggers are the process's: left as set up for `serve` (and its HTTP server).
                    log_level=None,
                    # The command line reads execute_tool's native result (`executeResult` is for agents).
                    options=dataclasses.replace(SurfaceOptions.from_config(config), execute_result="native"),
                    stop=stop,
                    api_routes=[reload_route(reloader)] if reloader is not None else (),
                )
            )
            yield
            stop.set()  # serving is over: the socket's server ends too
    finally:
        release(answering[0], listening)


def demo() -> None:
    """See toolscout work: a real MCP client drives the gateway in front of the bundled demo servers."""
    from toolscout.demo.run import run_demo

    setup_logging(LogLevel.warning)
    run(run_demo)


def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(__version__)
        raise typer.Exit


def options(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Take the options of `toolscout` itself: `--version`, as most command-line tools answer it
    (the same as `toolscout version`, which a newcomer's first try after installing may not be)."""


def replica_of(config: GatewayConfig, registry: Registry, host: str, port: int) -> tuple[str | None, str | None]:
    """This replica's id and where the others reach it, when replicas share a registry (Redis) that can
    say so; (None, None) otherwise. A wildcard bind without `registry.advertiseUrl`: an id (retries of
    its input-required rounds cannot be forwarded to it, and are refused elsewhere), said once."""
    from toolscout.serve.rounds import ReplicaDirectory

    if config.registry.backend != "redis" or not isinstance(registry, ReplicaDirectory):
        return None, None
    replica = secrets.token_hex(4)
    if config.registry.advertise_url:
        return replica, config.registry.advertise_url
    if host in ("0.0.0.0", "[::]"):
        typer.echo(
            "toolscout: WARNING: set registry.advertiseUrl to where the other replicas reach this one: "
            "without it, a 2026-07-28 retry landing elsewhere cannot be passed here",
            err=True,
        )
        return replica, None
    return replica, f"http://{host}:{port}"


@asynccontextmanager
async def announced(registry: Registry, replica: str | None, where: str | None) -> AsyncGenerator[None]:
    from toolscout.serve.rounds import ReplicaDirectory, announcing

    if replica is None or where is None or not isinstance(registry, ReplicaDirectory):
        yield
        return
    async with announcing(registry, replica, where):
        yield


def forget_revoked(principals: BearerPrincipals) -> Callable[[str], None]:
    """A token revoked through another replica (the registry's change feed): refused here at once too."""

    def changed(what: str) -> None:
        if what.startswith("tokens:"):
            principals.token_revoked(what.removeprefix("tokens:"))

    return changed
