"""A `Scout`'s tools for Anthropic's Messages API, typed by the `anthropic` package (the `anthropic` extra).

Each helper is named for what it returns:

- `tool_param(details, defer_loading=False)` → `ToolParam`: one tool under its native name
  (`server__tool`), its description and input schema; `defer_loading=True` keeps it out of the
  model's context until a tool search returns a `tool_reference` to it.
- `tool_params(scout, server=None, defer_loading=False)` → `list[ToolParam]`: every enabled tool
  (deferred, also those `toolRules` hide from listings: a search may name them).
- `search_tool_param(name="search_tools")` → `ToolParam`: a custom (client-side) tool search tool
  the model calls with `{query, limit?}`; never deferred.
- `tool_reference_blocks(hits)` → `list[ToolReferenceBlockParam]`: search hits as `tool_reference`
  blocks, which load those deferred tools.
- `await tool_search_result(scout, tool_use, server=None, tools=None)` → `ToolResultBlockParam`: runs
  the search a `tool_use` of the search tool asks for and answers with the hits' `tool_reference`
  blocks. A reference must name a tool the request sent (else the API refuses the request): give it
  the `server` given to `tool_params`, and `tools`, the request's tools, to leave out any other hit
  (a server that connected after the request's tools were made).
- `await tool_result(scout, tool_use)` → `ToolResultBlockParam`: maps the block's tool name back to
  `(server, tool)` (`tool_named`), runs it through `Scout.execute` and answers with its text and
  images; a refused call (unknown tool, invalid arguments) is an `is_error` result saying why.
- `await tool_results(scout, content, search_tool="search_tools", server=None, tools=None)` →
  `list[ToolResultBlockParam]`: every `tool_use` block of an assistant message answered, in order:
  the user turn that follows it (`server` and `tools` as for `tool_search_result`).
- `await tool_named(scout, name)` → `(server, tool)`.

A `tool_use` is the response's `ToolUseBlock` or its dict (`ToolUseBlockParam`). docs/PYTHON_API.md has a loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

try:
    from anthropic.types import (
        ImageBlockParam,
        TextBlockParam,
        ToolParam,
        ToolReferenceBlockParam,
        ToolResultBlockParam,
        ToolUseBlock,
    )
except ImportError as exc:  # pragma: no cover - the test environment has the extra
    raise ImportError(
        "toolscout.api.anthropic needs the anthropic package: install toolscout's `anthropic` extra "
        "(pip install 'toolscout[anthropic]')."
    ) from exc

from toolscout.api.results import (
    SEARCH_DESCRIPTION,
    SEARCH_PARAMETERS,
    ImagePart,
    arguments_of,
    blocks_of,
    error_text,
    result_parts,
    searched,
    sent_field,
)
from toolscout.api.scout import Hit, Scout, ToolDetails
from toolscout.errors import GatewayNotOpen, ToolscoutError

__all__ = [
    "IMAGE_TYPES",
    "SEARCH_TOOL",
    "search_tool_param",
    "tool_named",
    "tool_param",
    "tool_params",
    "tool_reference_blocks",
    "tool_result",
    "tool_results",
    "tool_search_result",
]

SEARCH_TOOL = "search_tools"
"""The name `search_tool_param` gives the tool search tool, and `tool_results` answers with a search."""

ImageType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
IMAGE_TYPES: frozenset[str] = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the Messages API reads in a tool result; others are described in words."""

ToolUse = ToolUseBlock | Mapping[str, Any]
"""A `tool_use` block as the response gives it (`ToolUseBlock`) or as a dict (`ToolUseBlockParam`)."""
ResultContent = TextBlockParam | ImageBlockParam


def tool_param(details: ToolDetails, *, defer_loading: bool = False) -> ToolParam:
    """One tool as the Messages API's `tools` takes it, under its native name."""
    param: ToolParam = {"name": details.name, "input_schema": details.input_schema}
    if details.description:
        param["description"] = details.description
    if defer_loading:
        param["defer_loading"] = True
    return param


async def tool_params(scout: Scout, *, server: str | None = None, defer_loading: bool = False) -> list[ToolParam]:
    """Every enabled tool (of `server`, or of all) as `tool_param` gives it; deferred, the hidden ones too."""
    return [
        tool_param(details, defer_loading=defer_loading)
        for details in await scout.tools(server, include_hidden=defer_loading)
    ]


def search_tool_param(name: str = SEARCH_TOOL, *, description: str = SEARCH_DESCRIPTION) -> ToolParam:
    """A custom tool search tool: the model calls it with `{query, limit?}`, `tool_search_result` answers."""
    return {"name": name, "description": description, "input_schema": SEARCH_PARAMETERS}


def tool_reference_blocks(hits: Iterable[Hit]) -> list[ToolReferenceBlockParam]:
    """The hits as `tool_reference` blocks, which load the deferred tools of those names."""
    return [{"type": "tool_reference", "tool_name": hit.name} for hit in hits]


