"""Code mode: the agent writes one small program that calls the tools, instead of one tool call per step.

The agent sees `search_tools` and `get_tool_details`, whose answers write each tool as the Python call
a program makes (`await notes.create_note(title: str, body: str)`, render/python.py), and `run_code`,
which runs the program in the sandbox (sandbox.py). With `codeTool: true`, `run_code` joins the
meta-tools of discovery and dynamic mode (`WithCodeTool`).

Inside a program each server the request's scope sees is an object named after it, and each of its
tools an async method; `search_tools(query, limit=5)` and `call_tool(server, tool, arguments)` are
functions (`ProgramHost`). Every call goes through `Gateway.execute`, as `execute_tool`'s does: the
scope, the rules, pinning's quarantine, the arguments against the schema, the audit line. A
destructive tool asks the user first (`ask_user_to_run`, as smart mode does), once per call, unless
`code.allowDestructive` says not to: a program can do many things, and the user is asked about each
one with its arguments, never about the program as a whole, which the user would have to read.

`run_code`'s annotations are the least permissive of the tools the scope can reach
(`catalog.least_permissive`), so its definition follows the catalog and the scope.
"""

from __future__ import annotations

import contextlib
import json
import keyword
from collections.abc import Callable, Mapping
from typing import Any, cast

import mcp_types as types
from pydantic import Field

from toolscout.catalog import CatalogTool, least_permissive
from toolscout.config.code import CodeConfig
from toolscout.config.scopes import Scope, current_scope
from toolscout.errors import AGENT_STEPS, InvalidArguments, Phrasing, ToolscoutError
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import ScopedCache
from toolscout.modes.client import SurfaceClient
from toolscout.modes.discovery import (
    ArgsModel,
    DetailsArgs,
    MetaTool,
    SearchToolsArgs,
    ToolSpec,
    get_tool_details,
    run_meta_tool,
    search_tools,
    tool_result,
)
from toolscout.modes.sandbox import CallFailed, HostCall, Limits, Sandbox, identifier, is_reserved, rendered
from toolscout.modes.smart import ask_user_to_run, is_destructive
from toolscout.render.python import python_call
from toolscout.render.signatures import is_flat
from toolscout.render.text import details_text, search_text
from toolscout.upstream.calls import current_relay

RUN_CODE = "run_code"
FUNCTIONS = frozenset({"search_tools", "call_tool"})
"""The host functions a program calls by name (beside `ToolError`, the prelude's)."""
SEARCH_LIMIT = 50
UNCONFIRMED = "CONFIRMATION_REQUIRED"
"""The code of a destructive call the user could not be asked about (no elicitation): run nothing."""


class RunCodeArgs(ArgsModel):
    code: str = Field(description="Python: `r = await server.tool(arg=...)`; print what you need.")
    timeout: float | None = Field(None, gt=0)


RUN_CODE_DESCRIPTION = (
    "Run Python that calls tools: `r = await server.tool(arg=...)` returns the tool's structured result (else "
    "its text, as JSON when it parses); a failure raises ToolError; `await search_tools('query')` finds tools. "
    "Only what it prints, and its last expression, come back. Imports: json, re, math, datetime, asyncio, "
    "collections, itertools."
)


def python_names(names: list[str]) -> dict[str, str]:
    """Each server's name to the identifier a program calls it by (`_identifiers`); a Python name (a builtin,
    an importable module) or one of the program's own functions gets `_` after it."""
    return _identifiers(names, lambda base: is_reserved(base) or base in FUNCTIONS)


def tool_names(entries: list[CatalogTool]) -> dict[str, str]:
    """Each tool's name to the method name a program calls it by (`_identifiers`)."""
    return _identifiers([entry.name for entry in entries], lambda base: False)


