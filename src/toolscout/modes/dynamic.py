"""Dynamic mode: the meta-tools, plus `load_tools`/`unload_tools` that put chosen tools in this client's own list.

Tools whose `load` is `eager` (hints.py) are listed natively beside the meta-tools from the start, for
every client. For the others an agent searches as in discovery mode, then loads the few it needs; they appear in its
session's `tools/list` as native tools (passthrough naming, full schemas), the client is told
with `notifications/tools/list_changed` (a `subscriptions/listen` event at 2026-07-28), and the
model calls them directly. State is per client (serve/sessions.py) and capped at `max_loaded`.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import Field

from toolscout.config.models import DEFAULT_MAX_LOADED_TOOLS, ExecuteResult, ListingFormat
from toolscout.config.rules import Load
from toolscout.config.scopes import current_scope
from toolscout.errors import AGENT_STEPS, LoadLimitReached, NotInThisProtocol, Phrasing
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import ScopedCache
from toolscout.modes.client import SurfaceClient
from toolscout.modes.discovery import BY_NAME, META_TOOLS, ArgsModel, ToolRefArgs, ToolSpec, run_meta_tool, tool_result
from toolscout.modes.hints import Reach, hinted, is_eager, native_order, server_loads
from toolscout.modes.passthrough import NativeNames


class LoadToolsArgs(ArgsModel):
    tools: list[ToolRefArgs] = Field(min_length=1)


class UnloadToolsArgs(ArgsModel):
    # By the names the client sees in its own list: that is where a model finds them.
    names: list[str] | None = Field(None, description="Loaded tool names; omit for all.")


class DynamicSurface:
    """Discovery's five meta-tools, `load_tools`, `unload_tools`, and whatever this client loaded."""

    per_client = True
    next_steps: Phrasing = AGENT_STEPS

    instructions = (
        "toolscout fronts many MCP servers. search_tools finds tools; load_tools adds them to your tool list "
        "so you can call them directly (or use execute_tool); unload_tools when done."
    )

    def __init__(
        self,
        gateway: Gateway,
        *,
        max_loaded: int = DEFAULT_MAX_LOADED_TOOLS,
        listing_format: ListingFormat = "text",
        execute_result: ExecuteResult = "native",
    ) -> None:
        self.gateway = gateway
        self.max_loaded = max_loaded
        self.listing_format: ListingFormat = listing_format
        self.execute_result: ExecuteResult = execute_result
        self.names = NativeNames(gateway.catalog)
        self._load = ToolSpec(
            "load_tools", f"Add tools to your tool list to call them directly (max {max_loaded}).", LoadToolsArgs
        )
        self._unload = ToolSpec("unload_tools", "Remove loaded tools from your tool list.", UnloadToolsArgs)
        self._definitions = [tool.definition() for tool in (*META_TOOLS, self._load, self._unload)]
        self._modern_definitions = [tool.definition() for tool in META_TOOLS]
        self._reach = Reach(gateway, (tool.name for tool in META_TOOLS if tool.runs_tools))
        self._eager_lists = ScopedCache[list[types.Tool]]()

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        loads = server_loads(self.gateway)
        eager = self._eager(loads)
        if client.modern:
            # 2026-07-28: tools/list must not vary per connection, so nothing is loaded into it
            # (a principal's pinned tools are how a client gets tools of its own there); the eager
            # tools vary by scope alone.
            return [*self._reach.applied(self._modern_definitions), *eager]
        loaded: list[types.Tool] = []
        shown = {tool.name for tool in eager}
        scope = current_scope()
        for server, tool in client.loaded:
            entry = self.gateway.visibility.get(scope, server, tool)
            # A tool its server dropped, or a rule disabled, leaves the list but stays loaded:
            # it comes back if the server offers it again.
            if entry is not None and entry.enabled and self.names.name(server, tool) not in shown:
                loaded.append(hinted(entry, self.names.name(entry.server, entry.name), loads))
        return [*self._reach.applied(self._definitions), *eager, *loaded]

    def _eager(self, loads: dict[str, Load | None]) -> list[types.Tool]:
        """The eager tools the request's scope sees, listed natively from the start after the meta-tools
        (hints.py: in its order, with its hints), made once per catalog version and scope."""
        scope = current_scope()
        visibility = self.gateway.visibility

        def make() -> list[types.Tool]:
            listed = visibility.tools(scope, include_hidden=False)
            eager = [entry for entry in native_order(listed, loads) if is_eager(entry, loads)]
            names = self.names.names_of(eager)
            return [hinted(entry, name, loads) for entry, name in zip(eager, names, strict=True)]

        version = (self.gateway.catalog.version, tuple(loads.items()), tuple(u.name for u in self.gateway.upstreams))
        return self._eager_lists.get(scope, version, make)

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        if name in BY_NAME:
            return await run_meta_tool(
                BY_NAME,
                self.gateway,
                name,
                arguments,
                listing_format=self.listing_format,
                execute_result=self.execute_result,
            )
        if name in (self._load.name, self._unload.name) and client.modern:
            raise NotInThisProtocol(
                f"{name} works only for clients of protocol versions up to 2025-11-25: at 2026-07-28 tools/list "
                "cannot vary per connection, so no tool can be loaded into it. Call the tool with execute_tool, "
                "or have it pinned in your token's pinnedTools (server/tool) to see it in tools/list."
            )
        if name == self._load.name:
            return await self._run_load(client, self._load.parse(arguments))
        if name == self._unload.name:
            return self._run_unload(client, self._unload.parse(arguments))
        # Any catalog tool answers to its native name, loaded or not: a client whose list is
        # stale (say, across a gateway restart) still reaches the tool it means.
        route = self._route(client, name)
        if route is None:
            await self.gateway.settle_startup()  # a client may call before the catalog has arrived
            route = self._route(client, name)
        if route is None:
            return None
        # A loaded tool its server has since dropped gets TOOL_NOT_FOUND (with suggestions), not "unknown tool".
        return await self.gateway.execute(route[0], route[1], arguments)

    def _route(self, client: SurfaceClient, name: str) -> tuple[str, str] | None:
        """The `(server, tool)` the native `name` stands for, among the tools the request's scope sees."""
        scope = current_scope()
        visible = self.gateway.visibility.tool_filter(scope)
        return self.names.route(name, visible) or next(
            (p for p in client.loaded if self.names.name(*p) == name and self.gateway.visibility.sees(scope, *p)),
            None,
        )

    def native(self, name: str) -> bool:
        return name not in BY_NAME and name not in (self._load.name, self._unload.name)

    async def _run_load(self, client: SurfaceClient, args: LoadToolsArgs) -> types.CallToolResult:
        # Every tool is checked before any is loaded: a call either loads all it names or none.
        wanted: dict[tuple[str, str], None] = {}
        for ref in args.tools:
            entry = await self.gateway.tool(ref.server, ref.tool)
            wanted[(entry.server, entry.name)] = None
        new = [pair for pair in wanted if pair not in client.loaded]
        if len(client.loaded) + len(new) > self.max_loaded:
            loaded = ", ".join(self.names.name(*pair) for pair in client.loaded) or "none"
            raise LoadLimitReached(
                f"Loading {len(new)} more would exceed the limit of {self.max_loaded} loaded tools "
                f"({len(client.loaded)} loaded: {loaded}). Unload some with unload_tools, or use execute_tool.",
                limit=self.max_loaded,
            )
        for pair in new:
            client.loaded[pair] = None
        if new:
            client.mark_tools_changed()
        names = [self.names.name(*pair) for pair in wanted]
        data: dict[str, Any] = {
            "loaded": [{"server": s, "tool": t, "name": self.names.name(s, t)} for s, t in wanted],
            "loadedCount": len(client.loaded),
            "limit": self.max_loaded,
        }
        it, name = ("it", "this name") if len(names) == 1 else ("them", "these names")
        text = (
            f"Loaded {', '.join(names)}: call {it} by {name} (if your tool list does not show {it} yet, "
            f"use execute_tool). {len(client.loaded)} of {self.max_loaded} loaded."
        )
        return tool_result(data, text)

    def _run_unload(self, client: SurfaceClient, args: UnloadToolsArgs) -> types.CallToolResult:
        if args.names is None:
            gone = list(client.loaded)
        else:
            wanted = set(args.names)
            gone = [pair for pair in client.loaded if self.names.name(*pair) in wanted]
        for pair in gone:
            del client.loaded[pair]
        if gone:
            client.mark_tools_changed()
        names = [self.names.name(*pair) for pair in gone]
        data: dict[str, Any] = {
            "unloaded": [{"server": s, "tool": t, "name": n} for (s, t), n in zip(gone, names, strict=True)],
            "loadedCount": len(client.loaded),
            "limit": self.max_loaded,
        }
        text = f"Unloaded {', '.join(names)}." if names else "Nothing to unload: none of those tools is loaded."
        return tool_result(data, f"{text} {len(client.loaded)} of {self.max_loaded} loaded.")
