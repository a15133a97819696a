"""Discovery mode (the default): the five meta-tools an agent sees, and what every tool the gateway
offers itself is made of.

Each handler takes validated arguments and returns a `CallToolResult` with `structuredContent`
plus a compact text rendering (render/text.py).

The first part of the module is shared by every mode's own tools (the meta-tools, compact's two,
dynamic's two, `smart_tool_discovery`). Each declares its arguments as an `ArgsModel`;
`parse_arguments` validates a call against it and, on a mistake, says in words what each argument
expected and what came, so that a model can fix its call. `ToolSpec` is a name, a description for
the model and an argument model, whose schema is compacted to what a model needs. `MetaTool` adds the
handler, and `run_meta_tool` validates a call and runs it. Handlers raise `ToolscoutError`s, which
the MCP server turns into error results.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolscout.config.models import ExecuteResult, ListingFormat
from toolscout.config.scopes import current_scope
from toolscout.errors import AGENT_STEPS, InvalidArguments, Phrasing, ToolExecutionError
from toolscout.gateway.core import Gateway
from toolscout.modes.client import SurfaceClient
from toolscout.modes.hints import OWN_TOOL_META, Reach
from toolscout.render.examples import tool_examples
from toolscout.render.signatures import call_signature, is_flat, parameters
from toolscout.render.text import (
    INSTRUCTIONS_LIMIT,
    compact_json,
    cut_text,
    details_text,
    error_text,
    listing_text,
    search_text,
    servers_text,
    tools_text,
)

if TYPE_CHECKING:  # the search package (numpy) is imported when the index is built, not with the modes
    from toolscout.search.base import SearchHit

# What every tool the gateway offers itself is made of: its arguments, definition and result,
# shared by every mode. Discovery mode's five meta-tools follow.


class ArgsModel(BaseModel):
    """Arguments of a meta-tool: unknown keys are refused, aliases accepted, types strict.

    Strict: a boolean is not a number (`limit: true` is refused, not 1), nor a number or a string a
    boolean (`includeDisabled: 0`), nor a numeric string a number. `null` for an optional argument
    means the same as leaving it out (some clients send every argument, `null` for those unset);
    for a required one it is refused as missing.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        optional = {key for name, f in cls.model_fields.items() if not f.is_required() for key in (name, f.alias)}
        return {k: v for k, v in cast(dict[str, Any], data).items() if not (v is None and k in optional)}


ArgsT = TypeVar("ArgsT", bound=ArgsModel)


def forgive_arguments(value: Any) -> Any:
    """Tool arguments as models send them: `null` means none, an object serialised as JSON text is decoded."""
    if value is None:
        return {}
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            decoded = json.loads(value)
            if isinstance(decoded, dict):
                return cast(dict[str, Any], decoded)
    return value


def parse_arguments(tool: str, model: type[ArgsT], arguments: dict[str, Any] | None) -> ArgsT:
    """Validate the arguments of the tool called `tool` against `model`; a mistake becomes an
    `InvalidArguments` that says, for each argument, what was expected and what came, and what to do."""
    try:
        return model.model_validate(arguments or {})
    except ValidationError as exc:
        problems = _problems(model, exc, arguments or {})
        raise InvalidArguments(
            f"Invalid arguments for {tool}: {'; '.join(problems)}. "
            f"Call {tool} again with these fixed (its inputSchema in tools/list lists what it takes)."
        ) from None


_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}
_ERROR_EXPECTS = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "an object",
    "list_type": "an array",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _got(value: Any) -> str:
    """What a client sent, as JSON (cut short) and its JSON kind: `true (a boolean)`."""
    if value is None:
        return "null"
    kind = (
        "a boolean"
        if isinstance(value, bool)
        else "a number"
        if isinstance(value, int | float)
        else "a string"
        if isinstance(value, str)
        else "an array"
        if isinstance(value, list)
        else "an object"
        if isinstance(value, dict)
        else type(value).__name__
    )
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({kind})"