def _identifiers(names: list[str], reserved: Callable[[str], bool]) -> dict[str, str]:
    """Each of `names` as an identifier, in order: other characters `_`, a keyword, `ToolError` or a
    `reserved` name with `_` after it, no leading double underscore (a program cannot write one), and a
    name another already took with `_2`, `_3`, ..."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        base = identifier(name)
        if base.startswith("__"):
            base = "_" + base.lstrip("_") if base.strip("_") else "_tool"
        if keyword.iskeyword(base) or base == "ToolError" or reserved(base):
            base += "_"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out[name] = candidate
    return out


class ProgramNames:
    """The names a program of the request's scope calls servers and tools by."""

    def __init__(self, gateway: Gateway, scope: Scope) -> None:
        self.gateway = gateway
        self.scope = scope
        self.servers = python_names([u.name for u in gateway.visibility.upstreams(scope)])
        self._tools: dict[str, dict[str, str]] = {}

    def tools(self, server: str) -> dict[str, str]:
        """`server`'s tools, by name, to their method names."""
        if server not in self._tools:
            entries = self.gateway.visibility.tools(self.scope, server, include_disabled=True)
            self._tools[server] = tool_names(entries)
        return self._tools[server]

    def tool(self, server: str, method: str) -> str:
        """The tool `method` stands for on `server` (itself when none does: the gateway then says it is not found)."""
        return next((name for name, m in self.tools(server).items() if m == method), method)

    def call(self, entry: CatalogTool, *, brief: bool = False) -> str:
        """`entry` as a program calls it."""
        server = self.servers.get(entry.server, identifier(entry.server))
        method = self.tools(entry.server).get(entry.name, identifier(entry.name))
        return python_call(server, method, entry.input_schema, brief=brief)


