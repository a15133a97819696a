"""What every handler of the HTTP API (`/api/v1/...`) shares: its JSON error shape, reading a JSON
body within bounds, and the admin check.

An error is `{"error": {"code": ..., "message": ...}}` with the HTTP status that says what kind of
mistake it was (400 a bad body, 401 no credential, 403 not an admin, 404 unknown, 409 a name taken,
413 too large); the message says what to do next and never echoes a credential.
"""

from __future__ import annotations

import json
from typing import Any, cast

from starlette.requests import Request

from toolscout.serve.auth import principal_of
from toolscout.serve.invalid_messages import too_deep

MAX_BODY_BYTES = 1_000_000
"""The largest API request body: a tool's input schema fits many times over."""
MAX_BODY_DEPTH = 64
"""The deepest nesting of objects and arrays in an API request body: a tool's input schema nests a few
levels (each property two: `properties`, then its schema), so 64 leave room for about 30 levels of
properties, while Python's parser and jsonschema, which recurse, stay far from their limits."""


class ApiError(Exception):
    """A refusal of an API request, answered as `error_response` (raised inside a handler)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def require_admin(request: Request) -> None:
    """Refuse (403) a request whose principal may not use the API (a client key or issued token)."""
    if not principal_of(request).admin:
        raise ApiError(
            403, "FORBIDDEN", "this API needs an admin key (auth.adminKeys); client keys and tokens may only use /mcp"
        )


async def json_object(request: Request) -> dict[str, Any]:
    """The request's body as a JSON object, or `ApiError` saying what is wrong with it."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise ApiError(413, "TOO_LARGE", f"the request body is over {MAX_BODY_BYTES} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "INVALID_JSON", f"the request body is not UTF-8 ({exc}); send a JSON object") from None
    if too_deep(text, MAX_BODY_DEPTH):  # before parsing: the parser (and what reads the result) recurses
        raise ApiError(
            400, "INVALID_JSON", f"the request body nests objects and arrays more than {MAX_BODY_DEPTH} deep"
        )
    try:
        data = json.loads(text or "null")
    except ValueError as exc:
        raise ApiError(400, "INVALID_JSON", f"the request body is not JSON ({exc}); send a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "INVALID_JSON", "the request body must be a JSON object")
    return cast(dict[str, Any], data)
