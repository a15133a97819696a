"""What went wrong with an upstream, in one line: the exception that matters, and how to tell it."""

from __future__ import annotations

from typing import cast

import anyio
import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError


def innermost(exc: BaseException) -> BaseException:
    """The meaningful exception inside task groups' exception groups (the first that is not a cancellation)."""
    while isinstance(exc, BaseExceptionGroup):
        members: tuple[BaseException, ...] = cast(BaseExceptionGroup[BaseException], exc).exceptions
        cancelled = anyio.get_cancelled_exc_class()
        exc = next((e for e in members if not isinstance(e, cancelled)), members[0])
    return exc


def describe_exception(exc: BaseException) -> str:
    """A one-line reason for a failure, from the innermost meaningful exception."""
    exc = innermost(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc} (is it installed and on PATH?)"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"HTTP transport error: {exc or type(exc).__name__}"
    if isinstance(exc, MCPError):
        return f"{exc.error.message} (MCP error {exc.error.code})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def session_expired(exc: MCPError) -> bool:
    """Whether an HTTP server said it does not know our session (404 at the transport)."""
    message = exc.error.message.lower()
    return exc.error.code == types.INVALID_REQUEST and (
        "session not found" in message or "session terminated" in message
    )


def connection_gone(exc: MCPError) -> bool:
    """Whether an error says the connection itself is gone: the server forgot our session (it
    restarted), or the SDK's word for a transport that went away (`CONNECTION_CLOSED`)."""
    return session_expired(exc) or exc.error.code == types.CONNECTION_CLOSED
