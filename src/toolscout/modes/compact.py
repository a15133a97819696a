"""Compact mode: two tools, `inspect` and `exec`, with every server and tool listed in `inspect`'s description.

`inspect(server_name, tool_name?)` gives a server's tools or one tool's schema, and `exec(server_name,
tool_name, arguments)` runs a tool. This is the design of MCPX, whose layout of the description and
compressed answers compact mode keeps: both tools answer with TOON in `content` for the model and
the raw data in `structuredContent` (render/toon.py); `inspect`'s text writes schemas as TypeScript
signatures unless `schemaCompressionEnabled` is false; `exec` passes images, audio, resources and
text that is not JSON as the server sent them.

Its arguments name a tool by `server_name`/`tool_name` where discovery says `server`/`tool`;
`naming.CALL_TARGET_KEYS` knows both, for error results and the audit.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import Field, field_validator

from toolscout.config.models import DEFAULT_MAX_DESCRIPTION_LEN, CompactFormat
from toolscout.config.scopes import current_scope
from toolscout.errors import Phrasing
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import ScopedCache
from toolscout.modes.client import SurfaceClient
from toolscout.modes.discovery import ArgsModel, MetaTool, forgive_arguments, run_meta_tool, tool_result
from toolscout.modes.hints import Reach
from toolscout.render.text import INSTRUCTIONS_LIMIT, cut_text
from toolscout.render.toon import compressed_result_off_loop, data_text, schemas_as_typescript
from toolscout.upstream import Status, Upstream


class InspectArgs(ArgsModel):
    server_name: str = Field(description="A server from the list above.")
    tool_name: str | None = Field(None, description="One tool of it; omit for all its tools.")


class ExecArgs(ArgsModel):
    server_name: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any], description="The tool's own arguments.")
    max_output_chars: int | None = Field(None, ge=0)

    _forgive = field_validator("arguments", mode="before")(forgive_arguments)


COMPACT_STEPS: Phrasing = {
    "find_tool": "Call inspect with server_name {server!r} to see its tools.",
    "list_servers": "inspect's description lists every server.",
    "tool_details": "Call inspect with server_name and tool_name for its parameters, then retry.",
}


class CompactSurface:
    """The two tools `inspect` and `exec`; `inspect`'s description is the catalog, made again for `tools/list`."""

    per_client = False
    next_steps: Phrasing = COMPACT_STEPS

    instructions = (
        "toolscout fronts many MCP servers. inspect's description lists every server and tool; "
        "inspect(server_name, tool_name) gives a tool's schema, exec runs it."
    )

    def __init__(
        self,
        gateway: Gateway,
        *,
        schema_compression_enabled: bool = True,
        max_description_len: int = DEFAULT_MAX_DESCRIPTION_LEN,
        text_format: CompactFormat = "toon",
    ) -> None:
        self.gateway = gateway
        self.text_format: CompactFormat = text_format
        self.schema_compression_enabled = schema_compression_enabled
        self.max_description_len = max_description_len
        self._inspect = MetaTool("inspect", "", InspectArgs, handler=self._run_inspect)
        self._exec = MetaTool(
            "exec",
            "Execute an MCP tool: server_name, tool_name and its arguments (checked against its schema first).",
            ExecArgs,
            handler=self._run_exec,
            read_only=False,
            runs_tools=True,
        )
        self._by_name = {tool.name: tool for tool in (self._inspect, self._exec)}
        self._described = ScopedCache[str]()
        self._reach = Reach(gateway, [self._exec.name])

    def description(self) -> str:
        """Return `inspect`'s description: a header, then one block per server the request's scope sees, with the
        tools it sees.

        It is made again only when the catalog or a server's status or identity changed: every
        `tools/list` asks for it, and for a large catalog making it holds the event loop.
        """
        upstreams = self.gateway.upstreams
        key = (self.gateway.catalog.version, tuple((u.name, u.status, u.identity, u.description) for u in upstreams))
        return self._described.get(current_scope(), key, lambda: self._describe(upstreams))

    def _describe(self, upstreams: list[Upstream]) -> str:
        lines = ["Inspect available MCP tools and their schemas.", "", "Available tools:"]
        for upstream in upstreams:
            about = upstream.identity.instructions if upstream.identity and upstream.identity.instructions else None
            # Its own words only: one made from its tools would say again what the lines below list.
            about = cut_text(about or upstream.own_description, INSTRUCTIONS_LIMIT)
            head = f"  Server: {upstream.name}" + (f" - {about}" if about else "")
            # An idle server's tools are called as any others (it connects for the call): only a
            # server that cannot answer now is marked, so that the model knows before it calls.
            if upstream.status not in (Status.CONNECTED, Status.IDLE):
                head += f" [{upstream.status.value}]"
            lines.append(head)
            for tool in self.gateway.visibility.tools(current_scope(), upstream.name, include_hidden=False):
                lines.append(f"    - {tool.name}: {tool.summary}" if tool.summary else f"    - {tool.name}")
        return "\n".join(lines)

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        # The description is the catalog: give servers that are still starting their moment first.
        await self.gateway.settle_startup()
        inspect = self._inspect.definition()
        inspect.description = self.description()
        return [inspect, self._exec.definition().model_copy(update={"annotations": self._reach.annotations()})]

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        return await run_meta_tool(self._by_name, self.gateway, name, arguments)

    def native(self, name: str) -> bool:
        return False

    async def _run_inspect(self, gateway: Gateway, args: InspectArgs) -> types.CallToolResult:
        if args.tool_name is None:
            entries = await gateway.tools(args.server_name)
        else:
            entries = [await gateway.tool(args.server_name, args.tool_name)]
        tools: list[dict[str, Any]] = []
        for entry in entries:
            data: dict[str, Any] = {
                "name": entry.name,
                "description": entry.description,
                "input_schema": entry.input_schema,
            }
            if entry.output_schema is not None:
                data["output_schema"] = entry.output_schema
            if entry.tool.annotations is not None:
                data["annotations"] = entry.tool.annotations.model_dump(by_alias=True, exclude_none=True)
            tools.append(data)
        shown = tools
        if self.schema_compression_enabled:
            shown = [schemas_as_typescript(tool, max_description_len=self.max_description_len) for tool in tools]
        payload: dict[str, Any] = {"server": args.server_name, "tools": tools}
        text: dict[str, Any] = {"server": args.server_name, "tools": shown}
        if args.tool_name is not None:
            payload = {"server": args.server_name, **tools[0]}
            text = {"server": args.server_name, **shown[0]}
        # As in MCPX: the text is TOON for the model, structuredContent stays raw.
        return tool_result(payload, data_text(text, self.text_format))

    async def _run_exec(self, gateway: Gateway, args: ExecArgs) -> types.CallToolResult:
        # Compressed before the caps: they count what the model reads, and the server's JSON is
        # whole when it is parsed.
        return await gateway.execute(
            args.server_name,
            args.tool_name,
            args.arguments,
            max_output_chars=args.max_output_chars,
            shape=self._compressed,
        )

    async def _compressed(self, result: types.CallToolResult) -> types.CallToolResult:
        return await compressed_result_off_loop(result, self.text_format)
