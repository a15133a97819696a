"""The attacks of `benchmarks/hardening_load.py` beyond floods and big queries, each in a process of its own.

* schema bomb: `execute_tool` on an upstream tool whose input schema is 40 levels of
  `anyOf: [{$ref: next}, {$ref: next}]` (tests/servers/schema_bomb.py), `--bomb-calls` times;
* forged tokens: `--forged` `/mcp` requests, each with a random `ts_...` bearer token;
* registration flood: `--registrations` callback tools registered through the API (admin key),
  past the gateway's cap;
* slow headers: `--slow-sockets` raw connections that send half a request header and wait
  `--slow-hold` seconds, counting those the gateway closed.

Each returns a JSON-ready summary of what the attacker got back.
"""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections import Counter
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
BOMB_SERVER = "bomb"
BOMB_TOOL = "bomb"
CALL_WAIT = 30.0
"""How long the attacker waits for one bomb call before counting it as unanswered."""


def initialize(name: str) -> dict[str, Any]:
    """An `initialize` request of the handshake era from a client called `name`."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}},
    }


async def schema_bomb(url: str, admin_key: str, calls: int) -> dict[str, Any]:
    """`calls` calls of the bomb tool with `{"a": "x"}`, one after the other: what each got back."""
    outcomes: Counter[str] = Counter()
    headers = {"authorization": f"Bearer {admin_key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_WAIT + 10) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        for _ in range(calls):
            arguments = {"server": BOMB_SERVER, "tool": BOMB_TOOL, "arguments": {"a": "x"}}
            with anyio.move_on_after(CALL_WAIT) as waited:
                result = await client.call_tool("execute_tool", arguments)
                content: dict[str, Any] = result.structured_content or {}
                error: dict[str, Any] = content.get("error") or {}
                outcomes[str(error.get("code", "isError" if result.is_error else "ran"))] += 1
            if waited.cancelled_caught:
                outcomes[f"no answer in {CALL_WAIT:g} s"] += 1
    return {"outcomes": outcomes}


async def forged_tokens(url: str, count: int, concurrency: int) -> dict[str, Any]:
    """`count` `initialize` requests, each with a fresh random `ts_...` token: the statuses."""
    statuses: Counter[int] = Counter()
    body = json.dumps(initialize("forger"))
    limiter = anyio.Semaphore(concurrency)
    async with httpx2.AsyncClient(timeout=60) as http, anyio.create_task_group() as tg:

        async def one() -> None:
            async with limiter:
                forged = {**ACCEPT, "authorization": f"Bearer ts_{secrets.token_urlsafe(32)}"}
                try:
                    answer = await http.post(url, content=body, headers=forged)
                except httpx2.HTTPError:
                    statuses[0] += 1
                    return
                statuses[answer.status_code] += 1

        for _ in range(count):
            tg.start_soon(one)
    return {"statuses": statuses}


async def registration_flood(api: str, admin_key: str, count: int, concurrency: int) -> dict[str, Any]:
    """`count` callback tools registered into one namespace: the statuses, and the first refusal's words."""
    statuses: Counter[int] = Counter()
    refusal: list[str] = []
    limiter = anyio.Semaphore(concurrency)
    headers = {"authorization": f"Bearer {admin_key}"}
    schema = {"type": "object", "properties": {"ip": {"type": "string"}}, "required": ["ip"]}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, anyio.create_task_group() as tg:

        async def one(index: int) -> None:
            body = {
                "namespace": "flood",
                "name": f"lookup-{index}",
                "description": f"Looks up address {index}.",
                "inputSchema": schema,
                "callbackUrl": "http://127.0.0.1:9/callback",
            }
            async with limiter:
                answer = await http.post(f"{api}/registry/tools", json=body)
            statuses[answer.status_code] += 1
            if answer.status_code >= 400 and not refusal:
                refusal.append(answer.text[:300])

        for index in range(count):
            tg.start_soon(one, index)
    return {"statuses": statuses, "refusal": refusal[0] if refusal else None}


async def slow_headers(host: str, port: int, count: int, hold: float) -> dict[str, Any]:
    """`count` connections that each send half a request header, held `hold` seconds: how many could be
    opened, and how many the gateway closed by the end."""
    opened: list[socket.socket] = []
    refused = 0
    half = f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n".encode()
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(5)
        try:
            sock.connect((host, port))
            sock.sendall(half)
        except OSError:
            refused += 1
            sock.close()
            continue
        sock.setblocking(False)
        opened.append(sock)
    deadline = time.monotonic() + hold
    closed: set[int] = set()
    while time.monotonic() < deadline and len(closed) < len(opened):
        for index, sock in enumerate(opened):
            if index in closed:
                continue
            try:
                sock.recv(4096)  # an answer (408, 503) or the end of the stream: the gateway gave up on it
            except BlockingIOError:
                continue
            except OSError:
                pass
            closed.add(index)
        await anyio.sleep(0.2)
    for sock in opened:
        sock.close()
    return {"opened": len(opened), "refused": refused, "closed_by_gateway": len(closed)}
