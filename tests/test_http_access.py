"""`serve --transport http` answers only the Host and Origin headers it is reached by, on every bind
address (DNS rebinding, cross-site requests): real `toolscout serve` processes, real HTTP requests,
the SDK's real client, both protocol eras, stateful and stateless."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, Running, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.paths import PYTHON
from toolscout.config.http import check_host_entry, check_origin_entry
from toolscout.serve.http_guards import AllowList

pytestmark = pytest.mark.anyio

PANCAKES = "Fluffy pancakes"
"""The first line of the files demo's recipes/pancakes.md: what a cross-origin read must not get."""
READ_PANCAKES = {"server": "files", "tool": "read_file", "arguments": {"path": "recipes/pancakes.md"}}
ALLOWED_ORIGIN = "http://app.example:*"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _initialize(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }


def _execute(request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "execute_tool", "arguments": READ_PANCAKES},
    }


@asynccontextmanager
async def serving(bind: str, *extra: str) -> AsyncGenerator[tuple[Running, str]]:
    """`toolscout serve --demo --transport http` bound to `bind`, and the URL to reach it at."""
    command = [PYTHON, "-m", "toolscout", "serve", "--demo", "--transport", "http", "--host", bind, "--port", "0"]
    if bind == "0.0.0.0":
        # No keys configured here: beyond loopback, serving without authentication must be asked for.
        command.append("--insecure-no-auth")
    async with running([*command, *extra], ready=SERVE_READY) as gateway:
        port = re.search(r":(\d+)/mcp$", gateway.match.group(1))
        assert port is not None
        address = "127.0.0.1" if bind == "0.0.0.0" else bind
        yield gateway, f"http://{address}:{port.group(1)}/mcp"


def _text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def _read_pancakes(url: str, era: str, headers: dict[str, str]) -> str:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era) as client,
    ):
        return _text(await client.call_tool("execute_tool", READ_PANCAKES))


