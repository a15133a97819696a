"""2026-07-28 input-required rounds across replicas: a retry that lands on another replica is passed to
the one that holds the call.

A call in rounds runs on the replica that started it (rounds.py): its upstream is waiting there for
the client's answers. Its `requestState` starts with that replica's id (`<id>.<secret>`), and each
replica publishes where it answers (`ReplicaDirectory`: the Redis registry, refreshed while it
runs). A balancer without stickiness may send the client's retry anywhere: a replica that gets a
retry for another one's call forwards the request as it came (same body, same credential: the owner
authenticates it again) and streams the owner's answer back. The owner unknown or gone: the request
is served here, which answers that the `requestState` is unknown, and the client starts over.

Only POSTs to /mcp whose JSON-RPC `params.requestState` names another replica are read and
forwarded (bodies up to `MAX_FORWARD_BYTES`); everything else passes through untouched.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Protocol, cast, runtime_checkable

import anyio
import httpx2
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

MAX_FORWARD_BYTES = 4_000_000
"""The largest retry read to find its `requestState` (a bigger body is served here)."""
FORWARDED = "x-toolscout-forwarded"
"""Marks a forwarded request: it is never forwarded again."""
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length", "host"})


@runtime_checkable
class ReplicaDirectory(Protocol):
    """Where each replica of a gateway answers (the Redis registry)."""

    async def replica_url(self, replica: str) -> str | None:
        """The base URL replica `replica` serves at, None when unknown (or gone)."""
        ...

    async def announce_replica(self, replica: str, url: str, ttl: float) -> None:
        """Say that `replica` answers at `url` for the next `ttl` seconds."""
        ...


ANNOUNCE_SECONDS = 10.0
"""How often a replica says where it answers; what it said lasts three times as long."""


@asynccontextmanager
async def announcing(directory: ReplicaDirectory, replica: str, url: str) -> AsyncGenerator[None]:
    """Keep saying, while the block runs, that `replica` answers at `url` (Redis away: tried again)."""

    async def announce() -> None:
        while True:
            try:
                await directory.announce_replica(replica, url, 3 * ANNOUNCE_SECONDS)
            except Exception as exc:  # RegistryUnavailable: the next announcement may get through
                logger.warning("replica %s could not say where it answers: %s", replica, exc)
            await anyio.sleep(ANNOUNCE_SECONDS)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce, name="replica announcement")
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


def owner_of(state: str, own: str) -> str | None:
    """The replica a `requestState` belongs to, when it is not this one (`own`)."""
    replica, dot, _ = state.partition(".")
    return replica if dot and replica and replica != own else None


class Forwarder:
    """ASGI middleware forwarding another replica's input-required retries to it."""

    def __init__(self, app: ASGIApp, replica: str, directory: ReplicaDirectory, path: str = "/mcp") -> None:
        self.app = app
        self.replica = replica
        self.directory = directory
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if FORWARDED in headers:
            await self.app(scope, receive, send)
            return
        body, more = await _read(receive)
        owner = None if more else self._owner(body)
        target = await self.directory.replica_url(owner) if owner is not None else None
        if target is None:
            await self.app(scope, _replay(body, receive, more), send)
            return
        logger.info("input-required retry forwarded to replica %s", owner)
        await _forward(target.rstrip("/") + self.path, headers, body, send)

    def _owner(self, body: bytes) -> str | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        params = cast(dict[str, Any], message).get("params")
        state = cast(dict[str, Any], params).get("requestState") if isinstance(params, dict) else None
        return owner_of(state, self.replica) if isinstance(state, str) else None


async def _read(receive: Receive) -> tuple[bytes, bool]:
    """The request body up to `MAX_FORWARD_BYTES`; whether more is left unread."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = cast(bytes, message.get("body", b""))
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False
        if size > MAX_FORWARD_BYTES:
            return b"".join(chunks), True


def _replay(body: bytes, receive: Receive, more: bool) -> Receive:
    """A `receive` giving the inner app the body read so far, then the rest as it comes."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay


async def _forward(url: str, headers: dict[str, str], body: bytes, send: Send) -> None:
    """POST `body` to the owner and stream its answer back as it comes (SSE included)."""
    outgoing = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
    outgoing[FORWARDED] = "1"
    started = False
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=None)) as http,
            http.stream("POST", url, content=body, headers=outgoing) as answer,
        ):
            kept = [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in answer.headers.items()
                if k.lower() not in _HOP_BY_HOP
            ]
            await send({"type": "http.response.start", "status": answer.status_code, "headers": kept})
            started = True
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx2.TransportError as exc:  # the owner went away: the client starts over
        if not started:
            error = {"code": -32603, "message": f"the replica holding this call is gone ({exc}): send it again"}
            content = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            headers_out = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 502, "headers": headers_out})
            await send({"type": "http.response.body", "body": content})
            return
    await send({"type": "http.response.body", "body": b"", "more_body": False})
