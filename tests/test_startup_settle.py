"""What catalog questions wait for at start (`Gateway.settle_startup`): decided by the servers' states.

A server the persistent catalog answers for is never waited for. Any other server on its first
attempt to connect is waited for until that attempt ends (connected, failed, idle), which its
connect timeout bounds; a server that failed is not waited for again while it retries. No clock
decides: a server that is slow to start on a busy machine is still in the first answer.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.helpers.catalog_cache import HANGING, cached_config, meta, remember
from tests.helpers.paths import PYTHON, ROOT
from tests.servers.kitchen import Kitchen
from toolscout.config import StdioServerConfig
from toolscout.gateway.core import Gateway
from toolscout.serve.dashboard.playground import ranked
from toolscout.upstream import InProcessUpstream, Status, StdioUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

BOUND = 60
"""Every wait here is bounded by this; the servers that must not be waited for take far longer."""


def stdio(name: str, *args: str, connect_timeout: float = 60, reconnect: bool = True) -> UpstreamSpec:
    config = StdioServerConfig(command=PYTHON, args=list(args), cwd=str(ROOT))
    return UpstreamSpec(name, StdioUpstream(name, config), connect_timeout=connect_timeout, reconnect=reconnect)


async def test_with_a_cache_a_stored_server_is_not_waited_for_and_a_new_one_until_its_attempt_ends(
    tmp_path: Path,
) -> None:
    # `units` answered last time and hangs now; `added` is new in the config and hangs too, for 3 s.
    added = {**HANGING, "connectTimeout": 3, "reconnect": False}
    config = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 600}, "added": added})
    remember(config, "units")
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(BOUND):  # far below `units`' connect timeout: only `added` is waited for
            found = await meta(gateway, "search_tools", {"query": "convert miles to kilometers"})
            servers = await meta(gateway, "list_mcp_servers", {})
        statuses = {u.name: u.status for u in gateway.upstreams}
        assert statuses == {"units": Status.CONNECTING, "added": Status.ERROR}

    top = found["results"][0]
    assert (top["server"], top["tool"], top["stale"]) == ("units", "convert_units", True)
    assert "connecting" not in found  # `units` answers from the cache; `added` had its chance and failed
    listed = {s["name"]: (s["status"], s.get("catalog")) for s in servers["servers"]}
    assert listed == {"units": ("connecting", "cached"), "added": ("error", None)}
    assert "did not finish connecting within 3s" in next(s["error"] for s in servers["servers"] if s["name"] == "added")


async def test_without_a_cache_the_first_search_waits_for_every_server_that_is_still_starting() -> None:
    specs = [
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),  # there at once
        stdio("quick", "-m", "tests.servers.sluggish"),
        # Seconds after the others: a server importing slowly on a loaded machine. A quiet time
        # after the last server listed its tools (the old rule) gave up on it.
        stdio("slow", "-m", "tests.servers.sluggish", "--start-after", "4"),
        stdio("stuck", "-c", "import time; time.sleep(600)", connect_timeout=3, reconnect=False),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(BOUND):
            found = await meta(gateway, "search_tools", {"query": ["says it is up", "weather in a city"]})
        statuses = {u.name: u.status for u in gateway.upstreams}
        assert statuses == {
            "kitchen": Status.CONNECTED,
            "quick": Status.CONNECTED,
            "slow": Status.CONNECTED,
            "stuck": Status.ERROR,  # waited for until its connect timeout, no longer
        }

    hits = {(r["server"], r["tool"]) for r in found["results"]}
    assert {("quick", "hello"), ("slow", "hello"), ("kitchen", "get_weather")} <= hits
    assert "connecting" not in found


async def test_a_server_that_failed_is_not_waited_for_again_while_it_retries(tmp_path: Path) -> None:
    # Its first start fails at once; every later one hangs far longer than the bound below.
    flaky = stdio(
        "flaky", "-m", "tests.servers.sluggish", "--fail-first", str(tmp_path / "started"), connect_timeout=600
    )
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)), flaky]) as gateway:
        with anyio.fail_after(BOUND):
            first = await meta(gateway, "list_mcp_servers", {})
        assert {s["name"]: s["status"] for s in first["servers"]}["kitchen"] == "connected"
        assert gateway.upstream("flaky").first_attempt_over

        upstream = gateway.upstream("flaky")
        with anyio.fail_after(BOUND):  # it tries again after a backoff of at most a second
            while upstream.status is not Status.CONNECTING:
                await upstream.wait_changed()
            found = await meta(gateway, "search_tools", {"query": "weather in a city"})
            again = await meta(gateway, "list_mcp_servers", {})
        assert upstream.status is Status.CONNECTING  # the answers did not wait for its retry

    assert found["connecting"] == ["flaky"]  # the agent is told what is missing
    assert {s["name"]: s["status"] for s in again["servers"]} == {"kitchen": "connected", "flaky": "connecting"}


async def test_without_a_cache_a_question_waits_for_a_slow_only_server() -> None:
    async with Gateway([stdio("slow", "-m", "tests.servers.sluggish", "--start-after", "1")]) as gateway:
        with anyio.fail_after(BOUND):
            found = await meta(gateway, "search_tools", {"query": "says it is up"})
    assert [(r["server"], r["tool"]) for r in found["results"]] == [("slow", "hello")]
    assert "connecting" not in found


async def test_a_lazy_server_with_known_tools_is_not_waited_for(tmp_path: Path) -> None:
    # Its tools are declared, so it stays idle until a call needs it; nothing to wait for.
    lazy = {
        **HANGING,
        "connect": "lazy",
        "connectTimeout": 600,
        "tools": [{"name": "convert_units", "description": "Convert miles to kilometers."}],
    }
    async with Gateway.from_config(cached_config(tmp_path, {"lazy": lazy})) as gateway:
        with anyio.fail_after(BOUND):
            found = await meta(gateway, "search_tools", {"query": "convert miles to kilometers"})
        assert gateway.upstream("lazy").status is Status.IDLE
    assert found["results"][0]["tool"] == "convert_units"


async def test_the_dashboards_search_waits_as_search_tools_does_and_names_a_server_still_retrying(
    tmp_path: Path,
) -> None:
    # The Search page's ranking (the playground) is a catalog question too: opened just after the
    # gateway starts, it must not miss a server that is slow to start, and it must say which
    # servers are still missing once it answers.
    slow = stdio("slow", "-m", "tests.servers.sluggish", "--start-after", "1")
    flaky = stdio(
        "flaky", "-m", "tests.servers.sluggish", "--fail-first", str(tmp_path / "started"), connect_timeout=600
    )
    async with Gateway([slow, flaky]) as gateway:
        with anyio.fail_after(BOUND):
            hits = await ranked(gateway, "says it is up")
            upstream = gateway.upstream("flaky")
            while upstream.status is not Status.CONNECTING:  # its retry, after a backoff of at most a second
                await upstream.wait_changed()
        assert gateway.upstream("slow").status is Status.CONNECTED
        assert gateway.connecting() == ["flaky"]
    assert [(h.server, h.tool) for h in hits] == [("slow", "hello")]