def _fields(tool_use: ToolUse) -> tuple[str, str, object]:
    """A `tool_use` block's id, name and input; `InvalidArguments` when it lacks the id or name the API always sends."""
    if isinstance(tool_use, ToolUseBlock):
        return tool_use.id, tool_use.name, tool_use.input
    block = "tool_use block"
    return sent_field(tool_use, "id", block), sent_field(tool_use, "name", block), _input(tool_use)


def _input(tool_use: object) -> object:
    return cast(Mapping[str, Any], tool_use).get("input") if isinstance(tool_use, Mapping) else None


def _failed(tool_use_id: str, text: str) -> ToolResultBlockParam:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": text}],
        "is_error": True,
    }


async def tool_search_result(
    scout: Scout,
    tool_use: ToolUse,
    *,
    server: str | None = None,
    tools: Iterable[Mapping[str, object]] | None = None,
) -> ToolResultBlockParam:
    """The answer to a `tool_use` of the search tool: the hits' `tool_reference` blocks (a text block
    when nothing was found; an `is_error` one when the search was asked wrongly).

    A `tool_reference` to a tool the request did not send makes the API refuse the request, so the
    search must see the tools that were sent: only `server`'s (give the one given to `tool_params`),
    and, given `tools` (the request's `tools`), only hits of those names.
    """
    tool_use_id, _, arguments = _fields(tool_use)
    try:
        hits = await searched(scout, arguments, server=server)
    except GatewayNotOpen:
        raise  # the program's mistake, not the model's: never an answer to it
    except ToolscoutError as error:
        return _failed(tool_use_id, error_text(error))
    if tools is not None:
        sent = {tool.get("name") for tool in tools}
        hits = [hit for hit in hits if hit.name in sent]
    content: list[ToolReferenceBlockParam | TextBlockParam] = [*tool_reference_blocks(hits)]
    if not content:
        content = [{"type": "text", "text": "No tool matches; search again with other words."}]
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def result_content(parts: Sequence[str | ImagePart]) -> list[ResultContent]:
    """A tool's result parts (`result_parts`) as a `tool_result`'s content blocks."""
    content: list[ResultContent] = []
    for part in parts:
        if isinstance(part, ImagePart):
            media_type = cast(ImageType, part.mime_type)
            content.append({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": part.data}})
        else:
            content.append({"type": "text", "text": part})
    return content


async def tool_result(scout: Scout, tool_use: ToolUse) -> ToolResultBlockParam:
    """Run the tool a `tool_use` block names with its input, through `Scout.execute`: its `tool_result`."""
    tool_use_id, name, arguments = _fields(tool_use)
    try:
        server, tool = await scout.tool_named(name)
        result = await scout.execute(server, tool, arguments_of(arguments))
    except GatewayNotOpen:
        raise  # the program's mistake, not the model's: never an answer to it
    except ToolscoutError as error:
        return _failed(tool_use_id, error_text(error))
    block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": tool_use_id}
    content = result_content(result_parts(result, image_types=IMAGE_TYPES))
    if content:  # (a tool that returned nothing: `content` is optional)
        block["content"] = content
    if result.is_error:
        block["is_error"] = True
    return block


async def tool_results(
    scout: Scout,
    content: Iterable[object],
    *,
    search_tool: str | None = SEARCH_TOOL,
    server: str | None = None,
    tools: Iterable[Mapping[str, object]] | None = None,
) -> list[ToolResultBlockParam]:
    """The answer to every `tool_use` block of an assistant message's `content`, in order (other blocks
    are passed over): a search for those of `search_tool` (among `server`'s tools and `tools`, as
    `tool_search_result` says), the tool's run for the others.

    A block the model got wrong (a tool it has not, arguments its schema refuses) is answered with an
    `is_error` result saying why; one without the `id` or `name` the API always sends raises `InvalidArguments`.
    """
    sent = None if tools is None else list(tools)  # (read at each search: an iterator would be spent at the first)
    answers: list[ToolResultBlockParam] = []
    for block in blocks_of(content, "content", "an assistant message's content (`response.content`)"):
        tool_use = _as_tool_use(block)
        if tool_use is None:
            continue
        if search_tool is not None and _fields(tool_use)[1] == search_tool:
            answers.append(await tool_search_result(scout, tool_use, server=server, tools=sent))
        else:
            answers.append(await tool_result(scout, tool_use))
    return answers


def _as_tool_use(block: object) -> ToolUse | None:
    if isinstance(block, ToolUseBlock):
        return block
    if isinstance(block, Mapping):
        mapping = cast(Mapping[str, Any], block)
        return mapping if mapping.get("type") == "tool_use" else None
    return None


async def tool_named(scout: Scout, name: str) -> tuple[str, str]:
    """The `(server, tool)` a tool name the model used stands for (`Scout.tool_named`)."""
    return await scout.tool_named(name)
