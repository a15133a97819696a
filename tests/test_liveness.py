"""An upstream pinged every `ping_seconds` (every registered server is) is seen to be gone when its
HTTP server dies, in either protocol era, and is connected again once the server is back: without
the ping, a streamable HTTP server that died looks connected until a call fails on it."""

from __future__ import annotations

import dataclasses

import anyio
import pytest
from benchmarks.processes import UVICORN_READY, free_port, running, stop

from tests.helpers.paths import PYTHON
from toolscout.config.models import HttpServerConfig
from toolscout.gateway.core import Gateway
from toolscout.upstream import Status, Upstream, UpstreamSpec

pytestmark = pytest.mark.anyio


async def status_becomes(upstream: Upstream, status: Status) -> None:
    with anyio.fail_after(30):
        while upstream.status is not status:
            await upstream.wait_changed()


@pytest.mark.parametrize(("protocol", "era"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_a_pinged_server_that_dies_is_seen_gone_and_found_again(protocol: str, era: str) -> None:
    port = free_port()
    demo = [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", str(port)]
    spec = UpstreamSpec.from_config("text", HttpServerConfig(url=f"http://127.0.0.1:{port}/mcp"))
    spec = dataclasses.replace(spec, protocol=protocol, ping_seconds=0.2, backoff_max=1.0)
    async with running(demo, ready=UVICORN_READY) as server, Gateway([spec]) as gateway:
        upstream = gateway.upstream("text")
        await status_becomes(upstream, Status.CONNECTED)
        assert upstream.identity is not None
        assert upstream.identity.protocol_version == era
        await stop(server.process)
        await status_becomes(upstream, Status.DISCONNECTED)  # no call made: the ping told
        assert upstream.error
        async with running(demo, ready=UVICORN_READY):
            await status_becomes(upstream, Status.CONNECTED)
            result = await gateway.execute("text", "slugify", {"text": "Found Again"})
            assert not result.is_error
