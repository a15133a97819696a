"""A tool the gateway offers itself: its arguments, its definition for `tools/list`, and how a call of it runs.

Every such tool (the meta-tools, compact's two, dynamic's two, `smart_tool_discovery`) declares its
arguments as an `ArgsModel`. `parse_arguments` validates a call against it and, on a mistake, says in
words what each argument expected and what came, so that a model can fix its call. `ToolSpec` is a
name, a description for the model and an argument model; its definition's input schema is the
model's, compacted to what a model needs. `MetaTool` adds the handler, and `run_meta_tool` validates
a call and runs it. Handlers raise `ToolscoutError`s, which the face turns into error results at the
edge.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import mcp_types as types
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from toolscout.config.models import ListingFormat
from toolscout.errors import InvalidArguments
from toolscout.gateway.core import Gateway
from toolscout.render.text import listing_text


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

    def definition(self) -> types.Tool:
        """The tool as `tools/list` gives it."""
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=_compact_schema(self.args.model_json_schema(by_alias=True)),
            # Only what differs from the spec's default (not read-only) and lets clients auto-approve.
            annotations=types.ToolAnnotations(read_only_hint=True) if self.read_only else None,
        )

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
) -> types.CallToolResult | None:
    """Validate the arguments of the tool called `name` and run it; None when there is no such tool.

    With `listing_format="toon"` a listing's text is its data as a TOON table or compact JSON,
    whichever is fewer tokens (`listing.listing_text`), instead of toolscout's line format.
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
    if listing_format == "toon" and name in LISTINGS and result.structured_content is not None:
        table = types.TextContent(text=listing_text(result.structured_content))
        result = result.model_copy(update={"content": [table]})
    return result
