"""The one rooted exception tree for everything toolscout reports.

Each concrete class carries a stable `code` string (its name says the same); a few also carry an
`alias`, the code other discovery gateways give the same failure, sent beside it as `codeAlias`
(`SERVER_CONNECTION_ERROR`, `TOOL_EXECUTION_TIMEOUT`, `TOOL_VALIDATION_ERROR`). Code inside the
gateway raises these; only the edges (`serve/server.py` for MCP, the CLI for a terminal) turn them
into MCP errors, `isError` results or exit codes.

    ToolscoutError                 TOOLSCOUT_ERROR
    ├── ConfigurationError         CONFIGURATION_ERROR
    │   └── ServerNameTaken        SERVER_NAME_TAKEN    (a server name another owner has)
    ├── SignInFailed               SIGN_IN_FAILED       (`auth login` could not sign in to a server)
    ├── Interrupted                INTERRUPTED          (a command stopped by Ctrl-C before it finished)
    ├── ProgramFailed              CODE_ERROR           (a `run_code` program: syntax, refused, raised)
    │   └── ProgramLimitExceeded   CODE_LIMIT_EXCEEDED  (its time, memory, tool calls or output)
    ├── NotFound
    │   ├── ServerNotFound         SERVER_NOT_FOUND
    │   ├── ToolNotFound           TOOL_NOT_FOUND
    │   ├── ResourceNotFound       RESOURCE_NOT_FOUND
    │   └── PromptNotFound         PROMPT_NOT_FOUND
    ├── Disabled
    │   ├── ToolDisabled           TOOL_DISABLED
    │   ├── ToolQuarantined        TOOL_QUARANTINED     (its definition changed since it was pinned)
    │   ├── ToolUnusable           TOOL_UNUSABLE        (its input schema cannot be validated within the budget)
    │   ├── ResourceDisabled       RESOURCE_DISABLED
    │   └── PromptDisabled         PROMPT_DISABLED
    ├── Invalid
    │   ├── InvalidArguments       INVALID_ARGUMENTS    (a meta-tool's own arguments)
    │   ├── ArgumentValidationError VALIDATION_ERROR    (an upstream tool's arguments vs its schema;
    │   │                                                alias TOOL_VALIDATION_ERROR)
    │   ├── ValidationTooCostly    VALIDATION_TOO_COSTLY (checking them would take more than the budget)
    │   ├── AmbiguousName          AMBIGUOUS_NAME
    │   ├── LoadLimitReached       LOAD_LIMIT_REACHED
    │   ├── NotInThisProtocol      NOT_IN_THIS_PROTOCOL (a tool the client's protocol era cannot have)
    │   └── GatewayNotOpen         GATEWAY_NOT_OPEN     (the Python API's Scout used outside its `async with`)
    ├── Unavailable
    │   ├── ServerUnavailable      SERVER_UNAVAILABLE   (alias SERVER_CONNECTION_ERROR)
    │   │   └── SignInRequired     SIGN_IN_REQUIRED     (an OAuth upstream needs `toolscout auth login`)
    │   ├── CallTimeout            TIMEOUT              (alias TOOL_EXECUTION_TIMEOUT)
    │   ├── LLMUnavailable         LLM_UNAVAILABLE      (smart mode's LLM failed: the next method decides)
    │   ├── EmbeddingUnavailable   EMBEDDING_UNAVAILABLE (the embedding provider failed: the packaged model embeds)
    │   ├── SandboxUnavailable     SANDBOX_UNAVAILABLE  (`run_code`'s sandbox could not start or died)
    │   └── RegistryUnavailable    REGISTRY_UNAVAILABLE (the shared registry, Redis, cannot be reached)
    └── UpstreamError              UPSTREAM_ERROR       (a read, get or listing failed upstream)
        ├── ToolExecutionError     TOOL_EXECUTION_ERROR (a tool call failed upstream)
        ├── ScopeRequired          SCOPE_REQUIRED       (the upstream wants a wider sign-in for that call or read)
        └── UpstreamRefused        UPSTREAM_ERROR       (the upstream's own JSON-RPC error)
            └── ToolRefused        TOOL_EXECUTION_ERROR (... to a tool call; also a ToolExecutionError)
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
    alias: ClassVar[str | None] = None
    """The code other discovery gateways give this failure, where it differs (`codeAlias` in `to_dict`)."""

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
        alias = {"codeAlias": self.alias} if self.alias is not None else {}
        return {"code": self.code, **alias, "message": self.explain(phrasing), **step, **self.details}

    def __str__(self) -> str:
        return self.explain()


class ConfigurationError(ToolscoutError):
    """The configuration cannot be found, parsed or validated."""

    code = "CONFIGURATION_ERROR"


class ServerNameTaken(ConfigurationError):
    """A server name is already taken by another owner (the config file's, or one registered at run time)."""

    code = "SERVER_NAME_TAKEN"


class NotFound(ToolscoutError):
    """A name (server, tool, resource, prompt) that nothing answers to."""


class ServerNotFound(NotFound):
    """No upstream server of that name is configured."""

    code = "SERVER_NOT_FOUND"


class ToolNotFound(NotFound):
    """The upstream server has no tool of that name."""

    code = "TOOL_NOT_FOUND"


class ResourceNotFound(NotFound):
    """A resource URI the gateway cannot route to a server (not one of its `toolscout://` URIs)."""

    code = "RESOURCE_NOT_FOUND"


class PromptNotFound(NotFound):
    """No upstream offers a prompt of that gateway name."""

    code = "PROMPT_NOT_FOUND"


class Disabled(ToolscoutError):
    """The thing exists, but cannot be used: `toolRules` disable it, or its definition is refused."""


class ToolDisabled(Disabled):
    """The tool exists but `toolRules` disable it."""

    code = "TOOL_DISABLED"


class ToolQuarantined(Disabled):
    """The tool's definition changed since it was pinned (`toolPinning: quarantine`): it is not
    listed, found or run until a person approves the change."""

    code = "TOOL_QUARANTINED"


def tool_quarantined(server: str, tool: str) -> ToolQuarantined:
    """The error for `server`'s quarantined `tool`, saying how a person approves it."""
    return ToolQuarantined(
        f"Tool {tool!r} on {server!r} is quarantined: its description or schema changed since it was "
        f"approved, which is how a server slips new instructions to the model. Have a person review the change "
        f"with `toolscout pins diff {server}/{tool}`, then approve it with `toolscout pins approve {server}/{tool}`.",
        server=server,
        tool=tool,
    )


class ToolUnusable(Disabled):
    """The upstream listed the tool, but its input schema cannot be validated within the validator's
    budget (a combination that explodes, a `$ref` cycle): no call reaches it, its server's other tools work."""

    code = "TOOL_UNUSABLE"


class ResourceDisabled(Disabled):
    """The resource (or the template it comes from) exists but `toolRules` of kind `resource` disable it."""

    code = "RESOURCE_DISABLED"


class PromptDisabled(Disabled):
    """The prompt exists but `toolRules` of kind `prompt` disable it."""

    code = "PROMPT_DISABLED"


class Invalid(ToolscoutError):
    """The request cannot be used as it is: the caller must change it."""


class InvalidArguments(Invalid):
    """A meta-tool (or a command) was called with arguments it cannot use."""

    code = "INVALID_ARGUMENTS"


class ArgumentValidationError(Invalid):
    """The arguments for an upstream tool do not satisfy its input schema (nothing was sent)."""

    code = "VALIDATION_ERROR"
    alias = "TOOL_VALIDATION_ERROR"


class ValidationTooCostly(Invalid):
    """Checking the arguments against the tool's input schema would take more than the validator's
    budget of work or time (nothing was sent): smaller arguments may pass, or the schema is at fault."""

    code = "VALIDATION_TOO_COSTLY"


class AmbiguousName(Invalid):
    """An upstream's own tool, prompt or resource name that several servers have: the gateway's name is needed."""

    code = "AMBIGUOUS_NAME"


class LoadLimitReached(Invalid):
    """Dynamic mode: loading more tools would pass the configured `maxLoadedTools`."""

    code = "LOAD_LIMIT_REACHED"


class NotInThisProtocol(Invalid):
    """A request the client's protocol version rules out (dynamic mode's `load_tools` at 2026-07-28,
    where tools/list cannot vary per connection)."""

    code = "NOT_IN_THIS_PROTOCOL"


class GatewayNotOpen(Invalid):
    """The Python API's `Scout` was used outside its `async with` block: before entering it, after
    leaving it (its servers are stopped), or entered a second time (a `Scout` runs once)."""

    code = "GATEWAY_NOT_OPEN"


class Unavailable(ToolscoutError):
    """The upstream could not be asked, or did not answer in time: trying again later may work."""


class ServerUnavailable(Unavailable):
    """The upstream server is configured but not connected (connecting, failed or disabled)."""

    code = "SERVER_UNAVAILABLE"
    alias = "SERVER_CONNECTION_ERROR"


def server_unavailable(server: str, status: str, error: str | None = None, **details: Any) -> ServerUnavailable:
    """`Server 'x' is <status>: <why>` for a server that cannot be asked now, with its status in the details."""
    if status == "needs-login" and error:
        return SignInRequired(error, server=server, status=status, **details)  # the error says it all, and what to run
    because = f": {error}" if error else "."
    state = "could not connect" if status == "error" else f"is {status}"
    return ServerUnavailable(f"Server {server!r} {state}{because}", server=server, status=status, **details)


class SignInRequired(ServerUnavailable):
    """A remote upstream protected by OAuth has no working sign-in: someone must run `toolscout auth login`.

    Its message carries the command, since the same words serve an agent (which tells its user) and a
    person at the terminal.
    """

    code = "SIGN_IN_REQUIRED"

    @classmethod
    def for_server(cls, server: str, reason: str) -> SignInRequired:
        """`server` needs login because of `reason` (said without any token)."""
        return cls(
            f"Server {server!r} needs login ({reason}). Sign in with `toolscout auth login {server}`, then try again.",
            server=server,
            status="needs-login",
        )


class SignInFailed(ToolscoutError):
    """`toolscout auth login` could not sign in to a server (no metadata, refused, no browser answer)."""

    code = "SIGN_IN_FAILED"


class Interrupted(ToolscoutError):
    """A command was stopped by Ctrl-C (SIGINT) before it finished: what it had not done is not done."""

    code = "INTERRUPTED"


class ProgramFailed(ToolscoutError):
    """A program `run_code` ran failed: it did not parse, did something refused, or raised; `line` (when
    known) is the program's line, and the message ends with what it printed before."""

    code = "CODE_ERROR"


class ProgramLimitExceeded(ProgramFailed):
    """A program reached one of the `code` section's limits (time, memory, tool calls, output) and was stopped."""

    code = "CODE_LIMIT_EXCEEDED"


class SandboxUnavailable(Unavailable):
    """`run_code`'s sandbox (pydantic-monty's worker process) could not start or died under a program."""

    code = "SANDBOX_UNAVAILABLE"


class CallTimeout(Unavailable):
    """The upstream did not answer within the server's `timeout` (the request is cancelled upstream)."""

    code = "TIMEOUT"
    alias = "TOOL_EXECUTION_TIMEOUT"


class LLMUnavailable(Unavailable):
    """`smart` mode's language model gave no usable answer (`reason`: timeout, http, refused,
    bad_answer, unreachable); the caller falls back to the next method, so smart mode degrades gracefully."""

    code = "LLM_UNAVAILABLE"

    def __init__(self, message: str, *, reason: str, **details: Any) -> None:
        super().__init__(message, reason=reason, **details)
        self.reason = reason


class EmbeddingUnavailable(Unavailable):
    """The configured embedding provider gave no usable vectors (`reason`: timeout, http, unreachable,
    bad_answer, dimensions); tools are embedded by the packaged model instead, a query ranked lexically."""

    code = "EMBEDDING_UNAVAILABLE"

    def __init__(self, message: str, *, reason: str, **details: Any) -> None:
        super().__init__(message, reason=reason, **details)
        self.reason = reason


class RegistryUnavailable(Unavailable):
    """The shared registry (Redis) cannot be reached or did not answer in time: what needs it fails at
    once, and works again by itself once it is back."""

    code = "REGISTRY_UNAVAILABLE"


class UpstreamError(ToolscoutError):
    """The upstream failed while serving a read, a get or a listing (protocol error, broken transport)."""

    code = "UPSTREAM_ERROR"


class ToolExecutionError(UpstreamError):
    """The upstream failed while running a tool call (protocol error, broken transport)."""

    code = "TOOL_EXECUTION_ERROR"


def _what_for(request: str) -> str:
    """What `request` (`resources/read notes://today`, as `oauth.request_name` names it) was for, in words."""
    method, _, item = request.partition(" ")
    if method == "resources/read" and item:
        return f"to read {item}"
    if method == "prompts/get" and item:
        return f"to get its prompt {item!r}"
    if method == "completion/complete" and " " in item:
        of, argument = item.rsplit(" ", 1)
        return f"to complete the argument {argument!r} of {of}"
    return f"to answer {request}"


class ScopeRequired(UpstreamError):
    """An OAuth upstream answered a request 403 `insufficient_scope`: the sign-in works, but that tool call,
    read or prompt needs scopes it was not granted. Its message names them and the `toolscout auth login`
    that asks for them; the server's other tools, resources and prompts carry on."""

    code = "SCOPE_REQUIRED"

    @classmethod
    def for_request(
        cls, server: str, request: str, scopes: list[str], description: str | None, *, tool: str | None = None
    ) -> ScopeRequired:
        """`server` wants `scopes` (its `description`, when it gave one) before it answers `request`
        (`tools/call add`, `resources/read URI`, ...); `tool`: the request is a call of that tool."""
        wanted = f"the scope{'s' if len(scopes) != 1 else ''} {' '.join(scopes)}" if scopes else "more scopes"
        said = f" ({description})" if description else ""
        what = f"to run {tool!r}" if tool is not None else _what_for(request)
        details: dict[str, Any] = {"tool": tool} if tool is not None else {"request": request}
        return cls(
            f"Server {server!r} needs a wider sign-in {what}: it asks for {wanted}{said}. Sign in again "
            f"with `toolscout auth login {server}`, which asks for them as well as those granted, then try again. "
            "The rest of the server keeps working meanwhile.",
            server=server,
            scopes=scopes,
            **details,
        )


class UpstreamRefused(UpstreamError):
    """The upstream answered a read, get or listing with a JSON-RPC error of its own.

    `upstreamCode` (and `upstreamData`, when it sent any) are in the details; `upstream_message` is its
    own message, so that what stands for the upstream's (passthrough, resources) can pass the same error on.
    """

    def __init__(self, message: str, *, upstream_message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.upstream_message = mask_text(upstream_message)  # passed on to a client, as the message is


class ToolRefused(UpstreamRefused, ToolExecutionError):
    """The upstream answered a tool call with a JSON-RPC error of its own (code `TOOL_EXECUTION_ERROR`)."""


def error_from_dict(data: dict[str, Any]) -> ToolscoutError:
    """The error a failed result's `error` object describes (`to_dict`'s output, read back on the
    other side of MCP), as the class of its code (or of its alias); an unknown code becomes a plain
    `ToolscoutError`."""
    by_code: dict[str, type[ToolscoutError]] = {}
    pending: list[type[ToolscoutError]] = [ToolscoutError]
    while pending:
        kind = pending.pop()
        if "code" in vars(kind):  # (a subclass without a code of its own is not what a code names)
            by_code[kind.code] = kind
        if kind.alias is not None and "alias" in vars(kind):
            by_code.setdefault(kind.alias, kind)
        pending.extend(kind.__subclasses__())
    code, message, step = data.get("code"), data.get("message"), data.get("nextStep")
    details = {k: v for k, v in data.items() if k not in ("code", "codeAlias", "message", "nextStep")}
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
