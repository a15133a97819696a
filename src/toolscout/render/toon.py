"""TOON for the model and the raw data beside it: what compact mode's `inspect` and `exec` answer.

The MCPX design that compact mode follows answers both tools in two forms: `content` holds the
data compressed to TOON for the model to read, and `structuredContent` holds the same data raw,
as JSON, for programs. `inspect` writes a tool's input and output schemas as TypeScript
signatures in its text (`schemaCompressionEnabled`), and `exec` rewrites each text block of a
result that is a JSON object or array as TOON: the pretty JSON many servers send costs a model
far more tokens (docs/BENCHMARKS.md, "Compact mode's answers in TOON"). Everything else passes
as the server sent it: images, audio, resources and resource links (multimodal passthrough),
text that is not JSON, and failed results, whose raw error message the agent needs as written.

TOON is not always the shorter: on nested lists of unlike objects it can cost more than compact
JSON. `compactFormat: smallest` writes whichever of the two is fewer tokens instead.
"""

from __future__ import annotations

import json
from typing import Any, cast

import anyio
import mcp_types as types
import toon_format

from toolscout.config.models import DEFAULT_MAX_DESCRIPTION_LEN, CompactFormat
from toolscout.render.signatures import signature
from toolscout.render.text import compact_json, count_tokens

_COMPRESSED_ON_LOOP_CHARS = 64 * 1024
"""A result whose text is longer than this is parsed and compressed in a worker thread."""

SCHEMA_FIELDS = ("input_schema", "output_schema")
"""The fields of `inspect`'s data that hold a JSON Schema, written as TypeScript in its text."""


def toon_text(data: Any) -> str:
    """Return `data` as TOON; compact JSON when TOON cannot write it or writes nothing (an empty object)."""
    try:
        written = toon_format.encode(data)
    except (TypeError, ValueError):
        return compact_json(data)
    return written or compact_json(data)


def data_text(data: Any, text_format: CompactFormat = "toon") -> str:
    """Return `data` as TOON; with `smallest`, as compact JSON when that is fewer o200k_base tokens.

    TOON wins on objects and on lists of like rows; on nested lists of unlike objects it can cost
    more than compact JSON, which `smallest` (`compactFormat`) then writes instead.
    """
    written = toon_text(data)
    if text_format == "toon":
        return written
    as_json = compact_json(data)
    return written if count_tokens(written) < count_tokens(as_json) else as_json


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: the text passes as is rather than become a value no client can read.
    raise ValueError(f"{name} is not JSON")


def json_value(text: str) -> dict[str, Any] | list[Any] | None:
    """Return the object or array `text` is the JSON of, or None when it is anything else.

    A lone number, string or boolean is left alone: it is as short as TOON would write it.
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    return cast(list[Any], value) if isinstance(value, list) else None


def compressed_result(result: types.CallToolResult, text_format: CompactFormat = "toon") -> types.CallToolResult:
    """Return `result` with each JSON text block written as TOON (`data_text`) and the raw value in
    `structuredContent`.

    A server's own `structuredContent` is kept as it is. When it sent none and one text block was
    JSON, that value becomes `structuredContent`; an array is wrapped as `{"result": [...]}`, as
    servers wrap a tool's list, since `structuredContent` must be an object.
    A failed result passes untouched.
    """
    if result.is_error:
        return result
    content: list[types.ContentBlock] = []
    values: list[dict[str, Any] | list[Any]] = []
    for block in result.content:
        if not isinstance(block, types.TextContent) or (value := json_value(block.text)) is None:
            content.append(block)
            continue
        try:
            written = data_text(value, text_format)
        except RecursionError:  # nested past what the encoders walk: the server's text is still readable
            content.append(block)
            continue
        content.append(block.model_copy(update={"text": written}))
        values.append(value)
    if not values:
        return result
    structured = result.structured_content
    if structured is None and len(values) == 1:
        only = values[0]
        structured = only if isinstance(only, dict) else {"result": only}
    return result.model_copy(update={"content": content, "structured_content": structured})


async def compressed_result_off_loop(
    result: types.CallToolResult, text_format: CompactFormat = "toon"
) -> types.CallToolResult:
    """Run `compressed_result`, in a worker thread when the result's text is long (parsing it holds the loop)."""
    size = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    if size <= _COMPRESSED_ON_LOOP_CHARS:
        return compressed_result(result, text_format)
    return await anyio.to_thread.run_sync(compressed_result, result, text_format)


def schemas_as_typescript(
    data: dict[str, Any], *, max_description_len: int = DEFAULT_MAX_DESCRIPTION_LEN
) -> dict[str, Any]:
    """Return a tool's `inspect` data with its schemas written as TypeScript signatures.

    `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}` becomes
    `{path: string}`; property descriptions stay as comments cut to `max_description_len`
    characters (0 leaves them out).
    """
    return {
        key: signature(value, max_description_len=max_description_len) if key in SCHEMA_FIELDS else value
        for key, value in data.items()
    }
