"""A smart-mode gateway in process: an SDK client -> the gateway's MCP face (mode `smart`, or discovery
with `smartTool`) -> the bundled demo servers (units, text, files) and a small `vault` server whose
`purge_notes` is annotated destructive, all over the in-memory transport."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server

from tests.helpers.paths import node_path, npm_tool
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.models import LLMConfig, ModeName, SmartConfig
from toolscout.config.rules import RuleSet
from toolscout.demo import files, text, units
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.serve.server import build_server
from toolscout.smart.confirmation import Confirmations
from toolscout.upstream import InProcessUpstream, UpstreamSpec

SMART = "smart_tool_discovery"


def vault_server(purged: list[dict[str, Any]]) -> Server[Any]:
    """`purge_notes` (destructiveHint: true) appends its arguments to `purged` when run; `list_notes` is harmless."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="purge_notes",
                    description="Delete every note in a folder of the vault, permanently.",
                    input_schema={
                        "type": "object",
                        "properties": {"folder": {"type": "string", "description": "The folder to purge"}},
                        "required": ["folder"],
                    },
                    annotations=types.ToolAnnotations(destructive_hint=True),
                ),
                types.Tool(
                    name="list_notes",
                    description="List the notes in a folder of the vault.",
                    input_schema={"type": "object", "properties": {"folder": {"type": "string"}}},
                    annotations=types.ToolAnnotations(read_only_hint=True),
                ),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "purge_notes":
            purged.append(dict(params.arguments or {}))
            return types.CallToolResult(content=[types.TextContent(text="purged")])
        return types.CallToolResult(content=[types.TextContent(text="note-1, note-2")])

    return Server("vault", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def smart_gateway(
    *,
    rules: Sequence[ToolRule] = (),
    audit_path: Path | None = None,
    purged: list[dict[str, Any]] | None = None,
) -> AsyncGenerator[Gateway]:
    """The gateway over the demo servers and `vault`, connected (build clients with `smart_client`)."""
    specs = [
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("text", InProcessUpstream(text.build_server())),
        UpstreamSpec("files", InProcessUpstream(files.build_server())),
        UpstreamSpec("vault", InProcessUpstream(vault_server(purged if purged is not None else []))),
    ]
    audit = AuditLog(audit_path) if audit_path is not None else None
    async with Gateway(specs, rules=RuleSet(rules), audit=audit) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        yield gateway


def smart_server(
    gateway: Gateway,
    *,
    smart: SmartConfig | None = None,
    llm: LLMConfig | None = None,
    mode: ModeName = "smart",
    smart_tool: bool = False,
    memory_path: Path | None = None,
    confirmations: Confirmations | None = None,
) -> Server[Any]:
    """The MCP face of `gateway` in `mode` with these smart options (connect an SDK `Client` to it)."""
    options = SurfaceOptions(
        smart=smart or SmartConfig(),
        llm=llm,
        smart_tool=smart_tool,
        memory_path=memory_path,
        confirmations=confirmations,
    )
    return build_server(gateway, mode, options)


@asynccontextmanager
async def smart_client(
    gateway: Gateway,
    era: str,
    *,
    smart: SmartConfig | None = None,
    llm: LLMConfig | None = None,
    mode: ModeName = "smart",
    smart_tool: bool = False,
    memory_path: Path | None = None,
    confirmations: Confirmations | None = None,
    **client_options: Any,
) -> AsyncGenerator[Client]:
    """An SDK client of era `era` ("legacy": 2025-11-25, "auto": 2026-07-28) on a smart face of `gateway`;
    `client_options` go to `Client` (sampling_callback, elicitation_callback...)."""
    server = smart_server(
        gateway,
        smart=smart,
        llm=llm,
        mode=mode,
        smart_tool=smart_tool,
        memory_path=memory_path,
        confirmations=confirmations,
    )
    async with Client(server, mode=era, **client_options) as client:
        yield client


@asynccontextmanager
async def everything_gateway() -> AsyncGenerator[Gateway]:
    """A gateway over `@modelcontextprotocol/server-everything` (tools/npm) as the stdio server
    `everything`, connected."""
    server = {"command": str(npm_tool("mcp-server-everything")), "args": ["stdio"], "env": {"PATH": node_path()}}
    async with Gateway.from_config(GatewayConfig.model_validate({"mcpServers": {"everything": server}})) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        yield gateway
