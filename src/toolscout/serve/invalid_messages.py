"""What the gateway answers, on stdio, a line that is not a valid JSON-RPC message.

The SDK drops such a line (it logs it at debug level), so a client that sent a request it waits on
(a batch, `"jsonrpc": "1.0"`, nesting too deep to parse, an id of thousands of digits, a field of
the wrong type) waited forever. JSON-RPC 2.0 says what to answer: -32700 (parse error) for what is
not JSON, -32600 (invalid request) for JSON that is not a request, with the request's id when it
can be made out and `null` otherwise; a response, even a malformed one, is never answered.

Nothing here recurses or takes more than linear time: JSON is parsed by pydantic-core, whose depth
is capped; when that fails, `top_level_id` reads the top-level `"id"` member with an iterative scan
(and `too_deep`, the same scan, tells the HTTP API a body nested too deep before it is parsed).
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
import pydantic_core

MAX_ID_DIGITS = 19
"""The longest integer id echoed back (int64's): a longer one is answered with `"id": null`."""
_HOW = "Send each JSON-RPC 2.0 message as one JSON object on one line."

_SPACE = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_STRUCTURE = re.compile(r'["{}\[\]]')
_INTEGER = re.compile(rf"-?(?:0|[1-9][0-9]{{0,{MAX_ID_DIGITS - 1}}})(?=[ \t\r\n]*[,}}])")


class InvalidMessage(ValueError):
    """A line that parses as JSON-RPC only by ignoring part of it (a request whose id is not valid)."""


def answers(line: str) -> list[types.JSONRPCError]:
    """The errors to send for `line`, which did not parse as a JSON-RPC message (none for a blank
    line or a response)."""
    if not line.strip():
        return []
    try:
        decoded: Any = pydantic_core.from_json(line)
    except ValueError as exc:
        reason = str(exc)
        return [_error(types.PARSE_ERROR, f"Parse error: {reason}. {_HOW}", top_level_id(line))]
    if isinstance(decoded, list):
        items: list[Any] = decoded  # pyright: ignore[reportUnknownVariableType]
        message = f"Invalid Request: batches are not supported (MCP removed them in 2025-06-18). {_HOW}"
        ids = [_valid_id(item) for item in items if isinstance(item, dict) and _is_request(item)]  # pyright: ignore[reportUnknownArgumentType]
        return [_error(types.INVALID_REQUEST, message, i) for i in ids if i is not None] or [
            _error(types.INVALID_REQUEST, message, None)
        ]
    if not isinstance(decoded, dict):
        return [_error(types.INVALID_REQUEST, f"Invalid Request: a message is a JSON object. {_HOW}", None)]
    fields: dict[str, Any] = decoded  # pyright: ignore[reportUnknownVariableType]
    if not _is_request(fields):
        return []
    return [_error(types.INVALID_REQUEST, f"Invalid Request: {_what_is_wrong(fields)}.", _valid_id(fields))]


def has_id_member(line: str | bytes) -> bool:
    """Whether `line` (valid JSON) is an object with an `id` member."""
    try:
        decoded: Any = pydantic_core.from_json(line)
    except ValueError:
        return False
    return isinstance(decoded, dict) and "id" in decoded


def top_level_id(text: str) -> types.RequestId | None:
    """The `id` member of the JSON object `text`, read without parsing the rest (which may be too
    deep, too large, or broken after it): a string, or an integer of at most `MAX_ID_DIGITS`
    digits; None when there is none such. One pass, no recursion."""
    start = _SPACE.match(text).end()  # type: ignore[union-attr]  # (matches the empty string)
    if not text.startswith("{", start):
        return None
    depth, pos = 1, start + 1
    while (found := _STRUCTURE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:  # never closed
                return None
            pos = string.end()
            if depth == 1 and string.group() == '"id"':
                colon = _skip_space(text, pos)
                if text.startswith(":", colon):
                    return _id_at(text, _skip_space(text, colon + 1))
        elif char in "{[":
            depth += 1
            pos += 1
        else:
            depth -= 1
            if depth == 0:
                return None
            pos += 1
    return None


def too_deep(text: str, limit: int) -> bool:
    """Whether the JSON `text` nests objects and arrays more than `limit` deep (strings skipped),
    told before it is parsed: one pass, no recursion, whatever the depth."""
    depth, pos = 0, 0
    while (found := _STRUCTURE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:  # never closed: the parser says so
                return False
            pos = string.end()
            continue
        depth += 1 if char in "{[" else -1
        if depth > limit:
            return True
        pos += 1
    return False


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # (matches the empty string)


def _id_at(text: str, pos: int) -> types.RequestId | None:
    if (string := _STRING.match(text, pos)) is not None:
        try:
            value = json.loads(string.group())
        except ValueError:  # a bad escape
            return None
        return value if isinstance(value, str) else None
    if (integer := _INTEGER.match(text, pos)) is not None:
        return int(integer.group())
    return None


def _is_request(fields: dict[str, Any]) -> bool:
    """Whether a JSON object is meant as a request or notification (what has no `method` and has a
    `result` or an `error` is a response: never answered)."""
    return "method" in fields or not ("result" in fields or "error" in fields)


def _valid_id(fields: dict[str, Any]) -> types.RequestId | None:
    value = fields.get("id")
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**MAX_ID_DIGITS:
        return value
    return None


def _what_is_wrong(fields: dict[str, Any]) -> str:
    if fields.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in fields and _valid_id(fields) is None:
        return f'"id" must be a string or an integer of at most {MAX_ID_DIGITS} digits'
    method = fields.get("method")
    if method is None:
        return 'a request needs a "method"'
    if not isinstance(method, str):
        return '"method" must be a string'
    if "params" in fields and not isinstance(fields["params"], dict):
        return '"params" must be an object'
    return "not a JSON-RPC 2.0 request or notification"


def _error(code: int, message: str, request_id: types.RequestId | None) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
