"""The parts every command shares: exit codes, output for people or --json, loading the config, and
connecting to the servers with a live line of progress per server."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, NoReturn

import anyio
import typer

from toolscout.config import ConfigSource, GatewayConfig, find_config
from toolscout.config.loader import check_config_file
from toolscout.config.models import ExitCodes
from toolscout.config.sources import load_with_sources
from toolscout.errors import (
    ArgumentValidationError,
    ConfigurationError,
    InvalidArguments,
    Phrasing,
    ServerNotFound,
    ToolDisabled,
    ToolNotFound,
    ToolQuarantined,
    ToolscoutError,
    Unavailable,
)

if TYPE_CHECKING:
    # rich is imported where it is used: `serve` writes through it only to report a failed start.
    from rich.console import Console
    from rich.table import Table

    from toolscout.catalog import CatalogTool
    from toolscout.gateway.core import Gateway
    from toolscout.gateway.store import CatalogStore
    from toolscout.search import SearchHit

# The exit codes scripts can rely on: 1 invalid arguments, 2 configuration error, server or
# tool not found, or (search) nothing found; 3 the tool failed; 4 the tool is disabled by toolRules
# (or quarantined: its definition changed since it was pinned); 130 stopped by Ctrl-C (with --json,
# an INTERRUPTED error on stdout). `cli.exitCodes: spec` keeps each command to the codes the
# discovery service's spec lists for it (`exit_code_for`, `Output.exit_codes`).
EXIT_OK = 0
EXIT_INVALID = 1
EXIT_CONFIG = 2
EXIT_NOT_FOUND = 2
EXIT_NO_RESULTS = 2
EXIT_FAILED = 3
EXIT_DISABLED = 4
EXIT_INTERRUPTED = 130
"""Ctrl-C, as shells report a process ended by SIGINT (128 + 2)."""

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Configuration file (JSON, YAML or TOML). Default: $TOOLSCOUT_CONFIG, "
        "./toolscout.{json,yaml,yml,toml}, then the user config directory.",
    ),
]
CLI_STEPS: Phrasing = {
    "find_tool": "Run `toolscout tools {server}` to see its tools, or `toolscout search` with what you want to do.",
    "list_servers": "Run `toolscout list` to see the configured servers.",
    "tool_details": "Run `toolscout inspect {server}/{tool}` for its parameters, then try again.",
}
"""What an error tells a person at the terminal to do next (the agent's version names meta-tools)."""

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
ToolNameArgument = Annotated[
    str, typer.Argument(show_default=False, help="The tool as SERVER/TOOL (or the server, then the tool).")
]
ToolOfServerArgument = Annotated[
    str | None, typer.Argument(show_default=False, help="The tool, when the first argument is only its server.")
]


def named_tool(first: str, second: str | None, config: GatewayConfig) -> tuple[str, str]:
    """Return the `(server, tool)` a command's arguments name: `SERVER/TOOL` (or `SERVER:TOOL`, or the
    native `SERVER__TOOL`) as one argument, or the server and the tool as two."""
    from toolscout.naming import LABEL_SEPARATORS, split_tool_label
    from toolscout.suggestions import server_not_found

    if second is not None:
        return first, second
    found = split_tool_label(first, config.mcp_servers)
    if found is not None:
        return found
    if first in config.mcp_servers:
        raise InvalidArguments(
            f"Name one of the tools of {first!r} too: `{first}/TOOL` (`toolscout tools {first}` lists them)."
        )
    for separator in LABEL_SEPARATORS:
        if separator in first:
            raise server_not_found(first.partition(separator)[0], list(config.mcp_servers))
    raise InvalidArguments(
        f"Name the tool with its server, as SERVER/TOOL (for example units/convert_units): {first!r} names no "
        "server. `toolscout search` finds tools by what they do."
    )


def iso_utc(timestamp: float) -> str:
    """Return a moment as `cachedAt`, `failedAt`, `savedAt` and `pinnedAt` give it: ISO 8601, UTC, to the second."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def exit_code_for(error: ToolscoutError, scheme: ExitCodes = "toolscout", *, executing: bool = False) -> int:
    """The exit code a failed command ends with. With the spec's codes (`scheme="spec"`) a server
    that cannot be reached is one not found (2), except for a tool `executing`, whose call failed (3)."""
    if isinstance(error, ConfigurationError):
        return EXIT_CONFIG
    if isinstance(error, ServerNotFound | ToolNotFound):
        return EXIT_NOT_FOUND
    if scheme == "spec" and not executing and isinstance(error, Unavailable):
        return EXIT_NOT_FOUND
    if isinstance(error, ToolDisabled | ToolQuarantined):
        return EXIT_DISABLED
    if isinstance(error, ArgumentValidationError | InvalidArguments):
        return EXIT_INVALID
    return EXIT_FAILED


class Output:
    """Where a command writes: people get rich text (colour only on a terminal), scripts get JSON."""

    answered: ClassVar[bool] = False
    """Whether this process has printed its JSON answer: a command stopped by Ctrl-C after that adds none."""

    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self.exit_codes: ExitCodes = "toolscout"
        """The config's `cli.exitCodes`, once `load` has read it."""

    @cached_property
    def out(self) -> Console:
        from rich.console import Console

        return Console(highlight=False, soft_wrap=True)

    @cached_property
    def err(self) -> Console:
        from rich.console import Console

        return Console(stderr=True, highlight=False, soft_wrap=True)

    def data(self, value: Any) -> None:
        sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        Output.answered = True

    def print(self, markup: str = "") -> None:
        self.out.print(markup)

    def note(self, markup: str) -> None:
        self.err.print(markup)

    def fail(self, error: ToolscoutError, code: int | None = None) -> NoReturn:
        """Report `error` (JSON on stdout with --json, a line on stderr otherwise) and exit."""
        if self.json_mode:
            self.data({"success": False, "error": error.to_dict(CLI_STEPS)})
        else:
            from rich.markup import escape

            self.err.print(f"[red]✗[/red] {escape(error.explain(CLI_STEPS))}")
        raise typer.Exit(exit_code_for(error, self.exit_codes) if code is None else code)


def load(
    config: Path | None, output: Output, *, demo: bool = False, lenient: bool = False
) -> tuple[GatewayConfig, ConfigSource | None]:
    """The configuration a command runs with (and where it came from), or exit 2 with the reason.

    `lenient` is for commands that read or edit the file without running servers: unset
    `${VAR}`s are not an error for them.
    """
    if demo and config is not None:
        output.fail(ConfigurationError("use either --config or --demo, not both."))
    try:
        if demo:
            from toolscout.demo.config import demo_config

            return demo_config(), None
        source = find_config(config)
        loaded = check_config_file(source.path) if lenient else load_with_sources(source.path)
    except ConfigurationError as exc:
        output.fail(exc)
    output.exit_codes = loaded.cli.exit_codes
    return loaded, source


def registry_config(config: Path | None, output: Output) -> GatewayConfig:
    """The configuration naming the registry file (and its servers' names) for `token` and `registry`
    commands run on this machine: the file given or found, read leniently, else the defaults."""
    if config is None:
        try:
            find_config(None)
        except ConfigurationError:
            return GatewayConfig()
    return load(config, output, lenient=True)[0]


def _progress(gateway: Gateway) -> Table:
    from rich.markup import escape
    from rich.table import Table

    from toolscout.upstream import Status

    table = Table.grid(padding=(0, 2))
    for up in gateway.upstreams:
        if up.status is Status.CONNECTING:
            state = "[yellow]connecting…[/yellow]"
        elif up.status is Status.CONNECTED:
            state = f"[green]{gateway.catalog.counts(up.name)[0]} tools[/green]"
        elif up.status in (Status.ERROR, Status.DISCONNECTED, Status.NEEDS_LOGIN):
            state = f"[red]{up.status.value}[/red] {escape(up.error or '')}"
        else:
            state = "[dim]disabled[/dim]"
        table.add_row(escape(up.name), state)
    return table


@asynccontextmanager
async def connected(
    config: GatewayConfig,
    output: Output,
    *,
    only: Collection[str] | None = None,
    live: bool = False,
    from_stored: bool = False,
    searched: bool = True,
) -> AsyncGenerator[Gateway]:
    """A gateway whose upstreams (all, or `only` these) have connected or failed, each tried once.

    `live`: none is answered from the persistent catalog (the gateway would start from it and wait
    for its search index); their live lists are saved to it, and their failures remembered
    (gateway/store.py's `Failure`); the gateway is not searched (it builds no index). While they
    connect, a terminal on stderr shows one live line per server.

    `from_stored`: a server whose catalog is stored is not started: its tools are the stored ones,
    and it connects only when a call needs it (its status stays `idle` until then). Starting servers
    is most of what a command costs, and the store is what `list` and `search` answer from too.

    `searched=False`: the command never searches the gateway, which then builds no search index.
    """
    # Imported here: the SDK and the search index are the slow part of starting the CLI,
    # and commands that never connect should not pay for them.
    from toolscout.gateway.core import Gateway
    from toolscout.gateway.snapshots import LiveListsOnly
    from toolscout.gateway.store import CatalogStore, store_path
    from toolscout.suggestions import server_not_found

    for name in only or ():
        if name not in config.mcp_servers:
            raise server_not_found(name, list(config.mcp_servers))
    store = CatalogStore(store_path(config.catalog_cache)) if live and config.catalog_cache.enabled else None
    options: dict[str, Any] = {"search": _NotSearched()} if live or not searched else {}
    if store is not None:
        options["catalog_store"] = LiveListsOnly(store)
    try:
        gateway_context = Gateway.from_config(
            config, only=only, reconnect=False, lazy=True if from_stored and not live else None, **options
        )
    except ToolscoutError as exc:  # e.g. a search model whose extra is not installed
        output.fail(exc)
    async with gateway_context as gateway:
        if output.err.is_terminal:
            from rich.live import Live

            with Live(console=output.err, get_renderable=lambda: _progress(gateway), transient=True):
                await gateway.settle()
        else:
            await gateway.settle()
        if store is not None:
            _remember_failures(gateway, store)
        yield gateway


def stored_lists(gateway: Gateway) -> dict[str, str]:
    """The servers a command's gateway answers for from their stored lists (not connected by it),
    each with when its list was taken (`cachedAt`)."""
    found = {u.name: gateway.cached_at(u.name) for u in gateway.upstreams}
    return {name: iso_utc(at) for name, at in found.items() if at is not None}


class _NotSearched:
    """The search backend of a gateway a command does not search (it runs one tool, counts tokens,
    or hands its servers' lists to the catalog view): building the real one would only compete with
    the servers starting."""

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        pass  # nothing to index: nothing will be searched

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        raise RuntimeError("this command's gateway is not searched; search its catalog view")


def _remember_failures(gateway: Gateway, store: CatalogStore) -> None:
    import time

    from toolscout.gateway.store import Failure
    from toolscout.upstream import Status

    store.save_failures(
        [
            Failure(up.name, up.spec.cache_key, time.time(), up.error or "failed to connect")
            for up in gateway.upstreams
            if up.status is Status.ERROR and up.spec.cache_key is not None
        ]
    )


def run(function: Any, *args: Any) -> Any:
    """Run an async command body; `typer.Exit` passes through."""
    return anyio.run(function, *args)
