"""The catalog: every upstream tool, with what the tool rules say about it."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from pydantic import BaseModel

from toolscout.config.rules import Load, RuleSet
from toolscout.errors import ToolDisabled, ToolNotFound, ToolUnusable, tool_quarantined
from toolscout.schemas import schema_problem
from toolscout.suggestions import MAX_SUGGESTIONS, closest

SUMMARY_LIMIT = 160
AVAILABLE_TOOLS_SHOWN = 30
"""The most of a server's tool names a `TOOL_NOT_FOUND` names: enough for most servers, a few hundred
tokens at most for the largest (search_tools finds the rest)."""

ListName = Literal["resources", "resource_templates", "prompts"]
"""The lists the gateway keeps of every upstream (tools are the catalog's)."""
LIST_NAMES: tuple[ListName, ...] = ("resources", "resource_templates", "prompts")
LIST_ITEMS: dict[ListName, type[BaseModel]] = {
    "resources": types.Resource,
    "resource_templates": types.ResourceTemplate,
    "prompts": types.Prompt,
}
"""What each list holds (the persistent catalog reads a stored list back as these)."""


class Changes:
    """`version` grows with every change; `wait` returns at the next one; `bursts` groups them."""

    def __init__(self) -> None:
        self.version = 0
        self._event = anyio.Event()

    def bump(self) -> None:
        """Record one change and wake whoever waits for it."""
        self.version += 1
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        """Wait for the next change."""
        await self._event.wait()

    async def bursts(self, quiet: float) -> AsyncIterator[None]:
        """Yield once per burst of changes, `quiet` seconds after its first change, forever.

        Changes made while the consumer works on a burst start the next one: none is missed.
        """
        seen = self.version
        while True:
            if self.version == seen:
                await self.wait()
            await anyio.sleep(quiet)
            seen = self.version
            yield


@functools.lru_cache(maxsize=32_768)
def summarize(description: str | None, limit: int = SUMMARY_LIMIT) -> str:
    """Return the description's first sentence or line, cut to `limit` characters.

    Remembered per description (a string's hash is kept in it, so a repeat costs a lookup): every
    `tools/list` in compact mode and every listing summarise each tool again, which is slow on a
    large catalog.
    """
    text = " ".join((description or "").split())
    if not text:
        return ""
    sentence = re.split(r"(?<=[.!?。])\s", text, maxsplit=1)[0]
    first_line = (description or "").strip().splitlines()[0].strip()
    short = min(sentence, first_line, key=len) or sentence
    return short if len(short) <= limit else short[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class CatalogTool:
    """One upstream tool as the gateway knows it."""

    server: str
    tool: types.Tool
    enabled: bool
    tags: tuple[str, ...]
    quarantined: bool = False
    """Its definition changed since it was pinned (`toolPinning: quarantine`, gateway/pins.py)."""
    unusable: str | None = None
    """Why no call can use the tool whatever the rules say (its input schema cannot be validated
    within the budget: `schema_problem`); such a tool is never enabled, searched or called."""
    hidden: bool = False
    """Kept out of every listing by `toolRules` (`hidden: true`), yet found by search and callable."""
    load: Load | None = None
    """`eager` or `deferred` as `toolRules` say (`load`); None: as its server's entry says."""

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def title(self) -> str | None:
        return self.tool.title or (self.tool.annotations.title if self.tool.annotations else None)

    @property
    def description(self) -> str:
        return self.tool.description or ""

    @property
    def summary(self) -> str:
        return summarize(self.tool.description) or (self.title or "")

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.tool.input_schema

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.tool.output_schema


SERVER_DESCRIPTION_LIMIT = 200
"""The characters of a description made from a server's tools: a sentence or two, in any listing."""


def describe_server(entries: Iterable[CatalogTool], limit: int = SERVER_DESCRIPTION_LIMIT) -> str:
    """A server's description made from its tools, for a server that says nothing of itself: what
    its tools do, by name and summary, in name order (the same tools give the same words however the
    server orders its list), cut to `limit` characters. Empty for a server without tools."""
    tools = sorted(entries, key=lambda e: e.name)
    if not tools:
        return ""
    parts = [f"{e.name} ({e.summary.rstrip('.')})" if e.summary else e.name for e in tools]
    text = f"Tools: {'; '.join(parts)}."
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ;,(") + "…"


def least_permissive(entries: Iterable[CatalogTool]) -> types.ToolAnnotations:
    """The annotations of a tool that can run any of `entries`: what the most permissive of them may do.

    A client's approval prompt for `execute_tool` (or code mode's `run_code`) reads these, so they
    promise no more than the riskiest tool it can reach. Unset hints take the protocol's defaults:
    a tool is not read-only, is destructive when it writes, is not idempotent and reaches an open
    world. Nothing to reach leaves a tool that only reads: it can do nothing else.
    """
    read_only = idempotent = True
    destructive = open_world = False
    for entry in entries:
        hints = entry.tool.annotations or types.ToolAnnotations()
        writes = hints.read_only_hint is not True
        read_only = read_only and not writes
        destructive = destructive or (writes and hints.destructive_hint is not False)
        idempotent = idempotent and hints.idempotent_hint is True
        open_world = open_world or hints.open_world_hint is not False
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


Visible = Callable[[CatalogTool], bool]
"""Whether the scope of a request sees a tool (gateway/visibility.py)."""
Quarantine = Callable[[str, types.Tool], bool]
"""Whether a server's tool is kept from lists, searches and calls until approved (`ToolPins.quarantined`)."""


class Catalog:
    """Tools per server, with tool rules applied as they arrive.

    `changes` counts every change, so derived state (the search index, clients' tool lists)
    knows when to rebuild.
    """

    def __init__(self, rules: RuleSet | None = None, *, quarantined: Quarantine | None = None) -> None:
        self._rules = rules or RuleSet()
        self._quarantined = quarantined
        self._declared: set[str] = set()
        """Servers whose tools are the config's declared ones (`set_server_tools(declared=True)`)."""
        self._servers: dict[str, dict[str, CatalogTool]] = {}
        self._order: dict[str, int] = {}
        self.changes = Changes()
        self._described: tuple[int, dict[str, str]] = (-1, {})
        """Each server's description made from its tools (`described`), as of one catalog version."""

    @property
    def version(self) -> int:
        """Grows with every change."""
        return self.changes.version

    def set_server_tools(self, server: str, tools: Iterable[types.Tool], *, declared: bool = False) -> None:
        """Replace everything known about `server`'s tools (`declared`: the config's stand-ins for a server
        not yet started, not the server's own definitions, so no pin judges them)."""
        if declared:
            self._declared.add(server)
        else:
            self._declared.discard(server)
        entries = {tool.name: self._judged(server, tool) for tool in tools}
        previous = self._servers.get(server)
        self._servers[server] = entries
        if previous is None:
            self._sort()
        # A server listing what it listed before (reconnected; live again after its stored list)
        # changes nothing: no index rebuild, no list_changed for clients.
        if previous is None or list(previous.values()) != list(entries.values()):
            self.changes.bump()

    def rules_changed(self) -> None:
        """The rules were replaced (`RuleSet.replace`), or the pins (approved, reset): every tool's verdict
        again (a change if any differs)."""
        before = self._servers
        self._servers = {
            server: {name: self._judged(server, entry.tool) for name, entry in entries.items()}
            for server, entries in before.items()
        }
        if self._servers != before:
            self.changes.bump()

    def _judged(self, server: str, tool: types.Tool) -> CatalogTool:
        verdict = self._rules.verdict(server, tool.name)
        held = self._quarantined is not None and server not in self._declared and self._quarantined(server, tool)
        unusable = schema_problem(tool.input_schema)
        return CatalogTool(
            server,
            tool,
            verdict.enabled and unusable is None,
            verdict.tags,
            quarantined=held,
            unusable=unusable,
            hidden=verdict.hidden,
            load=verdict.load,
        )

    def order_servers(self, names: Sequence[str]) -> None:
        """List the servers' tools in the order of `names` (the gateway's order of its upstreams), not in
        the order they happened to be listed in; a server not named comes last."""
        self._order = {name: i for i, name in enumerate(names)}
        self._sort()

    def _sort(self) -> None:
        if self._order:
            last = len(self._order)
            self._servers = dict(sorted(self._servers.items(), key=lambda item: self._order.get(item[0], last)))

    def drop_server(self, server: str) -> None:
        self._declared.discard(server)
        if self._servers.pop(server, None) is not None:
            self.changes.bump()

    def tools(
        self,
        server: str | None = None,
        *,
        include_disabled: bool = False,
        include_quarantined: bool = False,
        include_hidden: bool = True,
    ) -> list[CatalogTool]:
        """Tools of one server, or of all, in the order the servers listed them (quarantined ones only
        when asked: their changed definition must not reach the model; a listing leaves out the hidden
        ones with `include_hidden=False`, a search keeps them)."""
        groups: Sequence[dict[str, CatalogTool]] = (
            [self._servers.get(server, {})] if server is not None else list(self._servers.values())
        )
        return [
            t
            for group in groups
            for t in group.values()
            if (include_disabled or t.enabled)
            and (include_quarantined or not t.quarantined)
            and (include_hidden or not t.hidden)
        ]

    def get(self, server: str, name: str) -> CatalogTool | None:
        return self._servers.get(server, {}).get(name)

    def admit_tool(self, server: str, name: str, *, visible: Visible | None = None) -> CatalogTool:
        """`server`'s tool called exactly `name`, if its server listed it and `toolRules` enable it;
        else `ToolNotFound` (with the closest enabled names), `ToolUnusable` (its input schema cannot
        be validated within the budget) or `ToolDisabled`.

        `visible`: whether the caller's scope sees a tool (gateway/visibility.py); one it does not
        see is `ToolNotFound` whatever the rules say, and only tools it sees are suggested.

        The one rule for a call to reach an upstream: the gateway asks it before validating the
        arguments, and `Upstream.call_tool` again before sending, so no path can call a tool the
        server did not list under that very name (an upstream whose own lookup is loose, say
        case-insensitive, would otherwise run a disabled tool under another spelling of its name).
        """
        entry = self.get(server, name)
        if entry is None or (visible is not None and not visible(entry)):
            raise self.not_found(server, name, visible=visible)
        if entry.quarantined:  # first: nothing of a definition not yet approved reaches the caller
            raise tool_quarantined(server, name)
        if entry.unusable is not None:
            raise ToolUnusable(
                f"Tool {name!r} on {server!r} cannot be used: its {entry.unusable}. Its server's other tools "
                "can be used; this one needs its schema fixed by the server's owner.",
                server=server,
                tool=name,
                reason=entry.unusable,
            )
        if not entry.enabled:
            raise ToolDisabled(
                f"Tool {name!r} on {server!r} is disabled by toolRules and cannot be used.", server=server, tool=name
            )
        return entry

    def counts(self, server: str) -> tuple[int, int]:
        """(all tools, enabled tools) of `server`."""
        entries = self._servers.get(server, {})
        return len(entries), sum(1 for t in entries.values() if t.enabled and not t.quarantined)

    def described(self, server: str) -> str:
        """`server`'s description made from its listed tools (`describe_server`: enabled, not hidden),
        made once per catalog version."""
        version, made = self._described
        if version != self.version:
            version, made = self._described = (self.version, {})
        found = made.get(server)
        if found is None:
            found = made[server] = describe_server(self.tools(server, include_hidden=False))
        return found

    def hidden_count(self, server: str) -> int:
        """How many of `server`'s enabled tools are hidden: in no listing, though found by search."""
        return sum(1 for t in self._servers.get(server, {}).values() if t.hidden and t.enabled and not t.quarantined)

    def servers_with_tool(self, name: str) -> list[str]:
        return [server for server, entries in self._servers.items() if name in entries]

    def not_found(self, server: str, name: str, *, visible: Visible | None = None) -> ToolNotFound:
        """The error for a tool `server` does not have, with the closest of its tools and the other
        servers that have one of that name (of those `visible` says the caller sees, if given), and
        the tools it has (`availableTools`: the first `AVAILABLE_TOOLS_SHOWN` a listing shows, and
        `availableToolCount`), so that the caller can pick one without another request."""
        own = [t for t in self.tools(server) if visible is None or visible(t)]
        listed = [t.name for t in own if not t.hidden]
        more = len(listed) - AVAILABLE_TOOLS_SHOWN
        has = f" Its tools: {', '.join(listed[:AVAILABLE_TOOLS_SHOWN])}{f' and {more} more' if more > 0 else ''}."
        suggestions = [{"server": server, "tool": t} for t in closest(name, [t.name for t in own])]
        for other in self.servers_with_tool(name):
            entry = self.get(other, name)
            if other != server and entry is not None and entry.enabled and (visible is None or visible(entry)):
                suggestions.insert(0, {"server": other, "tool": name})
        suggestions = suggestions[:MAX_SUGGESTIONS]
        hint = " Did you mean " + ", ".join(f"{s['tool']!r} on {s['server']!r}" for s in suggestions) + "?"
        return ToolNotFound(
            f"Server {server!r} has no tool {name!r}.{hint if suggestions else ''}{has if listed else ''}",
            next_step="find_tool",
            server=server,
            tool=name,
            suggestions=suggestions or None,
            availableTools=listed[:AVAILABLE_TOOLS_SHOWN],
            availableToolCount=len(listed),
        )
