"""A flood of `initialize` requests cannot lock other clients out of `serve --transport http`: sessions
are bounded per client address, the least recently used idle one is closed to make room, and idle
sessions expire. A real `toolscout serve` process, real HTTP requests from several loopback addresses
(Linux answers all of 127.0.0.0/8), the SDK's real client; sessions are counted, never timed."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, running, stop
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

PER_CLIENT = 8
MAX_SESSIONS = 24
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
CONVERT = {"value": 1, "from_unit": "km", "to_unit": "m"}


def _config(tmp_path: Path, **http: Any) -> Path:
    """The units demo behind `serve`, with small session limits, and no limit on how fast sessions
    are opened unless `http` sets one (the tests of the other limits open hundreds in a row)."""
    path = tmp_path / "toolscout.json"
    units = {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
    settings = {"maxSessions": MAX_SESSIONS, "maxSessionsPerClient": PER_CLIENT, "sessionOpeningRate": 1e6, **http}
    path.write_text(json.dumps({"mcpServers": {"units": units}, "catalogCache": False, "http": settings}))
    return path


@asynccontextmanager
async def serving(config: Path) -> AsyncGenerator[tuple[anyio.abc.Process, str]]:
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running(command, ready=SERVE_READY) as gateway:
        yield gateway.process, gateway.match.group(1)


def _from(address: str) -> httpx2.AsyncClient:
    """An HTTP client whose connections come from loopback address `address`."""
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=address), timeout=30)


async def _open(http: httpx2.AsyncClient, url: str) -> str:
    opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    return opened.headers["mcp-session-id"]


async def _flood(address: str, url: str, count: int) -> list[str]:
    """`count` sessions opened from `address`, four at a time (fewer than PER_CLIENT: a session whose
    opening request is in flight is busy, and more at once would be refused), in batch order."""
    opened: list[str] = []
    async with _from(address) as http:
        for start in range(0, count, 4):
            batch: list[str] = []
            async with anyio.create_task_group() as tg:

                async def one() -> None:
                    batch.append(await _open(http, url))  # noqa: B023 (awaited within the batch)

                for _ in range(min(4, count - start)):
                    tg.start_soon(one)
            opened.extend(batch)
    return opened


async def _alive(url: str, session_ids: list[str]) -> list[str]:
    """The sessions among `session_ids` the gateway still has (a ping answers; 404 once closed)."""
    alive: list[str] = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for session_id in session_ids:
            answer = await http.post(url, json=PING, headers={**ACCEPT, "mcp-session-id": session_id})
            assert answer.status_code in (200, 404), answer.text
            if answer.status_code == 200:
                alive.append(session_id)
    return alive


async def _convert(url: str, address: str) -> float:
    async with (
        _from(address) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        return await _converted(client)


async def _converted(client: Client) -> float:
    result = await client.call_tool("execute_tool", {"server": "units", "tool": "convert_units", "arguments": CONVERT})
    content: dict[str, Any] | None = result.structured_content
    assert content is not None, result
    return content["result"]


async def test_a_flood_from_one_client_holds_its_share_and_others_get_in(tmp_path: Path) -> None:
    async with serving(_config(tmp_path)) as (process, url):
        # A client that connected before the flood keeps its session: its open GET stream is a
        # request in flight, so the session is never idle and never closed to make room.
        async with (
            _from("127.0.0.2") as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as early,
        ):
            flooded = await _flood("127.0.0.1", url, 300)
            assert len(set(flooded)) == 300  # every initialize was answered: none refused
            # Only the last PER_CLIENT are kept; the older ones were closed as the new ones came.
            alive = await _alive(url, flooded)
            assert len(alive) == PER_CLIENT
            assert set(alive) <= set(flooded[-2 * PER_CLIENT :])
            # Another client gets in and calls a tool, as does a new one from the flooding address.
            assert await _convert(url, "127.0.0.3") == 1000
            assert await _convert(url, "127.0.0.1") == 1000
            assert await _converted(early) == 1000
        # Fast shutdown with many sessions: SIGTERM ends it within procs.stop's grace, no SIGKILL.
        assert await stop(process) == 0


async def test_at_the_gateway_limit_the_idlest_session_of_anyone_makes_room(tmp_path: Path) -> None:
    async with serving(_config(tmp_path)) as (_, url):
        # More clients than the gateway keeps sessions for: each holds at most PER_CLIENT, and the
        # gateway MAX_SESSIONS in all, closing the least recently used idle ones for the new.
        opened: list[str] = []
        for client in range(2, 8):
            opened.extend(await _flood(f"127.0.0.{client}", url, PER_CLIENT))
        alive = await _alive(url, opened)
        assert len(alive) == MAX_SESSIONS
        assert set(alive) == set(opened[-MAX_SESSIONS:])
        # A newcomer still gets in.
        assert await _convert(url, "127.0.0.9") == 1000


async def test_a_refusal_says_why_and_what_to_do(tmp_path: Path) -> None:
    """With every one of its sessions busy (each holding an open GET stream), a client's next
    initialize is refused with 429 and a message saying what to do; nobody else is affected."""
    async with serving(_config(tmp_path, maxSessionsPerClient=2)) as (_, url), _from("127.0.0.2") as http:
        sessions = [await _open(http, url) for _ in range(2)]
        async with anyio.create_task_group() as tg:
            streams_open = [anyio.Event() for _ in sessions]

            async def hold(session_id: str, opened: anyio.Event) -> None:
                headers = {"accept": "text/event-stream", "mcp-session-id": session_id}
                async with http.stream("GET", url, headers=headers) as stream:
                    assert stream.status_code == 200
                    opened.set()
                    async for _ in stream.aiter_bytes():
                        pass

            for session_id, opened in zip(sessions, streams_open, strict=True):
                tg.start_soon(hold, session_id, opened)
            with anyio.fail_after(30):
                for opened in streams_open:
                    await opened.wait()
            refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            assert refused.status_code == 429
            message = refused.json()["error"]["message"]
            assert "127.0.0.2" in message and "Close sessions you no longer use" in message
            assert await _convert(url, "127.0.0.3") == 1000
            tg.cancel_scope.cancel()


async def test_a_client_opening_sessions_in_a_loop_is_answered_cheaply(tmp_path: Path) -> None:
    """Past a burst of maxSessionsPerClient, one address opens sessionOpeningRate sessions a second:
    the rest get 429 at once (no handshake, no session), and other addresses are not affected."""
    async with serving(_config(tmp_path, sessionOpeningRate=0.001)) as (_, url), _from("127.0.0.2") as http:
        statuses: list[int] = []
        for _ in range(PER_CLIENT + 3):
            answer = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                message = answer.json()["error"]["message"]
                assert "faster than" in message and "http.sessionOpeningRate" in message
                assert "mcp-session-id" not in answer.headers
        assert statuses[:PER_CLIENT] == [200] * PER_CLIENT
        assert statuses[PER_CLIENT:] == [429] * 3
        assert await _convert(url, "127.0.0.3") == 1000


async def test_idle_sessions_expire(tmp_path: Path) -> None:
    async with serving(_config(tmp_path, sessionIdleTimeout=0.5)) as (_, url), httpx2.AsyncClient(timeout=30) as http:
        session_id = await _open(http, url)
        # Each probe is a request, which restarts the idle clock: wait longer each time (bounded).
        wait = 1.0
        with anyio.fail_after(60):
            while await _alive(url, [session_id]):
                await anyio.sleep(wait)
                wait *= 2
        answer = await http.post(url, json=PING, headers={**ACCEPT, "mcp-session-id": session_id})
        assert answer.status_code == 404
        assert isinstance(types.JSONRPCError.model_validate(answer.json()), types.JSONRPCError)