def _expects(schema: dict[str, Any]) -> str:
    """What a property's JSON schema accepts, in words: `an integer from 1 to 50`, `a string or an array of strings`."""
    options = [o for o in cast(list[dict[str, Any]], schema.get("anyOf", [schema])) if o.get("type") != "null"]
    words: list[str] = []
    for option in options:
        if "enum" in option or "const" in option:
            values = option.get("enum", [option.get("const")])
            words.append(" or ".join(json.dumps(v) for v in cast(list[Any], values)))
            continue
        kind = option.get("type")
        word = _TYPE_NAMES.get(kind, "a value") if isinstance(kind, str) else "a value"
        items = option.get("items")
        if (
            kind == "array"
            and isinstance(items, dict)
            and isinstance(item := cast(dict[str, Any], items).get("type"), str)
        ):
            word = f"an array of {_TYPE_NAMES.get(item, 'value').split(' ', 1)[-1]}s"
        low, high = option.get("minimum"), option.get("maximum")
        if low is not None and high is not None:
            word += f" from {low:g} to {high:g}"
        elif low is not None:
            word += f" of at least {low:g}"
        words.append(word)
    return " or ".join(words) or "a value"


def _bounded(schema: dict[str, Any]) -> bool:
    return any("minimum" in o or "maximum" in o for o in cast(list[dict[str, Any]], schema.get("anyOf", [schema])))


