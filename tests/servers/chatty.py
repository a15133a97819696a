"""A test upstream that logs, asks its client's model, or waits, as told; in process or over stdio.

python -m tests.servers.chatty    # serves one client on stdin/stdout (handshake era)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import ServerMessageMetadata

TOOLS = ("log", "ask", "hold", "release", "hang")


class Chatty:
    """The server plus the events tests wait on."""

    def __init__(self) -> None:
        self.holding = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = anyio.Event()
        # Logging is deprecated at 2026-07-28, and sending logs is what this server is for.
        self.server: Server[Any] = Server(  # pyright: ignore[reportDeprecated]
            "chatty",
            on_list_tools=self._list,
            on_call_tool=self._call,
            on_set_logging_level=self._set_level,
        )

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()

    async def _list(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=n, description=f"{n}.", input_schema={"type": "object"}) for n in TOOLS]
        )

    async def _call(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "log":
            await ctx.session.send_log_message("warning", "oven preheating", "chatty", ctx.request_id)  # pyright: ignore[reportDeprecated]
        elif params.name == "ask":
            if (params.arguments or {}).get("after_hold"):
                await self.holding.wait()  # so that another call is surely in flight
            return await self._ask(ctx)
        elif params.name == "hold":
            self.holding.set()
            await ctx.session.report_progress(0, 1, "holding")  # tells a caller that asked that the call arrived
            await self.release.wait()
        elif params.name == "release":
            self.release.set()
        elif params.name == "hang":
            self.holding.set()
            await ctx.session.report_progress(0, 1, "hanging")  # tells the caller the call arrived
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled.set()
        return types.CallToolResult(content=[types.TextContent(text="done")])

    async def _ask(self, ctx: ServerRequestContext[Any]) -> types.CallToolResult:
        message = types.SamplingMessage(role="user", content=types.TextContent(text="hi"))
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=5))
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        try:
            reply = await ctx.session.send_request(request, types.CreateMessageResult, metadata=related)
        except Exception as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        assert isinstance(reply.content, types.TextContent)
        return types.CallToolResult(content=[types.TextContent(text=reply.content.text)])


async def main() -> None:
    chatty = Chatty()
    async with stdio_server() as (read, write):
        await chatty.server.run(read, write, chatty.server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) > 1:  # where to write the pid, for tests that kill it
        Path(sys.argv[1]).write_text(str(os.getpid()))
    anyio.run(main)
