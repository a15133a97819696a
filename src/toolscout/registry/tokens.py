"""Issuing a token from a request: what `POST /api/v1/tokens` and `toolscout token create` share.

A request names the token's namespace, servers, optional tool rules and pinned tools, its life in
seconds, a label and an optional rate. Everything is checked before anything is stored; a mistake
is a `TokenRequestError` saying which field and what to write instead. The secret (`ts_...`, tagged
under the registry's key: tags.py) is returned once, to be shown once; only its hash is stored.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping
from typing import Any, cast

from pydantic import ValidationError

from toolscout.config.scopes import Scope
from toolscout.registry.base import Registry, TokenRecord, new_secret, secret_hash
from toolscout.suggestions import closest

TOKEN_FIELDS = ("namespace", "servers", "tools", "pinnedTools", "ttlSeconds", "label", "requestsPerMinute")
MAX_TTL_SECONDS = 366 * 24 * 3600
"""A token lives a year at most: tokens are meant to be short-lived (a run's), and one that is
forgotten should not work for ever."""
MAX_LABEL_CHARS = 100


class TokenRequestError(ValueError):
    """A token request that cannot be issued; the message says what to change."""


def _strings(data: Mapping[str, Any], name: str, *, required: bool = False) -> list[str]:
    value = data.get(name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in cast(list[Any], value)):
        raise TokenRequestError(f"{name} must be a list of non-empty strings")
    return cast(list[str], value)


def _ttl(data: Mapping[str, Any]) -> float:
    ttl = data.get("ttlSeconds")
    if ttl is None:
        raise TokenRequestError("ttlSeconds is required: how many seconds the token lives (a run's length)")
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise TokenRequestError(f"ttlSeconds must be a positive number of seconds, got {ttl!r}")
    if ttl > MAX_TTL_SECONDS:
        raise TokenRequestError(f"ttlSeconds may be at most {MAX_TTL_SECONDS} (366 days), got {ttl!r}")
    return float(ttl)


def _label(data: Mapping[str, Any]) -> str:
    label = data.get("label")
    if not isinstance(label, str) or not label.strip():
        raise TokenRequestError("label is required: a name for the token in the audit log and the token list")
    if len(label) > MAX_LABEL_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise TokenRequestError(f"label must be at most {MAX_LABEL_CHARS} characters, without control characters")
    return label


def _rate(data: Mapping[str, Any]) -> int | None:
    rate = data.get("requestsPerMinute")
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
        raise TokenRequestError(f"requestsPerMinute must be a whole number of at least 1, got {rate!r}")
    return rate


def token_request(data: Mapping[str, Any], now: float, key: bytes) -> tuple[TokenRecord, str]:
    """The record to store and the secret to show once, for the token `data` asks for, issued at `now`
    and tagged under the registry's `key`.

    Raises:
        TokenRequestError: a field is unknown, missing or wrong.
    """
    unknown = sorted(set(data) - set(TOKEN_FIELDS))
    if unknown:
        hints = [
            f"{n!r} (did you mean {h[0]!r}?)" if (h := closest(n, TOKEN_FIELDS, limit=1, cutoff=70)) else repr(n)
            for n in unknown
        ]
        raise TokenRequestError(f"unknown field {', '.join(hints)}; a token request has {', '.join(TOKEN_FIELDS)}")
    namespace = data.get("namespace")
    if not isinstance(namespace, str):
        raise TokenRequestError("namespace is required: the run (spec 002's run id) the token belongs to")
    servers = _strings(data, "servers", required=True)
    if not servers:
        raise TokenRequestError('servers must name at least one server (a name, a group prefix, or "*" for all)')
    raw_tools: Any = data.get("tools") or []
    if not isinstance(raw_tools, list) or not all(isinstance(t, str | dict) for t in cast(list[Any], raw_tools)):
        raise TokenRequestError('tools must be a list of patterns ("!*delete*") or toolRules entries')
    tools = cast(list[str | dict[str, Any]], raw_tools)
    pinned = _strings(data, "pinnedTools")
    for name in pinned:
        server, _, tool = name.partition("/")
        if not server or not tool:
            raise TokenRequestError(f"pinnedTools entry {name!r} must be written server/tool")
    ttl, label, rate = _ttl(data), _label(data), _rate(data)
    try:
        Scope.of(namespace=namespace, servers=servers, tools=tools, pinned_tools=pinned, label=label)
    except ValidationError as exc:
        raise TokenRequestError(f"tools: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    except ValueError as exc:  # the namespace's own message names it; a pattern's does not
        message = str(exc)
        raise TokenRequestError(message if message.startswith("namespace") else f"tools: {message}") from None
    secret = new_secret(key)
    record = TokenRecord(
        id="tok_" + secrets.token_hex(8),
        namespace=namespace,
        servers=tuple(servers),
        tools=tuple(tools),
        pinned_tools=tuple(pinned),
        label=label,
        expires_at=now + ttl,
        created_at=now,
        requests_per_minute=rate,
        secret_hash=secret_hash(secret),
        tagged=True,
    )
    return record, secret


async def issue_token(registry: Registry, data: Mapping[str, Any], now: float | None = None) -> tuple[TokenRecord, str]:
    """Check `data` (`token_request`), store the token in `registry`, and return it with its secret."""
    record, secret = token_request(data, time.time() if now is None else now, await registry.token_key())
    await registry.add_token(record)
    return record, secret
