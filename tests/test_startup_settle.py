"""How long catalog questions wait for servers at start (`Gateway.settle_startup`).

Never for a server answering from the persistent catalog; only briefly for the others once it
answered for some; without one, for servers as long as they keep coming, but not for the whole
startup grace because one hangs. Those still connecting are named in the answer.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import PYTHON, ROOT
from tests.kitchen import Kitchen
from tests.test_catalog_store import HANGING, cached_config, meta, remember
from toolscout import gateway as gateway_module
from toolscout.config import StdioServerConfig
from toolscout.gateway import STARTUP_GRACE_SECONDS, WARM_START_GRACE_SECONDS, Gateway
from toolscout.upstream import InProcessUpstream, Status, StdioUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

QUIET = 3.0
"""STARTUP_QUIET_SECONDS for these tests: far longer than two servers starting together can be apart."""


def stdio(name: str, *args: str) -> UpstreamSpec:
    config = StdioServerConfig(command=PYTHON, args=list(args), cwd=str(ROOT))
    return UpstreamSpec(name, StdioUpstream(name, config), connect_timeout=60)


async def test_a_never_listed_server_that_hangs_does_not_hold_the_first_search_from_the_cache(tmp_path: Path) -> None:
    # `units` answered last time and hangs now; `added` was never listed (new in the config) and hangs too.
    added = {"command": PYTHON, "args": ["-c", "import time; time.sleep(61)"], "connectTimeout": 30}
    config = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 30}, "added": added})
    remember(config, "units")
    async with Gateway.from_config(config) as gateway:
        # Far below the startup grace that a server with no stored catalog used to be waited for.
        with anyio.fail_after(WARM_START_GRACE_SECONDS + 2):
            found = await meta(gateway, "search_tools", {"query": "convert miles to kilometers"})
            servers = await meta(gateway, "list_mcp_servers", {})
        assert {u.name: u.status for u in gateway.upstreams} == {"units": Status.CONNECTING, "added": Status.CONNECTING}

    top = found["results"][0]
    assert (top["server"], top["tool"], top["stale"]) == ("units", "convert_units", True)
    assert found["connecting"] == ["added"]  # its tools are missing from the ranking, and the agent is told
    statuses = {s["name"]: (s["status"], s.get("catalog")) for s in servers["servers"]}
    assert statuses == {"units": ("connecting", "cached"), "added": ("connecting", None)}


async def test_with_a_cache_new_servers_are_waited_for_only_until_its_index_is_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Graces far longer than the bound below: only the index being ready can end the wait in time.
    monkeypatch.setattr(gateway_module, "WARM_START_GRACE_SECONDS", 600.0)
    added = {"command": PYTHON, "args": ["-c", "import time; time.sleep(61)"], "connectTimeout": 300}
    config = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 300}, "added": added})
    remember(config, "units")
    async with Gateway.from_config(config, startup_grace=600.0) as gateway:
        with anyio.fail_after(30):
            found = await meta(gateway, "search_tools", {"query": "convert miles to kilometers"})
            await meta(gateway, "list_mcp_servers", {})
    assert found["results"][0]["stale"] is True
    assert found["connecting"] == ["added"]


async def test_without_a_cache_the_first_search_waits_while_servers_arrive_not_for_one_that_hangs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gateway_module, "STARTUP_QUIET_SECONDS", QUIET)
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),  # there at once
        stdio("quick", "-m", "tests.sluggish"),
        stdio("slow", "-m", "tests.sluggish", "--start-after", "1"),  # a second later
        stdio("stuck", "-c", "import time; time.sleep(60)"),
    ]
    grace = 60.0  # what the first search would wait for `stuck` if servers arriving did not end it
    async with Gateway(specs, startup_grace=grace) as gateway:
        with anyio.fail_after(grace / 2):
            found = await meta(gateway, "search_tools", {"query": ["says it is up", "weather in a city"]})
        assert gateway.upstream("quick").status is Status.CONNECTED
        assert gateway.upstream("slow").status is Status.CONNECTED
        assert gateway.upstream("stuck").status is Status.CONNECTING
        # The wait is over for good: later questions do not wait for `stuck` either.
        with anyio.fail_after(1):
            again = await meta(gateway, "search_tools", {"query": "weather"})
            await meta(gateway, "list_mcp_servers", {})

    hits = {(r["server"], r["tool"]) for r in found["results"]}
    assert {("quick", "hello"), ("slow", "hello"), ("kitchen", "get_weather")} <= hits
    assert found["connecting"] == again["connecting"] == ["stuck"]


async def test_without_a_cache_a_question_waits_for_a_slow_only_server() -> None:
    async with Gateway([stdio("slow", "-m", "tests.sluggish", "--start-after", "1")]) as gateway:
        with anyio.fail_after(STARTUP_GRACE_SECONDS - 1):
            found = await meta(gateway, "search_tools", {"query": "says it is up"})
    assert [(r["server"], r["tool"]) for r in found["results"]] == [("slow", "hello")]
    assert "connecting" not in found
