"""A tool registered at run time as a callback URL (spec 002's register-component), served as a real
MCP server of one tool, in-process: listing it answers its registered definition, and calling it
POSTs the arguments as a JSON object to the URL, whose answer must be an MCP tool result
(`{"content": [...], "structuredContent"?, "isError"?}`).

Being an MCP server like any other, the tool goes through the gateway's one path: the catalog and
search index, scopes, argument validation against its input schema (before anything is POSTed),
output caps and the audit log. Whatever goes wrong at the callback (refused, unreachable, too slow,
a non-2xx status, an answer that is not a tool result) comes back as an `isError` result saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
import httpx2
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from pydantic import ValidationError

from toolscout.masking import mask_text
from toolscout.upstream.remote import shared_ssl_context
from toolscout.upstream.transport import UpstreamTarget

MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The largest callback answer read; a larger one is an error result (output caps apply downstream)."""
_PARSED_ON_LOOP_BYTES = 64 * 1024
"""A callback answer larger than this is parsed in a worker thread, so that other clients are answered meanwhile."""
_QUOTED_BODY_CHARS = 300
"""How much of a failed callback's body an error result quotes."""


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _quote(body: bytes) -> str:
    text = body[:_QUOTED_BODY_CHARS].decode("utf-8", errors="replace").strip()
    return mask_text(text) + ("…" if len(body) > _QUOTED_BODY_CHARS else "")


def tool_result(status: int, body: bytes) -> types.CallToolResult:
    """What a callback's answer (`status`, `body`) means as a tool result."""
    if not 200 <= status < 300:
        said = f": {_quote(body)}" if body.strip() else ""
        return _failed(f"The tool's callback answered HTTP {status}{said}")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        problem = "is not JSON"
    else:
        try:
            return types.CallToolResult.model_validate(data)
        except ValidationError as exc:
            problem = f"is not an MCP tool result ({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})"
    return _failed(
        f'The tool\'s callback answered with a body that {problem}; it must answer {{"content": [...]}} '
        f"(optionally structuredContent and isError). It said: {_quote(body)}"
    )


async def post_arguments(url: str, arguments: Mapping[str, Any], *, within: float, tool: str) -> types.CallToolResult:
    """POST `arguments` to the callback `url` and turn its answer into a tool result (never raises
    for anything the callback does)."""
    shown = mask_text(url)
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(within), verify=await shared_ssl_context()) as http,
            http.stream(
                "POST",
                url,
                json=dict(arguments),
                headers={"accept": "application/json", "x-toolscout-tool": tool},
            ) as response,
        ):
            too_large = _failed(
                f"The tool's callback at {shown} answered more than {MAX_ANSWER_BYTES} bytes, the most a "
                "callback may answer; it must answer a smaller tool result."
            )
            declared = response.headers.get("content-length", "")
            if declared.strip().isdigit() and int(declared) > MAX_ANSWER_BYTES:
                return too_large  # refused before a byte of it is read
            # Read into one growing buffer (never `bytes +=`, which copies it all for every chunk),
            # and no further than the cap, whatever the header said.
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    return too_large
        if len(body) > _PARSED_ON_LOOP_BYTES:  # parsing and validating a large answer: off the event loop
            return await anyio.to_thread.run_sync(tool_result, response.status_code, bytes(body))
        return tool_result(response.status_code, bytes(body))
    except httpx2.TimeoutException:
        return _failed(f"The tool's callback at {shown} did not answer within {within:g}s.")
    except httpx2.HTTPError as exc:
        reason = mask_text(str(exc)) or type(exc).__name__
        return _failed(f"The tool's callback at {shown} could not be reached: {reason}")


def callback_server(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    callback_url: str,
    *,
    timeout: float,
) -> Server[Any]:
    """An MCP server (low-level, run in-process) whose one tool, `name`, POSTs to `callback_url`."""
    tool = types.Tool(name=name, description=description, input_schema=dict(input_schema))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != name:  # the gateway sends only names this server listed; a direct client might not
            return _failed(f"Unknown tool {params.name!r}: this server has only {name!r}.")
        return await post_arguments(callback_url, params.arguments or {}, within=timeout, tool=name)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


class CallbackToolUpstream:
    """The `UpstreamTransport` of a callback tool: its one-tool server, run in-process."""

    def __init__(self, server: Server[Any], callback_url: str) -> None:
        self._server = server
        self._url = callback_url

    @property
    def label(self) -> str:
        return f"callback: {mask_text(self._url)}"

    def diagnostics(self) -> str | None:
        return None

    def target(self, on_closed: Callable[[], None]) -> UpstreamTarget:
        return self._server
