"""Code mode's test gateway: the kitchen-sink server, the demo notes server and a `probe` server, behind
a face in code mode (or discovery/dynamic with `codeTool`), driven by a real SDK client."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server

from tests.servers.kitchen import Kitchen
from toolscout.config import ToolRule
from toolscout.config.models import CodeConfig, ModeName
from toolscout.config.rules import RuleSet
from toolscout.demo import notes
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.core import Gateway
from toolscout.modes.base import SurfaceOptions
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec


class Probe:
    """A server whose `started` tool tells the test a program is running, whose `echo_json` answers its
    arguments as JSON text, and whose `blob` returns `size` characters (a huge result on demand)."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.server = Server("probe", on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="started",
                    description="Say that the program started.",
                    input_schema={"type": "object", "properties": {}},
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                ),
                types.Tool(
                    name="echo_json",
                    description="Return the arguments as JSON text (no structuredContent).",
                    input_schema={"type": "object"},
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                ),
                types.Tool(
                    name="blob",
                    description="Return size characters of text.",
                    input_schema={"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                ),
            ]
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "started":
            self.started.set()
            return types.CallToolResult(content=[types.TextContent(text="ok")])
        if params.name == "echo_json":
            return types.CallToolResult(content=[types.TextContent(text=json.dumps(params.arguments or {}))])
        size = int((params.arguments or {}).get("size", 0))
        return types.CallToolResult(content=[types.TextContent(text="x" * size)])


@asynccontextmanager
async def code_gateway(
    *, rules: Sequence[ToolRule] = (), audit_path: Path | None = None, probe: Probe | None = None
) -> AsyncGenerator[Gateway]:
    """A connected gateway over `kitchen`, the demo `notes` server (in memory) and `probe`."""
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
        UpstreamSpec("notes", InProcessUpstream(notes.build_server())),
        UpstreamSpec("probe", InProcessUpstream((probe or Probe()).server)),
    ]
    audit = AuditLog(audit_path) if audit_path is not None else None
    async with Gateway(specs, rules=RuleSet(rules), audit=audit) as gateway:
        with anyio.fail_after(20):
            await gateway.settle()
        yield gateway


@asynccontextmanager
async def code_client(
    gateway: Gateway,
    era: str = "legacy",
    *,
    mode: ModeName = "code",
    code: CodeConfig | None = None,
    code_tool: bool = False,
    **client_options: Any,
) -> AsyncGenerator[Client]:
    """An SDK client on a face of `gateway` in `mode` (`client_options` go to `Client`: elicitation_callback...)."""
    options = SurfaceOptions(code=code or CodeConfig(), code_tool=code_tool)
    async with Client(build_server(gateway, mode, options), mode=era, **client_options) as client:
        yield client


async def run(client: Client, code: str, **arguments: Any) -> types.CallToolResult:
    """`run_code(code, ...)` through the client, bounded in time."""
    with anyio.fail_after(60):
        return await client.call_tool("run_code", {"code": code, **arguments})


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """A failed result's `structuredContent.error` (the gateway's refusals and program failures)."""
    assert result.is_error, text_of(result)
    data = cast(dict[str, Any], result.structured_content)
    return cast(dict[str, Any], data["error"])


def audit_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
