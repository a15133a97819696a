"""Which protocol era toolscout speaks to an upstream: by transport unless configured, and when refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import PYTHON
from toolscout.config import GatewayConfig
from toolscout.gateway import Gateway
from toolscout.upstream import Status

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
        # Told to speak only the handshake era, it does, and says why it cannot connect.
        strict = gw.server_status(gw.upstream("strict"))
        assert strict["status"] == "error" and "initialize" in strict["error"]