def _messages(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "\n".join(_messages(e) for e in cast(BaseExceptionGroup[BaseException], error).exceptions)
    return str(error)


async def _refusal_of(attempt: Awaitable[object]) -> str:
    """What the client was told when `attempt` failed (the SDK client's task groups unwrapped)."""
    try:
        await attempt
    except Exception as exc:
        return _messages(exc)
    raise AssertionError("the request was answered")


async def _post(
    http: httpx2.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx2.Response:
    return await http.post(url, json=body, headers={**ACCEPT, **(headers or {})})


@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
@pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.2"])
async def test_foreign_host_and_origin_are_refused_on_every_bind_address(bind: str, stateless: bool) -> None:
    extra = ["--allow-origin", ALLOWED_ORIGIN, *(["--stateless"] if stateless else [])]
    async with serving(bind, *extra) as (gateway, url), httpx2.AsyncClient(timeout=30) as http:
        announced = next(line for line in gateway.stderr if "answering Host" in line)
        assert "localhost" in announced and ALLOWED_ORIGIN in announced
        if bind == "0.0.0.0":
            assert "the address a request arrives at" in announced

        # Non-browser clients (no Origin) and pages of an allowed origin are answered, in both eras.
        for era in ("legacy", "auto"):
            assert PANCAKES in await _read_pancakes(url, era, {})
            assert PANCAKES in await _read_pancakes(url, era, {"origin": "http://app.example:5173"})
            # A page of another site is refused whatever the era: the client cannot even connect.
            with anyio.fail_after(30):
                refusal = await _refusal_of(_read_pancakes(url, era, {"origin": "http://evil.example"}))
            assert "may not call this gateway" in refusal and PANCAKES not in refusal

        # The same request, as the attacker's page sends it: refused with a body saying why and what to do.
        session: dict[str, str] = {}
        if not stateless:
            opened = await _post(http, url, _initialize())
            assert opened.status_code == 200, opened.text
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        foreign = await _post(http, url, _execute(), {**session, "origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert PANCAKES not in foreign.text
        assert "--allow-origin http://evil.example" in foreign.json()["error"]["message"]
        rebound = await _post(http, url, _execute(), {**session, "host": "evil.example:8765"})
        assert rebound.status_code == 421
        assert "--allow-host evil.example:8765" in rebound.json()["error"]["message"]
        # A 2026-07-28 request is checked as well (the SDK routes it by this header, before sessions).
        modern = await _post(
            http, url, _execute(), {"mcp-protocol-version": "2026-07-28", "origin": "http://evil.example"}
        )
        assert modern.status_code == 403
        # An initialize from a foreign Host opens no session.
        assert (await _post(http, url, _initialize(), {"host": "evil.example"})).status_code == 421
        # And the same request with the gateway's own Host and no Origin reads the file: the refusals
        # above were the guard's, not a malformed request's.
        plain = await _post(http, url, _execute(), session)
        assert plain.status_code == 200 and PANCAKES in plain.text


async def test_names_it_is_reached_by_are_answered_on_a_wildcard_bind() -> None:
    async with serving("0.0.0.0", "--allow-host", "gw.example.com") as (_, url), httpx2.AsyncClient(timeout=30) as http:
        port = url.rsplit(":", 1)[1].split("/")[0]
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "gw.example.com", f"GW.example.com:{port}"):
            answered = await _post(http, url, _initialize(), {"host": host})
            assert answered.status_code == 200, (host, answered.text)
        assert (await _post(http, url, _initialize(), {"host": "gw.example.com.evil.example"})).status_code == 421
        same_site = await _post(http, url, _initialize(), {"origin": f"http://localhost:{port}"})
        assert same_site.status_code == 200


async def test_the_address_a_request_arrives_at_is_its_own_allowed_host() -> None:
    """Bound to every interface, a client that dialled one of the machine's addresses gets answered
    under that address, and only that one (here: loopback 127.0.0.3, which the wildcard bind serves)."""
    async with serving("0.0.0.0") as (_, url), httpx2.AsyncClient(timeout=30) as http:
        port = url.rsplit(":", 1)[1].split("/")[0]
        arrived = f"http://127.0.0.3:{port}/mcp"
        assert (await _post(http, arrived, _initialize(), {"host": f"127.0.0.3:{port}"})).status_code == 200
        assert (await _post(http, arrived, _initialize(), {"host": f"127.0.0.4:{port}"})).status_code == 421


def test_malformed_allow_entries_are_clear_errors() -> None:
    for bad in ("http://x", "a b", "host:99999", ""):
        with pytest.raises(ValueError, match="is not a host"):
            check_host_entry(bad)
    for bad in ("localhost:3000", "http://", "http://x/path"):
        with pytest.raises(ValueError, match="is not an origin"):
            check_origin_entry(bad)
    done = subprocess.run(
        [sys.executable, "-m", "toolscout", "serve", "--demo", "--transport", "http", "--allow-origin", "evil"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "is not an origin" in done.stderr and "Traceback" not in done.stderr


def test_config_file_allow_lists_are_validated() -> None:
    from toolscout.config.models import GatewayConfig

    config = GatewayConfig.model_validate({"http": {"allowedHosts": ["gw.example.com"], "allowedOrigins": ["*"]}})
    allow = AllowList.for_bind("192.0.2.7", config.http.allowed_hosts, config.http.allowed_origins)
    assert allow.host_allowed("gw.example.com:80") and allow.host_allowed("192.0.2.7:8765")
    assert not allow.host_allowed("localhost:8765")  # not bound to loopback: it cannot be reached so
    assert allow.origin_allowed("http://anything.example")
    with pytest.raises(ValueError, match="is not an origin"):
        GatewayConfig.model_validate({"http": {"allowedOrigins": ["localhost"]}})


def test_dns_rebinding_cannot_pass_for_an_address() -> None:
    """Names an attacker's DNS could answer for never match an allowed IP or name by their spelling."""
    allow = AllowList.for_bind("0.0.0.0")
    for host in ("127.0.0.1.evil.example", "localhost.evil.example", "evil.example#@localhost", "localhost@evil"):
        assert not allow.host_allowed(host, "127.0.0.1"), host
    assert not allow.origin_allowed("null")
    assert not allow.origin_allowed("http://localhost@evil.example")
    assert json.loads(json.dumps(allow.describe()))
