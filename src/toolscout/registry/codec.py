"""Tokens and registrations as the stored JSON bodies every `Registry` backend keeps (SQLite, Redis)."""

from __future__ import annotations

import json
from typing import Any, cast

from toolscout.registry.base import ServerRegistration, TokenRecord, ToolRegistration


def token_body(record: TokenRecord) -> dict[str, Any]:
    """A token's stored body: everything but its id, secret hash and expiry (kept beside it)."""
    return {
        "namespace": record.namespace,
        "servers": list(record.servers),
        "tools": list(record.tools),
        "pinnedTools": list(record.pinned_tools),
        "label": record.label,
        "createdAt": record.created_at,
        "requestsPerMinute": record.requests_per_minute,
        **({"tagged": True} if record.tagged else {}),
    }


def token_from(token_id: str, hashed: str, body: str, expires_at: float | None) -> TokenRecord:
    data = cast(dict[str, Any], json.loads(body))
    return TokenRecord(
        id=token_id,
        namespace=data["namespace"],
        servers=tuple(data["servers"]),
        tools=tuple(data.get("tools") or ()),
        pinned_tools=tuple(data.get("pinnedTools") or ()),
        label=data.get("label"),
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
        requests_per_minute=data.get("requestsPerMinute"),
        secret_hash=hashed,
        tagged=data.get("tagged") is True,
    )


def server_body(registration: ServerRegistration) -> dict[str, Any]:
    return {
        "url": registration.url,
        "transport": registration.transport,
        "headers": dict(registration.headers),
        "description": registration.description,
        "createdAt": registration.created_at,
    }


def server_from(namespace: str, name: str, body: str, expires_at: float | None) -> ServerRegistration:
    data = cast(dict[str, Any], json.loads(body))
    return ServerRegistration(
        namespace=namespace or None,
        name=name,
        url=data["url"],
        transport=data.get("transport") or "http",
        headers=dict(data.get("headers") or {}),
        description=data.get("description"),
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
    )


def tool_body(registration: ToolRegistration) -> dict[str, Any]:
    return {
        "description": registration.description,
        "inputSchema": dict(registration.input_schema),
        "callbackUrl": registration.callback_url,
        "createdAt": registration.created_at,
    }


def tool_from(namespace: str, name: str, body: str, expires_at: float | None) -> ToolRegistration:
    data = cast(dict[str, Any], json.loads(body))
    return ToolRegistration(
        namespace=namespace or None,
        name=name,
        description=data.get("description") or "",
        input_schema=data.get("inputSchema") or {"type": "object"},
        callback_url=data["callbackUrl"],
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
    )
