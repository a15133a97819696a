"""A small real HTTP server standing in for a callback tool's URL (a registered tool whose calls are
POSTed to it): it records every POSTed body and answers what the test says, on a free port, in
process (uvicorn)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.helpers.web_site import serving
from toolscout.serve.http import bind

Answer = Callable[[Any], tuple[int, bytes]]
"""From the POSTed JSON, the status and body to answer."""


def text_result(text: str, **extra: Any) -> tuple[int, bytes]:
    """A 200 answer carrying an MCP tool result of one text block."""
    return 200, json.dumps({"content": [{"type": "text", "text": text}], **extra}).encode()


@dataclass
class CallbackSite:
    """The running site: its base URL, what it received, and what it answers next."""

    base: str
    answer: Answer
    received: list[tuple[str, Any, dict[str, str]]] = field(default_factory=list[tuple[str, Any, dict[str, str]]])
    """(path, JSON body, headers) of every POST, in order."""
    hold: anyio.Event = field(default_factory=anyio.Event)
    """`/slow` (and any path under it) answers only once this is set (a callback, or an LLM, that hangs)."""
    body_started: anyio.Event = field(default_factory=anyio.Event)
    """`/held...`: set once the answer's headers and first chunk are sent."""
    body_hold: anyio.Event = field(default_factory=anyio.Event)
    """`/held...` sends the rest of its answer only once this is set; `/held-sized...` announces its
    length (Content-Length) first, `/held-chunked...` does not (chunked)."""

    def url(self, path: str = "/tool") -> str:
        return f"{self.base}{path}"


@asynccontextmanager
async def callback_site(answer: Answer) -> AsyncGenerator[CallbackSite]:
    """Serve a callback site on a free loopback port for the block."""
    sock = bind("127.0.0.1", 0)
    site = CallbackSite(f"http://127.0.0.1:{sock.getsockname()[1]}", answer)

    async def endpoint(request: Request) -> Response:
        body = json.loads(await request.body() or b"null")
        site.received.append((request.url.path, body, dict(request.headers)))
        if request.url.path.startswith("/slow"):
            await site.hold.wait()
        status, content = site.answer(body)
        if request.url.path.startswith("/held"):
            headers = {"content-length": str(len(content))} if request.url.path.startswith("/held-sized") else None
            return StreamingResponse(held(content), status_code=status, media_type="application/json", headers=headers)
        return Response(content, status_code=status, media_type="application/json")

    async def held(content: bytes) -> AsyncGenerator[bytes]:
        step = 256 * 1024
        yield content[:step]
        site.body_started.set()
        await site.body_hold.wait()
        for at in range(step, len(content), step):
            yield content[at : at + step]

    app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["POST"])])
    async with serving(app, sock):
        try:
            yield site
        finally:
            site.hold.set()
            site.body_hold.set()
