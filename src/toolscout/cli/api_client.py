"""The command line as a client of a running gateway's HTTP API (`--url`): one request, the admin key
from `TOOLSCOUT_ADMIN_KEY`, and the API's refusals turned into the CLI's errors and exit codes."""

from __future__ import annotations

import os
from typing import Any, cast
from urllib.parse import urlsplit

from toolscout.errors import ConfigurationError, InvalidArguments, ToolscoutError
from toolscout.masking import remember_secrets

ADMIN_KEY_VARIABLE = "TOOLSCOUT_ADMIN_KEY"
API_PREFIX = "/api/v1"
REQUEST_SECONDS = 30.0


class ApiRefused(ToolscoutError):
    """The API refused the request (`status`), for a reason its message says."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def api_base(url: str) -> str:
    """The API's base URL from what a user gives: the gateway's address, with or without `/mcp`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArguments(f"--url must be the gateway's http:// or https:// address, got {url!r}.")
    path = parts.path.rstrip("/").removesuffix("/mcp").removesuffix(API_PREFIX)
    return f"{parts.scheme}://{parts.netloc}{path}{API_PREFIX}"


def _refusal(status: int, body: Any, fallback: str) -> ToolscoutError:
    error: Any = cast(dict[str, Any], body).get("error") if isinstance(body, dict) else None
    message = str(cast(dict[str, Any], error).get("message")) if isinstance(error, dict) else fallback
    message = message.rstrip(". ")  # each answer below ends its own sentence
    if status in (401, 403):
        hint = f" Set {ADMIN_KEY_VARIABLE} to one of the gateway's auth.adminKeys."
        return ConfigurationError(f"The gateway refused the request ({status}): {message}.{hint}")
    if status == 404:
        return ApiRefused(f"{message}.", status)
    if status in (400, 409, 413):
        return InvalidArguments(f"{message}.")
    return ToolscoutError(f"The gateway answered {status}: {message}.")


async def call_api(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """`method` `path` (below `/api/v1`) on the gateway at `url`; its JSON answer (None for 204), or
    the `ToolscoutError` saying why not."""
    import httpx2

    base = api_base(url)
    headers = {"accept": "application/json"}
    key = os.environ.get(ADMIN_KEY_VARIABLE)
    if key:
        remember_secrets([key])  # never in an error or log line, whatever the gateway echoes
        headers["authorization"] = f"Bearer {key}"
    try:
        async with httpx2.AsyncClient(timeout=REQUEST_SECONDS) as http:
            response = await http.request(method, base + path, json=body, headers=headers)
    except httpx2.HTTPError as exc:
        raise ToolscoutError(
            f"Cannot reach the gateway at {base}: {exc or type(exc).__name__}. Is `toolscout serve --transport "
            "http` running there? Without --url, the command edits this machine's registry instead."
        ) from None
    if response.status_code == 204:
        return None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not 200 <= response.status_code < 300:
        fallback = response.text[:200].strip() or response.reason_phrase
        raise _refusal(response.status_code, answer, fallback)
    return answer
