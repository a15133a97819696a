"""Running one upstream tool the way an agent does in each exposure mode."""

from __future__ import annotations

from typing import Any, cast

import mcp_types as types
from mcp import Client

from toolscout.config.models import ModeName
from toolscout.naming import native_names


async def call_in_mode(
    client: Client, mode: ModeName, server: str, tool: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    """Call `server`'s `tool` through the gateway's surface of `mode`, as a model would."""
    native = native_names([(server, tool)])[(server, tool)]
    match mode:
        case "discovery":
            return await client.call_tool("execute_tool", {"server": server, "tool": tool, "arguments": arguments})
        case "compact":
            return await client.call_tool("exec", {"server_name": server, "tool_name": tool, "arguments": arguments})
        case "passthrough":
            listed = {t.name for t in (await client.list_tools()).tools}
            # `server__tool` in front of several servers, the tool's own name in front of one (`toolNames: auto`).
            name = native if native in listed else tool
            assert name in listed, (name, listed)
            return await client.call_tool(name, arguments)
        case "dynamic":
            if client.protocol_version != "2026-07-28":  # (at 2026-07-28 nothing loads: the native name works)
                loaded = await client.call_tool("load_tools", {"tools": [{"server": server, "tool": tool}]})
                assert not loaded.is_error, loaded
                assert native in {t.name for t in (await client.list_tools()).tools}
            return await client.call_tool(native, arguments)
        case "smart":
            # The explicit second round (a tool named as its answers name them), confirmed: the
            # upstream's own result, as the answer's `execution_result` passes it through.
            request = {"request": f"run {tool}", "tool": f"{server}/{tool}", "arguments": arguments, "confirm": True}
            answer = await client.call_tool("smart_tool_discovery", request)
            ran = cast(dict[str, Any], answer.structured_content or {}).get("execution_result")
            if answer.is_error and ran is None:
                return answer  # refused before it ran (its error is the gateway's, as in the other modes)
            assert isinstance(ran, dict), answer
            executed = cast(dict[str, Any], ran)
            return types.CallToolResult.model_validate(
                {
                    "content": executed["content"],
                    "structuredContent": executed.get("structuredContent"),
                    "isError": executed["isError"],
                }
            )
        case "code":
            # One program that makes the call and returns what it is worth to a program (its
            # structuredContent, else its text as JSON or as it is), rebuilt here as a result.
            program = f"await call_tool({server!r}, {tool!r}, {arguments!r})"
            answer = await client.call_tool("run_code", {"code": program})
            if answer.is_error:
                return answer
            value = cast(dict[str, Any], answer.structured_content or {}).get("result")
            structured = cast(dict[str, Any], value) if isinstance(value, dict) else None
            return types.CallToolResult(content=answer.content, structured_content=structured)
