"""One more process that reads every MCP message, without the SDK: the floor of a proxy that parses.

    python -m benchmarks.message_relay stdio <upstream command...>
    python -m benchmarks.message_relay http <upstream URL>

Between `benchmarks/byte_relay.py` (copies bytes, reads nothing) and `benchmarks/bare_proxy.py`
(the SDK's `Server` and `Client`): each message is parsed with `json.loads` and written again with
`json.dumps`, as a gateway must at the least to know which tool is called and whose answer comes back.
On stdio it starts the upstream and gives each request its own id upstream (mapped back on the
answer, both ways, as a gateway with many clients must). Over HTTP it is served by uvicorn, as
toolscout is, and forwards each request with httpx2, the SDK's HTTP client, headers kept (so the
upstream's session is the client's); JSON bodies and each `data:` line of an event stream are parsed
and written again. It prints `message relay at URL` on stderr once listening. No validation, routing,
audit, log, progress or cancellation handling: what a proxy adds above this row is the SDK's and its
own, what this row adds above the byte relay is the least any reading of the messages costs in Python.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx2
import uvicorn

from benchmarks import byte_relay
from toolscout.serve.http import bind

# Hop-by-hop headers, and the length that re-serialising changes.
NOT_FORWARDED = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _reserialise(data: bytes) -> bytes:
    return json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False).encode()


class IdMap:
    """Requests one side sends get ids of the relay's own; answers from the other side get theirs back."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._next = itertools.count(1)
        self._waiting: dict[str, Any] = {}

    def forward(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            own = f"{self._prefix}{next(self._next)}"
            self._waiting[own] = message["id"]
            message["id"] = own

    def back(self, message: dict[str, Any]) -> None:
        if "method" not in message and "id" in message:
            message["id"] = self._waiting.pop(message["id"], message["id"])


async def relay_stdio(command: list[str]) -> None:
    """`byte_relay`'s stdio copy, each line parsed, its ids mapped and written again."""
    down, up = IdMap("relay-"), IdMap("relay-")  # client → upstream requests; upstream → client requests

    def rewrite(line: bytes, outgoing: IdMap, incoming: IdMap) -> bytes:
        message: dict[str, Any] = json.loads(line)
        outgoing.forward(message)
        incoming.back(message)
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"

    await byte_relay.relay_stdio(
        command, down=lambda line: rewrite(line, down, up), up=lambda line: rewrite(line, up, down)
    )


def http_app(url: str, client: httpx2.AsyncClient) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in NOT_FORWARDED]
        request = client.build_request(
            scope["method"], url, content=_reserialise(body) if body else b"", headers=headers
        )
        response = await client.send(request, stream=True)
        try:
            reply = [(k.encode(), v.encode()) for k, v in response.headers.items() if k.lower() not in NOT_FORWARDED]
            await send({"type": "http.response.start", "status": response.status_code, "headers": reply})
            events = response.headers.get("content-type", "").startswith("text/event-stream")
            if events:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        line = "data: " + _reserialise(line[5:].encode()).decode()
                    await send({"type": "http.response.body", "body": (line + "\n").encode(), "more_body": True})
            else:
                content = await response.aread()
                await send(
                    {"type": "http.response.body", "body": _reserialise(content) if content else b"", "more_body": True}
                )
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    return app


async def relay_http(url: str) -> None:
    # toolscout's own listening socket: made through getaddrinfo, so its proto says TCP and asyncio
    # sets TCP_NODELAY (socket.socket()'s proto 0 left responses waiting for a delayed ACK, 40 ms).
    sock = bind("127.0.0.1", 0)
    async with httpx2.AsyncClient(timeout=None) as client:
        print(f"message relay at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
        config = uvicorn.Config(http_app(url, client), log_level="warning", access_log=False)
        await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        asyncio.run(relay_stdio(sys.argv[2:]))
    else:
        asyncio.run(relay_http(sys.argv[2]))
