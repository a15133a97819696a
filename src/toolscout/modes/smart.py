"""Smart mode (spec 004): one tool, `smart_tool_discovery`, that takes a request in plain words and
runs the right tool with arguments read from it (modes/smart_flow.py). In discovery mode
(`smartTool: true`) the same tool joins the five meta-tools."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolscout.errors import Phrasing
from toolscout.gateway.core import Gateway
from toolscout.modes.client import SurfaceClient
from toolscout.modes.meta_tool import MetaTool, run_meta_tool
from toolscout.modes.smart_answers import SMART_STEPS
from toolscout.modes.smart_args import SmartArgs
from toolscout.modes.smart_flow import SmartDiscovery

SMART_TOOL = "smart_tool_discovery"

DESCRIPTION = (
    "Do a task on the connected MCP servers from plain words: picks the tool, reads its arguments from "
    "the request, runs it, returns its result and how it chose. Unsure or missing values: nothing runs, "
    "the answer says what to add; then call again with tool and arguments."
)


def smart_tool(smart: SmartDiscovery) -> MetaTool:
    """`smart_tool_discovery` over `smart`."""

    async def run(_: Gateway, args: SmartArgs) -> types.CallToolResult:
        return await smart.run(args)

    return MetaTool(SMART_TOOL, DESCRIPTION, SmartArgs, handler=run, read_only=False)


class SmartSurface:
    """The one tool of smart mode."""

    per_client = False
    next_steps: Phrasing = SMART_STEPS

    instructions = (
        "toolscout fronts many MCP servers behind one tool: call smart_tool_discovery with what you want done, "
        "in plain words. Its answer names the tool it ran and how sure it was; to run a suggested tool, "
        "call it again with tool and arguments."
    )

    def __init__(self, gateway: Gateway, smart: SmartDiscovery) -> None:
        self.gateway = gateway
        self.smart = smart
        self._tools = {SMART_TOOL: smart_tool(smart)}
        self._definitions = [tool.definition() for tool in self._tools.values()]

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return self._definitions

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        return await run_meta_tool(self._tools, self.gateway, name, arguments)

    def native(self, name: str) -> bool:
        return False
