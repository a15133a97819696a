"""An in-process upstream server exercising every kind of tool result.

Built on the SDK's low-level `Server` and connected through the SDK's in-memory
transport, so tests see real protocol traffic without processes.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

WEATHER_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}

TOOLS = [
    types.Tool(
        name="get_weather",
        title="Weather",
        description="Get the current weather for a city. Returns the temperature in Celsius.",
        input_schema={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "units": {"enum": ["metric", "imperial"], "default": "metric"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        output_schema=WEATHER_OUTPUT_SCHEMA,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
    ),
    types.Tool(
        name="render_chart",
        description="Render a chart of a series of numbers as an image, with a sound and the source data.",
        input_schema={"type": "object", "properties": {"values": {"type": "array", "items": {"type": "number"}}}},
    ),
    types.Tool(
        name="fail_politely",
        description="Always fails with an error result (isError) explaining why.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="protocol_error",
        description="Always answers with a JSON-RPC error instead of a result.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="wait_forever",
        description="Never answers until cancelled.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="rendezvous",
        description="Answers only once `parties` calls are in flight at the same time.",
        input_schema={"type": "object", "properties": {"parties": {"type": "integer", "minimum": 1}}},
    ),
    types.Tool(
        name="learn_trick",
        description="Adds a new tool to this server and announces that its tool list changed.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    ),
    types.Tool(
        name="delete_city",
        description="Delete a city from the weather database.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    ),
]


class Kitchen:
    """The server plus the events tests wait on."""

    def __init__(self, name: str = "kitchen") -> None:
        self.cancelled = anyio.Event()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._arrived = 0
        self._all_arrived = anyio.Event()
        self.tools = list(TOOLS)
        self._bus = InMemorySubscriptionBus()
        self.server: Server[Any] = Server(
            name,
            version="1.2.3",
            instructions="Kitchen-sink test server: weather, charts and failures.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = params.arguments or {}
        self.calls.append((params.name, args))
        if params.name == "get_weather":
            data = {"city": args["city"], "celsius": 21.5}
            return types.CallToolResult(
                content=[types.TextContent(text=f"21.5 °C in {args['city']}")],
                structured_content=data,
                _meta={"example.com/source": "kitchen"},
            )
        if params.name == "render_chart":
            return types.CallToolResult(
                content=[
                    types.TextContent(text="chart attached"),
                    types.ImageContent(data=TINY_PNG, mime_type="image/png"),
                    types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
                    types.EmbeddedResource(
                        resource=types.TextResourceContents(uri="data://series.csv", text="1,2,3", mime_type="text/csv")
                    ),
                    types.ResourceLink(uri="data://chart.png", name="chart", mime_type="image/png"),
                ]
            )
        if params.name == "learn_trick":
            self.tools.append(
                types.Tool(name=args["name"], description="A new trick.", input_schema={"type": "object"})
            )
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await self._bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[types.TextContent(text="learned")])
        if params.name == "fail_politely":
            return types.CallToolResult(content=[types.TextContent(text="the oven is off")], is_error=True)
        if params.name == "protocol_error":
            raise MCPError(code=types.INTERNAL_ERROR, message="kitchen on fire")
        if params.name == "wait_forever":
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled.set()
        if params.name == "rendezvous":
            self._arrived += 1
            if self._arrived >= int(args.get("parties", 1)):
                self._all_arrived.set()
            await self._all_arrived.wait()
            return types.CallToolResult(content=[types.TextContent(text="met")])
        return types.CallToolResult(content=[types.TextContent(text=f"did {params.name}")])