def _problems(model: type[ArgsModel], exc: ValidationError, arguments: dict[str, Any]) -> list[str]:
    schema = model.model_json_schema(by_alias=True)
    properties = cast(dict[str, dict[str, Any]], schema.get("properties", {}))
    problems: list[str] = []
    unions_told: set[str] = set()
    for err in exc.errors():
        loc = err["loc"]
        where = ".".join(str(p) for p in loc) or "arguments"
        top = str(loc[0]) if loc else ""
        prop = properties.get(top, {})
        if err["type"] == "extra_forbidden":
            known = ", ".join(f.alias or n for n, f in model.model_fields.items()) or "none"
            problems.append(f"unknown argument {where!r} (expected: {known})")
        elif err["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        elif len([o for o in prop.get("anyOf", []) if o.get("type") != "null"]) > 1:
            # One of several types: pydantic has an error per type; the client gets one line.
            if top not in unions_told:
                unions_told.add(top)
                problems.append(f"{top}: expected {_expects(prop)}, got {_got(arguments.get(top))}")
        elif err["type"] in _ERROR_EXPECTS or err["type"] == "literal_error" or (len(loc) == 1 and _bounded(prop)):
            expected = _expects(prop) if len(loc) == 1 and prop else _ERROR_EXPECTS.get(err["type"], "a value")
            problems.append(f"{where}: expected {expected}, got {_got(err['input'])}")
        else:  # a bound or a length: pydantic's words say which
            problems.append(f"{where}: {err['msg'].replace('Input should', 'should')}, got {_got(err['input'])}")
    return problems


Handler = Callable[[Gateway, Any], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """A tool the gateway offers itself: name, description for the model, argument model."""

    name: str
    description: str
    args: type[ArgsT]
    read_only: bool = True
    runs_tools: bool = False
    """Whether it runs upstream tools: its annotations are then those of the riskiest tool the request's
    scope can reach (`hints.Reach`), not its own `read_only`."""

    def definition(self) -> types.Tool:
        """The tool as `tools/list` gives it."""
        tool = types.Tool(
            name=self.name,
            description=self.description,
            input_schema=_compact_schema(self.args.model_json_schema(by_alias=True)),
            # Only what differs from the spec's default (not read-only) and lets clients auto-approve.
            annotations=types.ToolAnnotations(read_only_hint=True) if self.read_only else None,
        )
        # Always in context, in a client that defers MCP tools: the way to every other tool.
        return tool.model_copy(update={"meta": dict(OWN_TOOL_META)})

    def parse(self, arguments: dict[str, Any] | None) -> ArgsT:
        """A call's `arguments` validated against `args` (`parse_arguments`)."""
        return parse_arguments(self.name, self.args, arguments)


@dataclass(frozen=True)
class MetaTool(ToolSpec[Any]):
    """A `ToolSpec` whose calls need only the gateway."""

    handler: Handler = field(kw_only=True)


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(v) for v in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    d = {k: _clean(v) for k, v in cast(dict[str, Any], node).items() if k != "title"}
    options = d.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in cast(list[Any], options) if o != {"type": "null"}]
        if len(kept) == 1:
            d.pop("anyOf")
            d.update(cast(dict[str, Any], kept[0]))
        if d.get("default", ...) is None:
            d.pop("default")
    if d.get("type") == "object" and isinstance(d.get("additionalProperties"), bool):
        # "any object" is what `type: object` already says; unknown keys are refused by
        # `parse_arguments` with a message naming the expected ones, which helps a model more.
        d.pop("additionalProperties")
    # Bounds are checked by `parse_arguments` too; the description states them in fewer tokens.
    d.pop("minimum", None)
    d.pop("maximum", None)
    if d.get("default", ...) is False:
        d.pop("default")  # what a model assumes for a flag it does not send
    return d


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    # Our argument models are not recursive, so every `$ref` can be replaced by what it names.
    if isinstance(node, list):
        return [_inline(v, defs) for v in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    d = cast(dict[str, Any], node)
    ref = d.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    return {k: _inline(v, defs) for k, v in d.items()}


def _compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema without titles, `null` unions and `$defs`: fewer tokens, same meaning for the model."""
    defs = cast(dict[str, Any], schema.get("$defs", {}))
    inlined = cast(dict[str, Any], _inline({k: v for k, v in schema.items() if k != "$defs"}, defs))
    cleaned = cast(dict[str, Any], _clean(inlined))
    cleaned.setdefault("properties", {})
    return cleaned


def tool_result(data: dict[str, Any], text: str) -> types.CallToolResult:
    """A meta-tool's result: the data as `structuredContent`, its rendering for the model as text."""
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


EXECUTIONS = frozenset({"execute_tool", "exec"})
"""The meta-tools that run an upstream tool: a call of theirs refused for its arguments is audited too."""
LISTINGS = frozenset({"list_mcp_servers", "search_tools", "list_tools"})
"""The meta-tools whose result is rows of like entries, the shape TOON is made for."""


async def run_meta_tool(
    tools: Mapping[str, MetaTool],
    gateway: Gateway,
    name: str,
    arguments: dict[str, Any],
    *,
    listing_format: ListingFormat = "text",
    execute_result: ExecuteResult = "native",
) -> types.CallToolResult | None:
    """Validate the arguments of the tool called `name` and run it; None when there is no such tool.

    With `listing_format="toon"` a listing's text is its data as a TOON table or compact JSON,
    whichever is fewer tokens (`listing.listing_text`), instead of toolscout's line format. With
    `execute_result="envelope"` an `execute_tool` result is wrapped as `{success, result}` (`enveloped`).
    """
    tool = tools.get(name)
    if tool is None:
        return None
    try:
        parsed = tool.parse(arguments)
    except InvalidArguments as exc:
        if name in EXECUTIONS:
            await gateway.record_refused(arguments, exc)
        raise
    result = await tool.handler(gateway, parsed)
    if execute_result == "envelope" and name == "execute_tool":
        return enveloped(result, server=parsed.server, tool=parsed.tool)
    if listing_format == "toon" and name in LISTINGS and result.structured_content is not None:
        table = types.TextContent(text=listing_text(result.structured_content))
        result = result.model_copy(update={"content": [table]})
    return result


def enveloped(result: types.CallToolResult, *, server: str, tool: str) -> types.CallToolResult:
    """An upstream tool's result as `{success: true, result}`, or, when it reported a failure
    (`isError`), as `{success: false, error}` with the code `TOOL_EXECUTION_ERROR` and its text as the
    message: the answer other discovery gateways give, in `structuredContent` and as the text.

    `result` is the tool's `structuredContent`; else its text (decoded when it is a JSON object or
    array); else null. Images, audio and resources stay content blocks after the text, and `_meta` is
    kept: nothing of the tool's answer is lost.
    """
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    others = [block for block in result.content if not isinstance(block, types.TextContent)]
    text = "\n".join(texts)
    data: dict[str, Any]
    if result.is_error:
        failure = ToolExecutionError(text or "the tool reported an error", server=server, tool=tool)
        data = {"success": False, "error": failure.to_dict()}
        rendered = error_text(data["error"])
    else:
        value: Any = result.structured_content
        if value is None and texts:
            value = _decoded(text)
        data = {"success": True, "result": value}
        rendered = compact_json(data)
    return result.model_copy(
        update={"content": [types.TextContent(text=rendered), *others], "structured_content": data}
    )


def _decoded(text: str) -> Any:
    """`text` as the JSON object or array it holds, else as it is (a tool's text result)."""
    if text.lstrip()[:1] in ("{", "["):
        with contextlib.suppress(ValueError):
            return json.loads(text)
    return text


class ListServersArgs(ArgsModel):
    pass


class SearchToolsArgs(ArgsModel):
    query: str | list[str] = Field(description="Verb and object ('read file'), or one per step.")
    # Undescribed, as the flags below: the names say what they do, and the meta-tools stay within
    # 350 tokens.
    server: str | None = None
    # The bounds go unsaid too: a call past them is refused with a message that states them
    # (`parse_arguments`).
    limit: int = Field(10, ge=1, le=50)
    # The name and the results' `relevance` say what it is; the default is the config's.
    min_relevance: float | None = Field(None, ge=0.0, le=1.0, alias="minRelevance")
    # As list_tools' flag: the tools toolRules disable are found too, each result saying `enabled: false`.
    include_disabled: bool = Field(False, alias="includeDisabled")


class ListToolsArgs(ArgsModel):
    server: str
    include_disabled: bool = Field(False, alias="includeDisabled")


class ToolRefArgs(ArgsModel):
    server: str
    tool: str


class DetailsArgs(ToolRefArgs):
    # Only "json" is worth naming: the signature text is the default, and an enum of one costs fewer tokens.
    format: Literal["json"] | None = None


class ExecuteArgs(ToolRefArgs):
    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    max_output_chars: int | None = Field(None, ge=0)

    _forgive = field_validator("arguments", mode="before")(forgive_arguments)


async def list_mcp_servers(gateway: Gateway, _: ListServersArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    await gateway.relist_expired()  # the counts of a list older than `cache.ttl` are asked again first
    servers: list[dict[str, Any]] = []
    for up in gateway.upstreams:
        entry = gateway.server_status(up)
        if "instructions" in entry:
            entry["instructions"] = cut_text(entry["instructions"], INSTRUCTIONS_LIMIT)
        servers.append(entry)
    data = {
        "servers": servers,
        "totalTools": sum(s["toolCount"] for s in servers),
        "enabledTools": sum(s["enabledCount"] for s in servers),
    }
    return tool_result(data, servers_text(data))


def search_result(hit: SearchHit, *, steps: bool = False, stale: bool = False) -> dict[str, Any]:
    """One search hit as `search_tools` (and the HTTP API's search) answer it."""
    return {
        "server": hit.tool.server,
        "tool": hit.tool.name,
        "summary": hit.tool.summary,
        "relevance": hit.relevance,
        "tags": list(hit.tool.tags),
        # Said of a tool the rules disable only (found with includeDisabled): it cannot be run.
        **({} if hit.tool.enabled else {"enabled": False}),
        # For a list of steps: which ones this tool answers, numbered from 1 like the list.
        **({"steps": [step + 1 for step in hit.steps]} if steps else {}),
        # Types only, brief: often enough to call right away, in few tokens; get_tool_details adds
        # the descriptions, the defaults and every value of a long enum.
        "signature": call_signature(hit.tool.name, hit.tool.input_schema, max_description_len=0, brief=True),
        # From the persistent catalog: the server is not connected (yet), its tools may have changed.
        **({"stale": True} if stale else {}),
    }


LONG_QUERY_WORDS = 12
"""A query of more words than this is a pasted request, not an agent's query: the answer says how to ask."""
LONG_QUERY_HINT = "Short queries find tools better: a verb and an object ('read file'), one per step."
"""Agent-written action-object queries beat pasted user requests by a wide margin in published LiveMCPBench
runs; the tool's own description says the same in fewer words."""


async def search_tools(gateway: Gateway, args: SearchToolsArgs) -> types.CallToolResult:
    await gateway.settle_startup()
    hits = await gateway.search(
        args.query,
        server=args.server,
        limit=args.limit,
        min_relevance=args.min_relevance,
        include_disabled=args.include_disabled,
    )
    steps = isinstance(args.query, list)
    parts = _steps_of(args.query)
    if parts:
        hits, steps = await _with_steps(gateway, hits, parts, args), True
    data: dict[str, Any] = {
        "query": args.query,
        **({"steps": parts} if parts else {}),
        "results": [search_result(h, steps=steps, stale=gateway.cached_at(h.tool.server) is not None) for h in hits],
    }
    if isinstance(args.query, str) and len(args.query.split()) > LONG_QUERY_WORDS:
        data["hint"] = LONG_QUERY_HINT
    # The results stay (the agent may know better), but a weak best match is said to be one.
    if gateway.search_config.nothing_fits(h.relevance for h in hits):
        data["nothingFits"] = True
    if gateway.ranked_by_words:  # the embeddings are still being built: said, so a miss is tried again
        data["rankedByWords"] = True
    # Servers whose tools are missing from the ranking (those answering from the cache are in it).
    if connecting := gateway.connecting():
        data["connecting"] = connecting
    floor = gateway.min_relevance if args.min_relevance is None else args.min_relevance
    if floor > 0:
        data["minRelevance"] = floor
        if not hits:
            # All below the floor, or no match at all: say which, and what the weaker match is.
            weaker = await gateway.search(
                args.query, server=args.server, limit=1, min_relevance=0.0, include_disabled=args.include_disabled
            )
            if weaker:
                data["closest"] = {
                    "server": weaker[0].tool.server,
                    "tool": weaker[0].tool.name,
                    "relevance": weaker[0].relevance,
                }
    return tool_result(data, search_text(data))


def _steps_of(query: str | list[str]) -> list[str]:
    """The steps of one long request ("read the report, then open an issue about it"), as the search
    splits it; [] for a query that is one step or already a list."""
    if not isinstance(query, str):
        return []
    from toolscout.search.hybrid import FusionWeights, split_steps  # (numpy: loaded by the search by now)

    return split_steps(query, FusionWeights().min_step_terms)


STEP_TOP = 3
"""A tool answers a step of a long request when it is among that step's own best this many."""


async def _with_steps(
    gateway: Gateway, hits: list[SearchHit], parts: list[str], args: SearchToolsArgs
) -> list[SearchHit]:
    """The ranking of the whole request, each hit tagged with the steps whose own best `STEP_TOP` it is
    among, and every step's best tool in the answer (after the others when the ranking left it out)."""
    answers: dict[tuple[str, str], list[int]] = {}
    bests: list[SearchHit] = []
    for step, part in enumerate(parts):
        ranking = await gateway.search(
            part,
            server=args.server,
            limit=STEP_TOP,
            min_relevance=args.min_relevance,
            include_disabled=args.include_disabled,
        )
        for hit in ranking:
            answers.setdefault((hit.tool.server, hit.tool.name), []).append(step)
        bests += ranking[:1]
    tagged = [replace(h, steps=tuple(answers.get((h.tool.server, h.tool.name), ()))) for h in hits]
    present = {(h.tool.server, h.tool.name) for h in hits}
    for best in bests:
        key = (best.tool.server, best.tool.name)
        if key not in present:
            tagged.append(replace(best, steps=tuple(answers[key])))
            present.add(key)
    return tagged


async def list_tools(gateway: Gateway, args: ListToolsArgs) -> types.CallToolResult:
    # A tool whose schema was refused is listed anyway, saying why: the agent learns why it cannot call it.
    tools = await gateway.tools(args.server, include_disabled=True)
    shown = [t for t in tools if args.include_disabled or t.enabled or t.unusable]
    data: dict[str, Any] = {
        "server": args.server,
        "tools": [
            {"name": t.name, "summary": t.summary, "enabled": t.enabled, "tags": list(t.tags)}
            | ({"unusable": t.unusable} if t.unusable else {})
            for t in shown
        ],
    }
    hidden = gateway.visibility.hidden_count(current_scope(), args.server)
    if hidden:  # (`hidden: true` in toolRules: in no listing, yet found by search_tools and callable)
        data["hiddenCount"] = hidden
    if gateway.cached_at(args.server) is not None:
        data["stale"] = True
    return tool_result(data, tools_text(data))


async def get_tool_details(gateway: Gateway, args: DetailsArgs) -> types.CallToolResult:
    entry = await gateway.tool(args.server, args.tool)
    data: dict[str, Any] = {
        "server": entry.server,
        "tool": entry.name,
        "description": entry.description,
        "signature": call_signature(entry.name, entry.input_schema),
        "parameters": parameters(entry.input_schema),
        # Made from the schema: a model copies an example's shape more readily than it reads a schema.
        "examples": tool_examples(entry.input_schema),
        "inputSchema": entry.input_schema,
        "enabled": entry.enabled,
        "tags": list(entry.tags),
    }
    if entry.title:
        data["title"] = entry.title
    if gateway.cached_at(entry.server) is not None:
        data["stale"] = True
    if entry.output_schema is not None:
        data["outputSchema"] = entry.output_schema
    if entry.tool.annotations is not None:
        data["annotations"] = entry.tool.annotations.model_dump(by_alias=True, exclude_none=True)
    if args.format == "json":
        return tool_result(data, compact_json(data))
    return tool_result(data, details_text(data, include_schema=not is_flat(entry.input_schema)))


async def execute_tool(gateway: Gateway, args: ExecuteArgs) -> types.CallToolResult:
    return await gateway.execute(args.server, args.tool, args.arguments, max_output_chars=args.max_output_chars)


META_TOOLS: tuple[MetaTool, ...] = (
    MetaTool(
        "list_mcp_servers",
        "MCP servers: status, tool count, purpose.",
        ListServersArgs,
        handler=list_mcp_servers,
    ),
    MetaTool(
        "search_tools",
        "Find tools across all servers, ranked. Start here.",
        SearchToolsArgs,
        handler=search_tools,
    ),
    MetaTool(
        "list_tools",
        "Every tool of one server, one line each.",
        ListToolsArgs,
        handler=list_tools,
    ),
    MetaTool(
        "get_tool_details",
        "A tool's description and parameters; call before execute_tool.",
        DetailsArgs,
        handler=get_tool_details,
    ),
    MetaTool(
        "execute_tool",
        "Run a tool with its arguments.",
        ExecuteArgs,
        handler=execute_tool,
        read_only=False,
        runs_tools=True,
    ),
)
BY_NAME = {t.name: t for t in META_TOOLS}


class DiscoverySurface:
    """The five meta-tools: list servers, search, list a server's tools, details, execute."""

    per_client = False
    next_steps: Phrasing = AGENT_STEPS

    instructions = (
        "toolscout fronts many MCP servers. To use one of their tools: search_tools with what you want to do, "
        "get_tool_details for its parameters, then execute_tool. list_mcp_servers shows what is connected."
    )

    def __init__(
        self,
        gateway: Gateway,
        *,
        listing_format: ListingFormat = "text",
        execute_result: ExecuteResult = "native",
        extra: Sequence[MetaTool] = (),
    ) -> None:
        """Offer the five meta-tools, then the `extra` ones (`smart_tool_discovery` with `smartTool: true`)."""
        self.gateway = gateway
        self.listing_format: ListingFormat = listing_format
        self.execute_result: ExecuteResult = execute_result
        self._tools = {**BY_NAME, **{tool.name: tool for tool in extra}}
        self._definitions = [tool.definition() for tool in self._tools.values()]
        self._reach = Reach(gateway, (tool.name for tool in self._tools.values() if tool.runs_tools))

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        return self._reach.applied(self._definitions)

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        return await run_meta_tool(
            self._tools,
            self.gateway,
            name,
            arguments,
            listing_format=self.listing_format,
            execute_result=self.execute_result,
        )

    def native(self, name: str) -> bool:
        return False
