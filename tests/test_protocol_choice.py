"""Which protocol era toolscout speaks to an upstream: the handshake era first unless configured, and when refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from benchmarks.processes import UVICORN_READY, running

from tests.helpers.paths import PYTHON
from toolscout.config import GatewayConfig
from toolscout.demo.units import build_server as units_server
from toolscout.gateway.core import Gateway
from toolscout.serve.http import bind
from toolscout.upstream import Status, Upstream

pytestmark = pytest.mark.anyio

UNITS = {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
MODERN_ONLY = {"command": PYTHON, "args": [str(Path(__file__).parent / "fixtures" / "modern_only_server.py")]}


def gateway(servers: dict[str, Any]) -> Gateway:
    return Gateway.from_config(GatewayConfig.model_validate({"mcpServers": servers, "catalogCache": False}))


async def test_a_stdio_server_is_spoken_to_in_the_handshake_era_unless_configured() -> None:
    """The handshake era costs a stdio call 0.1-0.8 ms less (docs/BENCHMARKS.md); `protocol` still decides."""
    async with gateway({"plain": UNITS, "auto": {**UNITS, "protocol": "auto"}}) as gw:
        with anyio.fail_after(30):
            await gw.settle()
        plain, auto = (gw.server_status(gw.upstream(name)) for name in ("plain", "auto"))
        assert (plain["status"], plain["protocolVersion"]) == ("connected", "2025-11-25")
        assert (auto["status"], auto["protocolVersion"]) == ("connected", "2026-07-28")


async def test_a_stdio_server_that_refuses_initialize_is_reached_in_the_2026_era() -> None:
    async with gateway({"modern": MODERN_ONLY, "strict": {**MODERN_ONLY, "protocol": "legacy"}}) as gw:
        with anyio.fail_after(30):
            await gw.settle()
        modern = gw.upstream("modern")
        assert modern.status is Status.CONNECTED and modern.retry_at is None  # at once, not after a backoff
        assert gw.server_status(modern)["protocolVersion"] == "2026-07-28"
        result = await gw.execute("modern", "echo", {"text": "still here"})
        assert not result.is_error and "still here" in str(result.content)
        # Told to speak only the handshake era, it does, and says why it cannot connect. It retries
        # after a backoff, so wait for a failed attempt rather than read whichever state is current.
        await until(gw.upstream("strict"), Status.ERROR)
        strict = gw.server_status(gw.upstream("strict"))
        assert strict["status"] == "error" and "initialize" in strict["error"]


MODERN_ONLY_HTTP = [PYTHON, str(Path(__file__).parent / "fixtures" / "modern_only_server.py"), "--http"]
UNITS_HTTP = [PYTHON, "-m", "toolscout.demo.units", "--transport", "http", "--port", "0"]


async def until(upstream: Upstream, *statuses: Status) -> None:
    with anyio.fail_after(30):
        while upstream.status not in statuses:
            await upstream.wait_changed()


async def test_an_http_server_is_spoken_to_in_the_handshake_era_unless_configured() -> None:
    """At 2026-07-28 a server written for the handshake era has no way to ask the client anything nor
    to take resources/subscribe (tests/test_conformance.py), so that era comes first over HTTP too."""
    async with running(UNITS_HTTP, ready=UVICORN_READY) as units:
        url = f"http://127.0.0.1:{units.match.group(1)}/mcp"
        async with gateway({"plain": {"url": url}, "auto": {"url": url, "protocol": "auto"}}) as gw:
            with anyio.fail_after(30):
                await gw.settle()
            plain, auto = (gw.server_status(gw.upstream(name)) for name in ("plain", "auto"))
            assert (plain["status"], plain["protocolVersion"]) == ("connected", "2025-11-25")
            assert (auto["status"], auto["protocolVersion"]) == ("connected", "2026-07-28")


async def test_an_http_server_that_refuses_initialize_is_reached_in_the_2026_era() -> None:
    async with running(MODERN_ONLY_HTTP, ready=UVICORN_READY) as modern_only:
        url = f"http://127.0.0.1:{modern_only.match.group(1)}/mcp"
        async with gateway({"modern": {"url": url}}) as gw:
            with anyio.fail_after(30):
                await gw.settle()
            modern = gw.upstream("modern")
            assert modern.status is Status.CONNECTED and modern.retry_at is None
            assert gw.server_status(modern)["protocolVersion"] == "2026-07-28"
            result = await gw.execute("modern", "echo", {"text": "over http"})
            assert not result.is_error and "over http" in str(result.content)


class Outage:
    """An ASGI app in front of another that answers every HTTP request 503 while `down`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.down = True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.down:
            await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"down for maintenance"})
            return
        await self.app(scope, receive, send)


async def test_initialize_refused_by_an_outage_does_not_give_up_the_handshake_era() -> None:
    """A refusal that is no evidence of a 2026-only server (an HTTP 503 for every request) leaves the
    handshake era first for the next attempt: once the server is back, it is spoken to in that era."""
    outage = Outage(units_server().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"))
    sock = bind("127.0.0.1", 0)
    web = uvicorn.Server(uvicorn.Config(outage, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        async with gateway({"units": {"url": url}}) as gw:
            units = gw.upstream("units")
            await until(units, Status.ERROR)
            assert units.error is not None and "error response" in units.error
            outage.down = False
            await until(units, Status.CONNECTED)  # after the first backoff, about a second
            assert gw.server_status(units)["protocolVersion"] == "2025-11-25"
        web.should_exit = True