class ProgramHost:
    """What one program's outside names stand for: the servers and tools of the request's scope, and
    `search_tools` and `call_tool`; each call through `Gateway.execute`."""

    def __init__(self, gateway: Gateway, config: CodeConfig, scope: Scope) -> None:
        self.gateway = gateway
        self.config = config
        self.scope = scope
        self.names = ProgramNames(gateway, scope)

    def objects(self) -> Mapping[str, str]:
        return {python: server for server, python in self.names.servers.items()}

    def functions(self) -> frozenset[str]:
        return FUNCTIONS

    async def call(self, call: HostCall) -> Any:
        if call.receiver is not None:
            tool = self.names.tool(call.receiver, call.name)
            if call.args:
                await self._audit_refused(call.receiver, tool, call.kwargs, "INVALID_ARGUMENTS")
                raise CallFailed(
                    f"{call.receiver}/{tool}: pass the arguments by name, as the tool's input schema names them "
                    f"({call.name}(title=...)), not by position (INVALID_ARGUMENTS)"
                )
            return await self.run_tool(call.receiver, tool, call.kwargs)
        if call.name == "search_tools":
            return await self._search(*call.args, **call.kwargs)
        return await self._call_tool(*call.args, **call.kwargs)

    async def _call_tool(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self._bound_call_tool(*args, **kwargs)
        except TypeError as exc:
            raise CallFailed(f"call_tool(server, tool, arguments): {exc} (INVALID_ARGUMENTS)") from None

    async def _bound_call_tool(self, server: Any, tool: Any, arguments: Any = None) -> Any:
        if not isinstance(server, str) or not isinstance(tool, str):
            raise CallFailed("call_tool(server, tool, arguments): server and tool are strings (INVALID_ARGUMENTS)")
        if arguments is not None and not isinstance(arguments, dict):
            raise CallFailed(f"call_tool({server!r}, {tool!r}, arguments): arguments is a dict (INVALID_ARGUMENTS)")
        return await self.run_tool(server, tool, cast(dict[str, Any], arguments or {}))

    async def run_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Run `server`'s `tool` as execute_tool does (a destructive one asked of the user first); its value for
        the program, or `CallFailed` with what went wrong."""
        qualified = f"{server}/{tool}"
        entry = self.gateway.visibility.get(self.scope, server, tool)
        if entry is not None and entry.enabled and is_destructive(entry) and not self.config.allow_destructive:
            answer = await ask_user_to_run(qualified, arguments)
            if answer is not True:
                await self._audit_refused(server, tool, arguments, "DECLINED" if answer is False else UNCONFIRMED)
            if answer is False:
                raise CallFailed(f"{qualified}: the user declined running it; nothing was run (DECLINED)")
            if answer is None:
                raise CallFailed(
                    f"{qualified}: it may destroy data (destructiveHint), and the user could not be asked to "
                    "confirm it: your client does not support elicitation. Ask the user, and have the operator "
                    f"set code.allowDestructive: true to run such tools from programs ({UNCONFIRMED})"
                )
        try:
            result = await self.gateway.execute(server, tool, arguments, max_output_chars=0)
        except ToolscoutError as exc:
            raise CallFailed(f"{qualified}: {exc.message} ({exc.code})") from None
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        if result.is_error:
            raise CallFailed(f"{qualified}: {' '.join(texts) or 'the tool reported an error'} (TOOL_EXECUTION_ERROR)")
        return result_value(result, texts)

    async def _audit_refused(self, server: str, tool: str, arguments: dict[str, Any], code: str) -> None:
        """Audit a call the program made that never reached `Gateway.execute` (which audits the others)."""
        if self.gateway.audit is not None:
            relay = current_relay()
            request = {"server": server, "tool": tool, "arguments": arguments}
            await self.gateway.audit.record_refused(request, code, client=relay.client if relay is not None else None)

    async def _search(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        try:
            return await self._bound_search(*args, **kwargs)
        except TypeError as exc:
            raise CallFailed(f"search_tools(query, limit=5): {exc} (INVALID_ARGUMENTS)") from None

    async def _bound_search(self, query: Any, limit: Any = 5) -> list[dict[str, Any]]:
        if not isinstance(query, str) or not query.strip():
            raise CallFailed("search_tools(query, limit=5): query is a non-empty string (INVALID_ARGUMENTS)")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= SEARCH_LIMIT:
            raise CallFailed(
                f"search_tools(query, limit): limit is an integer from 1 to {SEARCH_LIMIT} (INVALID_ARGUMENTS)"
            )
        await self.gateway.settle_startup()
        try:
            hits = await self.gateway.search(query, limit=limit)
        except ToolscoutError as exc:
            raise CallFailed(f"search_tools: {exc.message} ({exc.code})") from None
        return [
            {
                "server": hit.tool.server,
                "tool": hit.tool.name,
                "signature": self.names.call(hit.tool, brief=True),
                "summary": hit.tool.summary,
            }
            for hit in hits
        ]


def result_value(result: types.CallToolResult, texts: list[str]) -> Any:
    """What a tool's call is worth to a program: its `structuredContent`, else its text parsed as JSON when
    it parses, else its text; a result with no text at all, its content blocks as dicts."""
    if result.structured_content is not None:
        return result.structured_content
    if not texts:
        return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    text = "\n".join(texts)
    with contextlib.suppress(ValueError):
        return json.loads(text)
    return text


class CodeTool:
    """`run_code` over a gateway: its definition for the request's scope, and its runs."""

    def __init__(self, gateway: Gateway, config: CodeConfig) -> None:
        self.gateway = gateway
        self.config = config
        self.sandbox = Sandbox(max_programs=config.max_programs)
        self.spec = ToolSpec(RUN_CODE, RUN_CODE_DESCRIPTION, RunCodeArgs, read_only=False)
        self._base = self.spec.definition()
        self._definitions = ScopedCache[types.Tool]()

    def definition(self) -> types.Tool:
        """`run_code` as the request's scope lists it: annotated as the riskiest tool it can reach."""
        scope = current_scope()
        return self._definitions.get(scope, self.gateway.catalog.version, lambda: self._definition(scope))

    def _definition(self, scope: Scope) -> types.Tool:
        reachable = self.gateway.visibility.tools(scope)
        return self._base.model_copy(update={"annotations": least_permissive(reachable)})

    async def call(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run the program `arguments` carry; a failure of the program is raised (`ProgramFailed`), for the
        face to answer as an error result."""
        args = self.spec.parse(arguments)
        if len(args.code) > self.config.max_code_chars:
            raise InvalidArguments(
                f"The program is {len(args.code)} characters, over the {self.config.max_code_chars} run_code takes "
                "(code.maxCodeChars): write a shorter program, or run the work in parts."
            )
        timeout = min(args.timeout or self.config.timeout, self.config.max_timeout)
        limits = Limits(
            timeout=timeout,
            max_memory=self.config.max_memory,
            max_calls=self.config.max_tool_calls,
            max_print_chars=self.config.max_output_chars,
        )
        await self.gateway.settle_startup()  # the servers a program names are those connected, or still coming
        outcome = await self.sandbox.run(args.code, ProgramHost(self.gateway, self.config, current_scope()), limits)
        return self.answer(outcome.output, outcome.value, outcome.calls, outcome.dropped)

    def answer(self, output: str, value: Any, calls: int, dropped: int) -> types.CallToolResult:
        """What the program printed, then its last value when not None, cut at `code.maxOutputChars`."""
        text = output
        if value is not None:
            text += rendered(value)
        cap = self.config.max_output_chars
        total = len(text) + dropped
        data: dict[str, Any] = {"output": output[:cap], "toolCalls": calls}
        if total > cap:
            text = (
                text[:cap] + f"\n[toolscout: output cut to {cap} of {total} characters (code.maxOutputChars): "
                "print less, or only what you need.]"
            )
        elif value is not None:
            data["result"] = value if _is_json(value) else repr(value)
        return tool_result(data, text or "(the program printed nothing and returned None)")


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class CodeSurface:
    """`search_tools` and `get_tool_details`, writing each tool as a program's call, and `run_code`."""

    per_client = False
    next_steps: Phrasing = AGENT_STEPS

    instructions = (
        "toolscout fronts many MCP servers. search_tools finds tools and shows each as the Python call a program "
        "makes; write one program with those calls and run it with run_code: only what it prints comes back."
    )

    def __init__(self, gateway: Gateway, config: CodeConfig) -> None:
        self.gateway = gateway
        self.code = CodeTool(gateway, config)
        self._tools = {
            "search_tools": MetaTool(
                "search_tools",
                "Find tools across all servers, ranked, each as the call a run_code program makes. Start here.",
                SearchToolsArgs,
                handler=code_search_tools,
            ),
            "get_tool_details": MetaTool(
                "get_tool_details",
                "A tool's description and parameters, and its call in a run_code program.",
                DetailsArgs,
                handler=code_tool_details,
            ),
        }
        self._definitions = [tool.definition() for tool in self._tools.values()]

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return [*self._definitions, self.code.definition()]

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        if name == RUN_CODE:
            return await self.code.call(arguments)
        return await run_meta_tool(self._tools, self.gateway, name, arguments)

    def native(self, name: str) -> bool:
        return False


async def code_search_tools(gateway: Gateway, args: SearchToolsArgs) -> types.CallToolResult:
    """Discovery's search, each hit's signature the call a program makes."""
    result = await search_tools(gateway, args)
    data = dict(result.structured_content or {})
    names = ProgramNames(gateway, current_scope())
    for hit in data.get("results", []):
        entry = gateway.visibility.get(current_scope(), hit["server"], hit["tool"])
        if entry is not None:
            hit["signature"] = names.call(entry, brief=True)
    text = search_text(data).replace(
        "Next: get_tool_details(server, tool), then execute_tool.",
        "Next: call them in a run_code program (get_tool_details(server, tool) for a tool's parameters).",
    )
    return tool_result(data, text)


async def code_tool_details(gateway: Gateway, args: DetailsArgs) -> types.CallToolResult:
    """Discovery's details, with the call a program makes as the signature."""
    result = await get_tool_details(gateway, args)
    data = dict(result.structured_content or {})
    entry = gateway.visibility.any_tool(current_scope(), data["server"], data["tool"])
    call = ProgramNames(gateway, current_scope()).call(entry)
    data["signature"] = call
    if args.format == "json":
        return tool_result(data, json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    lines = details_text({**data, "signature": None}, include_schema=not is_flat(entry.input_schema)).split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("Parameters")), len(lines))
    lines.insert(at, f"Call: {call}")
    return tool_result(data, "\n".join(lines))


class WithCodeTool:
    """A surface, plus `run_code` after its own tools (`codeTool: true`)."""

    def __init__(self, surface: Any, code: CodeTool) -> None:
        self.surface = surface
        self.code = code
        self.instructions: str = surface.instructions + " run_code runs a Python program that calls the tools."
        self.next_steps: Phrasing = surface.next_steps
        self.per_client: bool = surface.per_client

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return [*await self.surface.tools(client), self.code.definition()]

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        if name == RUN_CODE:
            return await self.code.call(arguments)
        return await self.surface.call(client, name, arguments)

    def native(self, name: str) -> bool:
        return name != RUN_CODE and bool(self.surface.native(name))
