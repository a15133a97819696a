"""What the provider helpers share: a tool's MCP result as the parts a model API takes, a model's
tool call read as a search or as arguments.

A model API takes text and images back from a tool, nothing else: `result_parts` keeps a result's
text and its images of the types the API reads, says in words what it leaves out (audio, other
images, binary resources), writes a resource link and an embedded text resource as text, and when
a result has no content but `structuredContent`, writes that as JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import mcp_types as types

from toolscout.api.scout import API_STEPS, Hit, Scout
from toolscout.errors import InvalidArguments, ToolscoutError

DEFAULT_SEARCH_LIMIT = 5
"""How many tools a tool search the model makes loads when it does not say (each costs its definition's tokens)."""
MAX_SEARCH_LIMIT = 20
"""The most tools one tool search the model makes may load."""

SEARCH_DESCRIPTION = (
    "Find the tools to use, across every connected server. Describe the action and its object in a few "
    "words ('create a note', 'convert units'); the best matching tools are loaded for you to call."
)
"""The description of the tool search tool the helpers define (`search_tool_param`, `tool_search_tool_param`)."""

SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What you want to do, in a few words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "How many tools."},
    },
    "required": ["query"],
}
"""The input schema of that tool search tool."""


@dataclass(frozen=True)
class ImagePart:
    """An image of a tool's result: its MIME type and its data, base64."""

    mime_type: str
    data: str


Part = str | ImagePart


def _size(data: str) -> int:
    """The bytes base64 `data` stands for (roughly, when it is malformed)."""
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def result_parts(result: types.CallToolResult, *, image_types: Collection[str]) -> list[Part]:
    """The text and images (of `image_types`) of `result`, in order; what a model cannot read is said in words."""
    parts: list[Part] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent) and block.mime_type in image_types:
            parts.append(ImagePart(block.mime_type, block.data))
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            parts.append(f"[{kind} of {block.mime_type}, {_size(block.data)} bytes, not shown]")
        elif isinstance(block, types.ResourceLink):
            about = f" ({block.description})" if block.description else ""
            parts.append(f"[resource {block.name}: {block.uri}{about}]")
        elif isinstance(block.resource, types.TextResourceContents):
            parts.append(f"[resource {block.resource.uri}]\n{block.resource.text}")
        else:
            shown = f"{block.resource.mime_type}, " if block.resource.mime_type else ""
            parts.append(f"[resource {block.resource.uri}: {shown}{_size(block.resource.blob)} bytes, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return parts


def error_text(error: ToolscoutError) -> str:
    """A refused call as the model reads it: its code, what went wrong and what to do next."""
    return f"{error.code}: {error.explain(API_STEPS)}"


def sent_field(block: object, key: str, kind: str) -> str:
    """The string `key` of a `kind` (a `tool_use` block, a `function_call` item) that its model API
    always sends, read from its model or its dict.

    A block without it was not passed on as the API sent it: a mistake of the program, not of the
    model, so it raises `InvalidArguments` naming the field (no answer could be matched to the call).
    """
    value = cast(Mapping[str, Any], block).get(key) if isinstance(block, Mapping) else getattr(block, key, None)
    if not isinstance(value, str):
        raise InvalidArguments(
            f"The {kind} has no `{key}` (a string; got {value!r}): pass the {kind} on as the model API sent it."
        )
    return value


def blocks_of(value: object, parameter: str, what: str) -> list[object]:
    """The blocks (or items) of `value`, `what` a response holds; `InvalidArguments` for anything else.

    A string has none: an Anthropic message's content may be plain text, which calls no tool.
    """
    got = type(value).__name__
    if isinstance(value, str):
        return []
    if isinstance(value, Mapping | bytes) or not isinstance(value, Iterable):
        raise InvalidArguments(f"`{parameter}` must be {what}, a list; got {got}.")
    blocks: Iterable[object] = cast(Iterable[object], value)
    return list(blocks)


def arguments_of(raw: object) -> dict[str, Any]:
    """A model's tool arguments: an object, or its JSON text (as OpenAI sends it); else `InvalidArguments`."""
    value: object = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise InvalidArguments(f"The arguments are not valid JSON ({exc}); send them as a JSON object.") from None
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArguments(f"The arguments must be a JSON object, got {type(value).__name__}.")
    return dict(cast(Mapping[str, Any], value))


async def searched(
    scout: Scout, raw: object, *, server: str | None = None, default_limit: int = DEFAULT_SEARCH_LIMIT
) -> list[Hit]:
    """The hits for a tool search the model made with `raw` arguments (`SEARCH_PARAMETERS`), among the
    tools of `server` (or of all)."""
    arguments = arguments_of(raw)
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidArguments("Give the tool search a `query`: what you want to do, in a few words.")
    limit = arguments.get("limit", default_limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidArguments(f"`limit` must be an integer from 1 to {MAX_SEARCH_LIMIT}, got {limit!r}.")
    return await scout.search(query, server=server, limit=limit)
