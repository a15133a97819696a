"""`Scout`: a gateway opened in process, for a program that runs its own agent loop.

`open_gateway` reads a configuration as `toolscout serve` does and returns a `Scout`, an async
context manager: entering it starts the gateway (one task per upstream server) and waits, at most
`wait` seconds, until every server has connected or failed; leaving it stops them. In between it
answers what the meta-tools answer an agent, as Python objects: `servers()`, `search`, `tools`,
`tool_details`, and `execute`, which runs a tool through the same path as `execute_tool` (looked
up, its arguments validated against its input schema, `toolRules` applied, the call audited, its
text capped).

Tools have a native name too (`native_name`, `tool_named`): `server__tool`, or a short hash where that
would be over 64 characters or shared, valid for every model API (`^[a-zA-Z0-9_-]{1,64}$`). The
provider helpers (`toolscout.api.anthropic`, `toolscout.api.openai`) name tools by it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import anyio
import mcp_types as types

from toolscout.catalog import CatalogTool
from toolscout.config import CONFIG_ENV_VAR, GatewayConfig, find_config, parse_config
from toolscout.config.locations import candidate_paths
from toolscout.config.scopes import current_scope
from toolscout.config.sources import load_with_sources
from toolscout.errors import ConfigurationError, GatewayNotOpen, InvalidArguments, Phrasing, ToolNotFound
from toolscout.gateway.core import Gateway
from toolscout.modes.passthrough import NativeNames
from toolscout.render.examples import Example, tool_examples
from toolscout.render.signatures import Parameter, call_signature, parameters
from toolscout.upstream import Status

logger = logging.getLogger(__name__)

ConfigLike = GatewayConfig | Mapping[str, Any] | str | os.PathLike[str] | None
"""What `open_gateway` reads: a loaded `GatewayConfig`, the same as a dict (the file's keys, `mcpServers`
...), the path of a configuration file, or None for the file `toolscout serve` would find."""

API_CLIENT = "python-api"
"""The client the audit log names for a call made through a `Scout` (unless it was given another)."""

NOT_OPEN_YET = (
    "This gateway is not open yet: use the Scout inside `async with toolscout.open_gateway(...) as scout:`, "
    "which starts its servers."
)
CLOSED = (
    "This gateway was closed when its `async with` block ended, and its servers were stopped; open a new one "
    "with `async with toolscout.open_gateway(...) as scout:`."
)
ENTERED_TWICE = (
    "This gateway was already opened: a Scout is entered once. Open a new one with "
    "`async with toolscout.open_gateway(...) as scout:`."
)

SETTLE_MARGIN_SECONDS = 1.0
"""Added to the longest connect timeout when waiting on entry: the time for the servers' tasks to start."""

API_STEPS: Phrasing = {
    "find_tool": "Search the tools again for the right name.",
    "list_servers": "List the servers to see the configured names.",
    "tool_details": "Read the tool's input schema, then call it again.",
}
"""What an error tells a model to do next, in words that name no meta-tool (the loop's own tools are
its program's): what `ToolscoutError.explain(API_STEPS)` writes in the provider helpers' error results."""


CONFIG_FORMS = (
    "the path of a configuration file (a str or a pathlib.Path), a dict of its keys (`mcpServers`, ...), "
    "a GatewayConfig, or None for the file `toolscout serve` would find"
)
"""What `open_gateway` takes as its configuration, in the words of the error for anything else."""


def _is(value: object, *kinds: type) -> bool:
    """Whether `value` is of one of `kinds`; a bool counts as an int only where `bool` is one of them."""
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def _expect(parameter: str, value: object, takes: str, ok: bool) -> None:
    """Raise `InvalidArguments` unless `ok`: `parameter` takes `takes`, and was given `value`.

    The API's methods check their arguments' types at once with it, so that a wrong one is named
    instead of failing later, deep in the gateway, with a TypeError of its own.
    """
    if not ok:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
        raise InvalidArguments(f"`{parameter}` must be {takes}; got {shown} ({type(value).__name__}).")


def _is_query(value: object) -> bool:
    """Whether `value` is a search query: a string, or a list (any sequence) of strings, the steps of a task."""
    if isinstance(value, str):
        return True
    if not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
        return False
    return all(isinstance(step, str) for step in cast(Sequence[object], value))


