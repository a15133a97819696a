"""The edge where toolscout's errors meet the protocol: the only place a `ToolscoutError` becomes an
MCP error or an `isError` result.

* A tool call (`tools/call`) that fails becomes an `isError` result with
  `structuredContent: {"success": false, "error": {...}}`, its next steps worded for the tools the
  agent has (`call_result`). An upstream's own protocol error on one of its own tools (passthrough,
  a loaded tool) is passed on as the same MCP error (`passed_on`); a name the client's tool list
  does not have is the protocol's unknown tool, -32602 (`unknown_tool_error`).
* Any other request (resources, prompts, completions, subscriptions) that fails becomes an MCP
  error with the error as `data` (`mcp_errors`); an upstream's own error keeps its code.
* A bug of ours becomes a clear failure for the client and a traceback for the log, never a
  session taken down.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import contextmanager
from typing import TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolscout.errors import (
    AGENT_STEPS,
    AmbiguousName,
    InvalidArguments,
    Phrasing,
    PromptDisabled,
    PromptNotFound,
    ResourceDisabled,
    ResourceNotFound,
    ServerNotFound,
    ToolNotFound,
    ToolscoutError,
    UpstreamRefused,
)
from toolscout.render.text import error_text

logger = logging.getLogger(__name__)

R = TypeVar("R")


def error_result(error: ToolscoutError, next_steps: Phrasing = AGENT_STEPS, /, **context: str) -> types.CallToolResult:
    """A failed meta-tool call as the agent sees it (`next_steps` in terms of the tools it has)."""
    payload = {**{k: v for k, v in context.items() if k not in error.details}, **error.to_dict(next_steps)}
    return types.CallToolResult(
        content=[types.TextContent(text=error_text(payload))],
        structured_content={"success": False, "error": payload},
        is_error=True,
    )


_INVALID_PARAMS_ERRORS = (
    AmbiguousName,
    ServerNotFound,
    ResourceNotFound,
    ResourceDisabled,
    PromptNotFound,
    PromptDisabled,
    InvalidArguments,
)
"""What the spec answers with -32602 (an unknown resource or prompt); other failures are -32603."""


def mcp_error(error: ToolscoutError) -> MCPError:
    """A failed resources/prompts request as the client sees it: an upstream's own error keeps its code."""
    upstream = error.details.get("upstreamCode")
    if isinstance(upstream, int):
        code = upstream
    else:
        code = types.INVALID_PARAMS if isinstance(error, _INVALID_PARAMS_ERRORS) else types.INTERNAL_ERROR
    return MCPError(code=code, message=error.explain(), data=error.to_dict())


def passed_on(error: UpstreamRefused) -> MCPError:
    """An upstream's own protocol error on one of its tools, as that upstream sent it (code, message, data)."""
    code = error.details.get("upstreamCode")
    return MCPError(
        code=code if isinstance(code, int) else types.INTERNAL_ERROR,
        message=error.upstream_message,
        data=error.details.get("upstreamData"),
    )


def unknown_tool_error(error: ToolNotFound) -> MCPError:
    """A `tools/call` name the client's tool list does not have: the protocol's unknown tool (-32602)."""
    return MCPError(code=types.INVALID_PARAMS, message=error.message)


def internal_failure(what: str, exc: Exception) -> str:
    """A bug of ours while serving `what`: logged with its traceback, and said to the client in one line."""
    logger.exception("%s failed unexpectedly", what)
    return f"Internal error in {what}: {type(exc).__name__}: {exc}"


@contextmanager
def mcp_errors(method: str) -> Generator[None]:
    """Turn what goes wrong while serving `method` into an MCP error with a clear message."""
    try:
        yield
    except ToolscoutError as exc:
        raise mcp_error(exc) from None
    except MCPError:
        raise
    except Exception as exc:  # a bug of ours: a clear failure for the client, the traceback for the log
        raise MCPError(code=types.INTERNAL_ERROR, message=internal_failure(method, exc)) from None


def refuse_cursor(params: types.PaginatedRequestParams | None) -> None:
    """Refuse a list request's cursor: toolscout answers every list in one page, so none is ever valid."""
    if params is not None and params.cursor is not None:
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown cursor: toolscout answers every list in one page.")


async def call_result(
    call: Callable[[], Awaitable[R]],
    *,
    tool: str,
    native: bool,
    next_steps: Phrasing,
    context: Mapping[str, str],
) -> R | types.CallToolResult:
    """What `call()` (one `tools/call` of `tool`) returns, or its failure as the agent sees it.

    `native`: the name is an upstream's own tool (passthrough, a loaded tool), whose upstream's
    protocol error is passed on as it was. `context` (the server and tool the agent named) goes
    into the error where the error itself does not say.
    """
    try:
        return await call()
    except UpstreamRefused as exc:
        if native:
            raise passed_on(exc) from None
        return error_result(exc, next_steps, **context)
    except ToolscoutError as exc:
        return error_result(exc, next_steps, **context)
    except MCPError:  # a protocol error of the request itself (rounds.py)
        raise
    except Exception as exc:
        # A bug of ours must not take the session down; the agent gets a clear failure instead.
        return error_result(ToolscoutError(internal_failure(tool, exc)), next_steps, **context)
