"""Connections that never finish their request's headers cannot hold `serve --transport http`: each
is closed after `http.headerTimeout` (408 when part of a request came), at `http.maxConnections` the one
waiting longest for its headers is closed for a newcomer, and a request being answered is never cut.

A real `toolscout serve` child, raw sockets for the clients that misbehave, the SDK's client for the
one that does not. Every wait is on an event (a socket's end, a progress notification), bounded."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import ServedGateway, served_gateway, structured, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

WAIT = 30
"""Bound on anything a test waits for: far above any header timeout here, and never reached when it works."""
HALF_A_HEADER = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
CONVERT = {"server": "units", "tool": "convert_units", "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"}}
CHATTY = {"command": PYTHON, "args": ["-m", "tests.servers.chatty"]}


def _address(gateway: ServedGateway) -> tuple[str, int]:
    host, port = gateway.base_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


async def _half_open(
    gateway: ServedGateway, streams: AsyncExitStack, sent: bytes = HALF_A_HEADER
) -> anyio.abc.SocketStream:
    """A connection to the gateway that sent `sent` (part of a request's headers) and no more, closed
    with `streams` if the gateway has not closed it by then."""
    stream = await streams.enter_async_context(await anyio.connect_tcp(*_address(gateway)))
    if sent:
        await stream.send(sent)
    return stream


async def _until_closed(stream: anyio.abc.SocketStream) -> bytes:
    """Everything the gateway sent on `stream` until it closed it (waits as long as the caller's scope)."""
    received = b""
    try:
        while True:
            received += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
        return received


async def _converts(gateway: ServedGateway) -> None:
    """A well-behaved client initializes and calls a tool."""
    async with (
        httpx2.AsyncClient(timeout=WAIT) as http,
        Client(streamable_http_client(gateway.mcp_url, http_client=http), mode="legacy") as client,
    ):
        assert structured(await client.call_tool("execute_tool", CONVERT))["result"]


async def test_connections_that_do_not_finish_their_headers_are_closed(tmp_path: Path) -> None:
    config = write_config(tmp_path, http={"headerTimeout": 0.5, "maxConnections": 64})
    async with served_gateway(config) as gateway, AsyncExitStack() as streams:
        halves = [await _half_open(gateway, streams) for _ in range(20)]
        silent = await _half_open(gateway, streams, b"")
        answers: list[bytes] = []

        async def closed(stream: anyio.abc.SocketStream) -> None:
            answers.append(await _until_closed(stream))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for stream in halves:
                    tg.start_soon(closed, stream)
            assert await _until_closed(silent) == b""  # it asked nothing: it is told nothing
        assert len(answers) == 20
        for answer in answers:
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            assert b"did not arrive within 0.5 seconds" in answer
        with anyio.fail_after(WAIT):
            await _converts(gateway)


async def test_a_client_gets_in_while_more_half_open_connections_than_the_bound_are_held(tmp_path: Path) -> None:
    cap = 8
    # A header timeout far beyond the test: only the bound can close the half-open connections.
    config = write_config(tmp_path, http={"headerTimeout": 3600, "maxConnections": cap})
    async with served_gateway(config) as gateway, AsyncExitStack() as streams:
        halves = [await _half_open(gateway, streams) for _ in range(3 * cap)]
        closed: list[int] = []
        enough = anyio.Event()  # the gateway holds at most `cap` of the 3 × cap

        async def watch(index: int, stream: anyio.abc.SocketStream) -> None:
            await _until_closed(stream)
            closed.append(index)
            if len(closed) == 2 * cap:
                enough.set()

        async with anyio.create_task_group() as tg:
            for index, stream in enumerate(halves):
                tg.start_soon(watch, index, stream)
            with anyio.fail_after(WAIT):
                await enough.wait()
            # The ones waiting longest were closed first: the newest `cap` are still open.
            assert sorted(closed) == list(range(2 * cap))
            with anyio.fail_after(WAIT):
                await _converts(gateway)
            tg.cancel_scope.cancel()


async def test_a_request_being_answered_is_never_cut_by_the_header_deadline(tmp_path: Path) -> None:
    config = write_config(tmp_path, http={"headerTimeout": 0.5, "maxConnections": 64}, mcpServers={"chatty": CHATTY})
    arrived = anyio.Event()
    outcome: list[types.CallToolResult] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        arrived.set()  # the call is in flight upstream, its answer an open SSE stream

    async with served_gateway(config) as gateway, AsyncExitStack() as streams:

        async def hold(client: Client) -> None:
            call: dict[str, Any] = {"server": "chatty", "tool": "hold", "arguments": {}}
            outcome.append(await client.call_tool("execute_tool", call, progress_callback=on_progress))

        async with (
            httpx2.AsyncClient(timeout=WAIT) as http,
            Client(streamable_http_client(gateway.mcp_url, http_client=http), mode="legacy") as holder,
        ):
            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(hold, holder)
                    await arrived.wait()
                    # A connection made after the call began is timed out: the call's deadline has passed too.
                    assert (await _until_closed(await _half_open(gateway, streams))).startswith(b"HTTP/1.1 408 ")
                    async with Client(gateway.mcp_url, mode="legacy") as other:
                        release: dict[str, Any] = {"server": "chatty", "tool": "release", "arguments": {}}
                        assert not (await other.call_tool("execute_tool", release)).is_error
            assert outcome and not outcome[0].is_error, outcome
            # The holder's session, its GET stream included, still serves it.
            assert not (await holder.call_tool("list_mcp_servers", {})).is_error


async def test_a_newcomer_is_refused_503_only_when_every_connection_is_being_answered(tmp_path: Path) -> None:
    cap = 2
    config = write_config(tmp_path, http={"headerTimeout": 3600, "maxConnections": cap})
    # Whole headers announcing a body that never comes: each request is being answered (its body awaited).
    started = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    started += b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"
    async with served_gateway(config) as gateway, AsyncExitStack() as streams:
        waiting = await _half_open(gateway, streams, b"")
        busy = [await _half_open(gateway, streams, started) for _ in range(cap)]
        with anyio.fail_after(WAIT):
            assert await _until_closed(waiting) == b""  # closed for a busy one: it had sent nothing
            answer = await _until_closed(await _half_open(gateway, streams))
        assert answer.startswith(b"HTTP/1.1 503 "), answer
        assert b"retry-after: 1" in answer and b"http.maxConnections" in answer
        assert len(busy) == cap
