"""One rooted exception tree for everything toolscout reports.

Each class carries a stable `code` string. Code inside the gateway raises these;
only the edges (the MCP face and the CLI) turn them into MCP results or exit codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from toolscout.masking import mask_text

NextStep = Literal["find_tool", "list_servers", "tool_details"]
"""What to do after an error, said by each edge in its reader's words (`Phrasing`)."""
Phrasing = Mapping[NextStep, str]
"""Each next step as a sentence for one kind of reader; `{server}` and `{tool}` are filled in."""

AGENT_STEPS: Phrasing = {
    "find_tool": "Call search_tools or list_tools to find the right name.",
    "list_servers": "Call list_mcp_servers to see the configured servers.",
    "tool_details": "Call get_tool_details for the parameters, then retry.",
}
"""The next steps for an agent with the meta-tools (discovery and dynamic modes)."""


class ToolscoutError(Exception):
    """Base of every error toolscout raises on purpose.

    `message` says what went wrong; `next_step`, if any, what to do about it, which each edge
    words for its reader (`explain`): an agent is told which meta-tool to call, a person at the
    terminal which command to run.
    """

    code: ClassVar[str] = "TOOLSCOUT_ERROR"

    def __init__(self, message: str, *, next_step: NextStep | None = None, **details: Any) -> None:
        # Every message reaches a client, a terminal or a log: secrets in it (a URL's password, a
        # token an upstream echoed) are masked here, where every error passes.
        message = mask_text(message)
        super().__init__(message)
        self.message = message
        self.next_step: NextStep | None = next_step
        self.details: dict[str, Any] = {k: v for k, v in details.items() if v is not None}

    def explain(self, phrasing: Phrasing = AGENT_STEPS) -> str:
        """The message with its next step, in the words of `phrasing`'s reader."""
        step = phrasing.get(self.next_step) if self.next_step is not None else None
        if not step:
            return self.message
        names = {"server": self.details.get("server", "SERVER"), "tool": self.details.get("tool", "TOOL")}
        return f"{self.message} {step.format_map(names)}"

    def to_dict(self, phrasing: Phrasing = AGENT_STEPS) -> dict[str, Any]:
        """The error as the `error` object of a failed meta-tool result (or of a command's --json)."""
        step = {"nextStep": self.next_step} if self.next_step is not None else {}
        return {"code": self.code, "message": self.explain(phrasing), **step, **self.details}

    def __str__(self) -> str:
        return self.explain()


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


class UpstreamRefused(UpstreamError):
    """The upstream answered the request with a JSON-RPC error of its own.

    `upstreamCode` (and `upstreamData`, when it sent any) are in the details; `upstream_message` is its
    own message, so that a tool that stands for the upstream's (passthrough) can pass the same error on.
    """

    def __init__(self, message: str, *, upstream_message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.upstream_message = mask_text(upstream_message)  # passed on to a client, as the message is


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
    code, message, step = data.get("code"), data.get("message"), data.get("nextStep")
    details = {k: v for k, v in data.items() if k not in ("code", "message", "nextStep")}
    kind = by_code.get(code, ToolscoutError) if isinstance(code, str) else ToolscoutError
    text = message if isinstance(message, str) else "the request failed"
    if step not in AGENT_STEPS:
        return kind(text, **details)
    # Worded for an agent on the other side: the reader here gets the step in its own words instead.
    return _without_agent_step(kind(text, next_step=step, **details))


def _without_agent_step(error: ToolscoutError) -> ToolscoutError:
    """`error` whose message still ends with its next step in an agent's words, without that sentence."""
    step = AGENT_STEPS.get(error.next_step) if error.next_step is not None else None
    if step:
        names = {"server": error.details.get("server", "SERVER"), "tool": error.details.get("tool", "TOOL")}
        sentence = " " + step.format_map(names)
        if error.message.endswith(sentence):
            error.message = error.message[: -len(sentence)]
    return error
