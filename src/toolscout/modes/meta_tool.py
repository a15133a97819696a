"""A tool the gateway offers itself: its definition for `tools/list`, and how a call of it runs.

`ToolSpec` is a name, a description for the model and an argument model (arguments.py); its
definition's input schema is the model's, compacted to what a model needs. `MetaTool` adds the
handler; `run_meta_tool` validates a call and runs it. Handlers raise `ToolscoutError`s; the face
turns those into error results at the edge.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, cast

import mcp_types as types

from toolscout.config.models import ListingFormat
from toolscout.errors import InvalidArguments
from toolscout.gateway.core import Gateway
from toolscout.modes.arguments import ArgsT, parse_arguments
from toolscout.render.text import listing_text

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