def load_gateway_config(config: ConfigLike = None) -> GatewayConfig:
    """The configuration `config` names (`ConfigLike`), loaded as `toolscout serve` loads it: `${VAR}`s
    filled in from the environment, the servers of its `sources` added.

    None looks where `serve` does ($TOOLSCOUT_CONFIG, ./toolscout.{json,yaml,yml,toml}, the user config
    directory); when there is no file anywhere, the built-in default configuration (no servers) is used,
    as `serve` does, and a warning logged. A mistake raises `ConfigurationError`, naming the key.
    """
    is_path = _is(config, str, os.PathLike) and isinstance(os.fspath(cast(os.PathLike[Any], config)), str)
    if not (config is None or is_path or _is(config, GatewayConfig, Mapping)):
        shown = repr(config) if len(repr(config)) <= 60 else f"{repr(config)[:57]}..."
        raise ConfigurationError(f"open_gateway takes {CONFIG_FORMS}; got {shown} ({type(config).__name__}).")
    if isinstance(config, GatewayConfig):
        return config
    if isinstance(config, Mapping):
        try:
            text = json.dumps(config)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"The configuration given to open_gateway must hold only JSON values (strings, numbers, "
                f"booleans, lists, dicts): {exc}."
            ) from None
        return parse_config(text, "json", "the configuration given to open_gateway")
    if config is None and not os.environ.get(CONFIG_ENV_VAR) and not any(c.path.is_file() for c in candidate_paths()):
        logger.warning(
            "no configuration file found (%s); opening the built-in default configuration, which has no servers",
            ", ".join(str(c.path) for c in candidate_paths()),
        )
        return GatewayConfig()
    source = find_config(None if config is None else Path(config))
    return load_with_sources(source.path)


def open_gateway(config: ConfigLike = None, *, wait: float | None = None, client: str = API_CLIENT) -> Scout:
    """A `Scout` over the gateway `config` describes (see `load_gateway_config`); enter it with `async with`.

    `wait`: the most seconds entering waits for the servers to connect or fail (default: the longest
    `connectTimeout` of the servers); a server still connecting then is answered for once it connects.
    `client`: the name the audit log gives this program's calls.

    Raises `ConfigurationError` at once when the configuration cannot be read or is invalid.
    """
    return Scout(Gateway.from_config(load_gateway_config(config)), wait=wait, client=client)


@dataclass(frozen=True)
class ServerInfo:
    """One upstream server as `list_mcp_servers` shows it."""

    name: str
    description: str
    """The configured description, else the one the server gave (`Upstream.description`); may be empty."""
    status: str
    """`connecting`, `connected`, `idle`, `error`, `disconnected`, `needs-login` or `disabled`."""
    tool_count: int
    enabled_count: int
    """The tools `toolRules` leave enabled: the ones `execute` may run."""
    error: str | None = None
    """Why it is not connected, when it is in error."""
    instructions: str | None = None
    """What the server told its clients about using it, if anything."""


@dataclass(frozen=True)
class Hit:
    """A tool found by `Scout.search`: `relevance` is in [0, 1], higher is better."""

    server: str
    tool: str
    name: str
    """Its native name (`server__tool`), the one the provider helpers give the model."""
    relevance: float
    summary: str
    """The first sentence of its description."""
    signature: str
    """Its call with types only: `create_note({title: string, body: string, tags?: string[]})`."""
    tags: tuple[str, ...] = ()
    steps: tuple[int, ...] = ()
    """For a query given as a list of steps, the steps (from 0) this tool answers."""


@dataclass(frozen=True)
class ToolDetails:
    """One upstream tool's whole definition, as `get_tool_details` gives it."""

    server: str
    tool: str
    name: str
    """Its native name (`server__tool`), the one the provider helpers give the model."""
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    title: str | None
    annotations: types.ToolAnnotations | None
    tags: tuple[str, ...]
    definition: types.Tool
    """The tool as its server listed it (under its own name)."""
    hidden: bool = False
    """Kept out of listings by `toolRules` (`hidden: true`), yet found by `search` and run by `execute`."""

    @property
    def summary(self) -> str:
        """The first sentence of its description (or its title)."""
        return CatalogTool(self.server, self.definition, True, self.tags).summary

    @functools.cached_property
    def signature(self) -> str:
        """Its call with types, defaults and short descriptions: `convert_units({value: number, ...})`."""
        return call_signature(self.tool, self.input_schema)

    @functools.cached_property
    def parameters(self) -> list[Parameter]:
        """Its top-level parameters, required ones first."""
        return parameters(self.input_schema)

    @functools.cached_property
    def examples(self) -> list[Example]:
        """Example arguments made from its input schema, each valid against it."""
        return tool_examples(self.input_schema)


