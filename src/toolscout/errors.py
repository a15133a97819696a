"""One rooted exception tree for everything toolscout reports.

Each class carries a stable `code` string. Code inside the gateway raises these;
only the edges (the MCP face and the CLI) turn them into MCP results or exit codes.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ToolscoutError(Exception):
    """Base of every error toolscout raises on purpose."""

    code: ClassVar[str] = "TOOLSCOUT_ERROR"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = {k: v for k, v in details.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """The error as the `error` object of a failed meta-tool result."""
        return {"code": self.code, "message": self.message, **self.details}


class ConfigError(ToolscoutError):
    """The configuration cannot be found, parsed or validated."""

    code = "CONFIGURATION_ERROR"


class ServerNotFound(ToolscoutError):
    """No upstream server of that name is configured."""

    code = "SERVER_NOT_FOUND"


class ServerUnavailable(ToolscoutError):
    """The upstream server is configured but not connected (connecting, failed or disabled)."""

    code = "SERVER_UNAVAILABLE"


class ToolNotFound(ToolscoutError):
    """The upstream server has no tool of that name."""

    code = "TOOL_NOT_FOUND"


class ToolDisabled(ToolscoutError):
    """The tool exists but `toolRules` disable it."""

    code = "TOOL_DISABLED"


class ArgumentsInvalid(ToolscoutError):
    """The arguments do not satisfy the tool's input schema."""

    code = "VALIDATION_ERROR"


class UpstreamError(ToolscoutError):
    """The upstream failed while serving a request (protocol error, lost connection)."""

    code = "TOOL_EXECUTION_ERROR"


class CallTimeout(ToolscoutError):
    """The upstream did not answer within the server's `timeout`."""

    code = "TIMEOUT"


class InvalidRequest(ToolscoutError):
    """A meta-tool was called with arguments it cannot use."""

    code = "INVALID_ARGUMENTS"


class LoadLimitReached(ToolscoutError):
    """Dynamic mode: loading more tools would pass the configured `maxLoadedTools`."""

    code = "LOAD_LIMIT_REACHED"


class ResourceNotFound(ToolscoutError):
    """A resource URI the gateway cannot route to a server (not one of its `toolscout://` URIs)."""

    code = "RESOURCE_NOT_FOUND"


class ResourceDisabled(ToolscoutError):
    """The resource (or the template it comes from) exists but `toolRules` of kind `resource` disable it."""

    code = "RESOURCE_DISABLED"


class PromptNotFound(ToolscoutError):
    """No upstream offers a prompt of that gateway name."""

    code = "PROMPT_NOT_FOUND"


class PromptDisabled(ToolscoutError):
    """The prompt exists but `toolRules` of kind `prompt` disable it."""

    code = "PROMPT_DISABLED"


class AmbiguousName(ToolscoutError):
    """An upstream's own tool, prompt or resource name that several servers have: the gateway's name is needed."""

    code = "AMBIGUOUS_NAME"


def error_from_dict(data: dict[str, Any]) -> ToolscoutError:
    """The error a failed result's `error` object describes (`to_dict`'s output, read back on the
    other side of MCP), as the class of its code; an unknown code becomes a plain `ToolscoutError`."""
    by_code: dict[str, type[ToolscoutError]] = {}
    pending: list[type[ToolscoutError]] = [ToolscoutError]
    while pending:
        kind = pending.pop()
        if "code" in vars(kind):  # (a subclass without a code of its own is not what a code names)
            by_code[kind.code] = kind
        pending.extend(kind.__subclasses__())
    code, message = data.get("code"), data.get("message")
    details = {k: v for k, v in data.items() if k not in ("code", "message")}
    kind = by_code.get(code, ToolscoutError) if isinstance(code, str) else ToolscoutError
    return kind(message if isinstance(message, str) else "the request failed", **details)