class Scout:
    """A running gateway's tools for a program's own agent loop (see the module's docstring).

    Made by `open_gateway`, or around a `Gateway` built in code (in-process servers); it runs once:
    entering starts the gateway and leaving stops it. Outside its `async with` block (before, after, or
    entered again) every method raises `GatewayNotOpen` at once.
    """

    def __init__(self, gateway: Gateway, *, wait: float | None = None, client: str = API_CLIENT) -> None:
        waits = "a number of seconds (0 or more) or None"
        _expect("wait", wait, waits, wait is None or (_is(wait, int, float) and wait >= 0))
        _expect("client", client, "a string", _is(client, str))
        self.gateway = gateway
        """The gateway underneath, for what this class does not say (resources, prompts, metrics)."""
        self.client = client
        self._wait = wait
        self._stack: AsyncExitStack | None = None
        self._names = NativeNames(gateway.catalog)
        self._state: Literal["new", "opening", "open", "closed"] = "new"

    async def __aenter__(self) -> Scout:
        if self._state != "new":
            raise GatewayNotOpen(ENTERED_TWICE)
        self._state = "opening"
        try:
            async with AsyncExitStack() as stack:
                await stack.enter_async_context(self.gateway)
                await self._settle()
                self._stack = stack.pop_all()
        except BaseException:
            self._state = "closed"
            raise
        self._state = "open"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._state = "closed"
        stack, self._stack = self._stack, None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    async def _settle(self) -> None:
        """Wait until no server is still connecting, at most `wait` seconds."""
        bound = self._wait
        if bound is None:
            timeouts = [u.spec.connect_timeout for u in self.gateway.upstreams if not u.spec.disabled]
            bound = max(timeouts, default=0.0) + SETTLE_MARGIN_SECONDS
        with anyio.move_on_after(bound):
            await self.gateway.settle()

    def _open(self) -> Gateway:
        """The gateway, while this Scout's `async with` block runs; else `GatewayNotOpen`, which says why.

        Outside it the gateway answers nothing sound: before, its search index and servers have not
        started (a call would wait for a server that never connects); after, its servers are stopped.
        """
        if self._state == "open":
            return self.gateway
        raise GatewayNotOpen(CLOSED if self._state == "closed" else NOT_OPEN_YET)

    # Servers

    def servers(self) -> list[ServerInfo]:
        """Every configured server, in the configuration's order, with its status and tool counts."""
        self._open()
        found: list[ServerInfo] = []
        for upstream in self.gateway.upstreams:
            row = self.gateway.server_status(upstream)
            found.append(
                ServerInfo(
                    name=upstream.name,
                    description=upstream.description,
                    status=str(row["status"]),
                    tool_count=int(row["toolCount"]),
                    enabled_count=int(row["enabledCount"]),
                    error=row.get("error"),
                    instructions=row.get("instructions"),
                )
            )
        return found

    def connected(self) -> list[str]:
        """The servers connected just now."""
        self._open()
        return [u.name for u in self.gateway.upstreams if u.status is Status.CONNECTED]

    # Tools

    async def search(
        self,
        query: str | Sequence[str],
        *,
        server: str | None = None,
        limit: int = 10,
        min_relevance: float | None = None,
    ) -> list[Hit]:
        """The enabled tools ranked for `query`, best first, as `search_tools` ranks them.

        `query` may be a list, the steps of a task: every step's best tool is in the answer. `server`:
        only that server's tools. `min_relevance`: leave out hits below it (default: the config's
        `search.minRelevance`; 0 keeps every match). Raises `ServerNotFound` for an unknown `server`,
        `InvalidArguments` for a query past `search.maxQueryChars` or `maxQuerySteps`, or a `limit` below 1.
        """
        self._open()
        _expect("query", query, "a string, or a list of strings (the steps of a task)", _is_query(query))
        _expect("server", server, "a server's name (a string) or None", server is None or _is(server, str))
        _expect("limit", limit, "an integer of 1 or more", _is(limit, int) and limit >= 1)
        _expect(
            "min_relevance",
            min_relevance,
            "a number from 0 to 1, or None",
            min_relevance is None or (_is(min_relevance, int, float) and 0 <= min_relevance <= 1),
        )
        if server is not None:
            self.gateway.upstream(server)  # SERVER_NOT_FOUND with the closest names
        steps = not isinstance(query, str)
        await self.gateway.settle_startup()
        found = await self.gateway.search(
            query if isinstance(query, str) else list(query), server=server, limit=limit, min_relevance=min_relevance
        )
        return [
            Hit(
                server=hit.tool.server,
                tool=hit.tool.name,
                name=self._names.name(hit.tool.server, hit.tool.name),
                relevance=hit.relevance,
                summary=hit.tool.summary,
                signature=call_signature(hit.tool.name, hit.tool.input_schema, max_description_len=0, brief=True),
                tags=hit.tool.tags,
                steps=hit.steps if steps else (),
            )
            for hit in found
        ]

    async def tools(self, server: str | None = None, *, include_hidden: bool = False) -> list[ToolDetails]:
        """The enabled tools of one server, or of every server, in the order the servers listed them.

        `include_hidden`: also those `toolRules` keep out of listings (`hidden: true`), which `search`
        finds and `execute` runs; a program that hands the model every tool a search may name wants them.
        """
        self._open()
        _expect("server", server, "a server's name (a string) or None", server is None or _is(server, str))
        _expect("include_hidden", include_hidden, "True or False", _is(include_hidden, bool))
        if server is not None:
            entries = await self.gateway.tools(server, include_hidden=include_hidden)
        else:
            # As the one-server path (`Gateway.tools`) does: each list older than `cache.ttl` is asked again first.
            await self.gateway.settle_startup()
            await self.gateway.relist_expired()
            entries = self.gateway.visibility.tools(current_scope(), include_hidden=include_hidden)
        return [self._details(entry) for entry in entries]

    async def tool_details(self, server: str, tool: str) -> ToolDetails:
        """The whole definition of `server`'s enabled `tool`.

        Raises `ServerNotFound` or `ToolNotFound` (with the closest names), `ToolDisabled` when
        `toolRules` disable it, `ToolQuarantined` when its definition changed since it was pinned.
        """
        gateway = self._open()
        _names_expected(server, tool)
        return self._details(await gateway.tool(server, tool))

    def _details(self, entry: CatalogTool) -> ToolDetails:
        return ToolDetails(
            server=entry.server,
            tool=entry.name,
            name=self._names.name(entry.server, entry.name),
            description=entry.description,
            input_schema=entry.input_schema,
            output_schema=entry.output_schema,
            title=entry.title,
            annotations=entry.tool.annotations,
            tags=entry.tags,
            definition=entry.tool,
            hidden=entry.hidden,
        )

    async def execute(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        max_output_chars: int | None = None,
    ) -> types.CallToolResult:
        """Run `server`'s `tool` with `arguments`, as `execute_tool` does; the tool's result as it came
        (its text capped at `max_output_chars`, default the config's `maxOutputChars`; 0: no cap).

        A failure the tool itself reports is a result with `is_error` set. Nothing reaches the server
        when the call is refused: `ServerNotFound`, `ToolNotFound`, `ToolDisabled`, `ToolQuarantined`,
        `ToolUnusable`, `ArgumentValidationError` (every violation with its JSON path), `InvalidArguments`;
        `ServerUnavailable` when the server cannot be reached, `CallTimeout` after its `timeout`.
        """
        gateway = self._open()
        _names_expected(server, tool)
        _expect(
            "arguments",
            arguments,
            "a dict of the tool's arguments, or None",
            arguments is None or _is(arguments, Mapping),
        )
        _expect(
            "max_output_chars",
            max_output_chars,
            "an integer of 0 or more (0: no cap), or None",
            max_output_chars is None or (_is(max_output_chars, int) and max_output_chars >= 0),
        )
        return await gateway.execute(server, tool, arguments, max_output_chars=max_output_chars, client=self.client)

    # Native names

    def native_name(self, server: str, tool: str) -> str:
        """The name of `server`'s `tool` for a model API: `server__tool`, valid for all of them
        (`^[a-zA-Z0-9_-]{1,64}$`). Raises `ServerNotFound` or `ToolNotFound` (with the closest names)
        for a server or tool the gateway does not have: a name made up for it would lead nowhere."""
        gateway = self._open()
        _names_expected(server, tool)
        gateway.upstream(server)  # SERVER_NOT_FOUND with the closest names
        if gateway.visibility.get(current_scope(), server, tool) is None:
            raise gateway.visibility.not_found(current_scope(), server, tool)
        return self._names.name(server, tool)

    async def tool_named(self, name: str) -> tuple[str, str]:
        """The `(server, tool)` a native name stands for (an upstream's own tool name too, when one server
        alone has it). Raises `ToolNotFound` with the closest native names, or `AmbiguousName`.

        Async as the other questions about the catalog are: it first waits, as they do, for the servers
        still on their first attempt to connect, whose tools would otherwise be missing.
        """
        gateway = self._open()
        _expect("name", name, "a tool's name (a string)", _is(name, str))
        await gateway.settle_startup()
        route = self._names.route(name)
        if route is not None:
            return route
        from toolscout.suggestions import closest, did_you_mean

        # Hidden tools too: they are called by name, and the deferred helpers hand them to the model.
        listed = gateway.visibility.tools(current_scope(), include_hidden=True)
        known = [self._names.name(e.server, e.name) for e in listed]
        raise ToolNotFound(f"No tool is named {name!r}.{did_you_mean(closest(name, known))}", next_step="find_tool")


def _names_expected(server: object, tool: object) -> None:
    """`InvalidArguments` unless `server` and `tool` are names (strings)."""
    _expect("server", server, "a server's name (a string)", _is(server, str))
    _expect("tool", tool, "a tool's name (a string)", _is(tool, str))
