"""`Registrations` in process: the embedded registry (a real SQLite file) kept in a running gateway.

An unchanged registration keeps its upstream (and connection) across syncs and re-registrations that
only extend its life; a changed one is restarted; one removed or expired leaves; what another
process writes is picked up from the registry's version; a name a configured server has is refused.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from toolscout.gateway.core import Gateway
from toolscout.gateway.registrations import Registrations
from toolscout.registry.base import ServerRegistration, ToolRegistration
from toolscout.registry.requests import NameClash
from toolscout.registry.sqlite import SqliteRegistry
from toolscout.upstream import InProcessUpstream, Upstream, UpstreamSpec
from toolscout.upstream.transport import callback_server

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"ip": {"type": "string"}}}


def tool(name: str = "lookup", url: str = "http://127.0.0.1:9/a", ttl: float = 3600) -> ToolRegistration:
    return ToolRegistration("run-1", name, "Look an IP up.", SCHEMA, url, expires_at=time.time() + ttl)


def configured(name: str) -> UpstreamSpec:
    return UpstreamSpec(name, InProcessUpstream(callback_server(name, "d", SCHEMA, "http://127.0.0.1:9/", timeout=1)))


@asynccontextmanager
async def synced(tmp_path: Path, *specs: UpstreamSpec) -> AsyncGenerator[tuple[Gateway, Registrations]]:
    async with Gateway(list(specs)) as gateway:
        registrations = Registrations(SqliteRegistry(tmp_path / "registry.sqlite3"), gateway, poll_seconds=0.05)
        async with registrations.running():
            yield gateway, registrations


def upstream(gateway: Gateway, name: str) -> Upstream | None:
    return next((u for u in gateway.upstreams if u.name == name), None)


async def test_an_unchanged_registration_keeps_its_upstream_and_a_changed_one_restarts(tmp_path: Path) -> None:
    async with synced(tmp_path) as (gateway, registrations):
        await registrations.put(tool())
        first = upstream(gateway, "run-1.lookup")
        assert first is not None
        await registrations.put(tool(ttl=7200))  # only a longer life
        await registrations.sync()
        assert upstream(gateway, "run-1.lookup") is first
        await registrations.put(tool(url="http://127.0.0.1:9/b"))  # another callback URL
        second = upstream(gateway, "run-1.lookup")
        assert second is not None
        assert second is not first
        assert first.stopped
        assert await registrations.remove(ToolRegistration, "run-1", "lookup")
        assert upstream(gateway, "run-1.lookup") is None
        assert not await registrations.remove(ToolRegistration, "run-1", "lookup")


async def test_another_processs_write_and_an_expiry_reach_the_gateway(tmp_path: Path) -> None:
    async with synced(tmp_path) as (gateway, _):
        other = SqliteRegistry(tmp_path / "registry.sqlite3")  # the CLI's, say
        await other.put_tool(tool())
        with anyio.fail_after(10):  # its tools join the catalog
            while gateway.catalog.counts("run-1.lookup")[0] == 0:
                await gateway.catalog.changes.wait()
        await other.put_tool(tool(ttl=0.2))  # its life cut short
        with anyio.fail_after(10):  # and leave it
            while upstream(gateway, "run-1.lookup") is not None:
                await gateway.catalog.changes.wait()
        assert await other.tools(every=True) == []  # swept


async def test_a_restarted_gateway_starts_with_the_registrations(tmp_path: Path) -> None:
    async with synced(tmp_path) as (_, registrations):
        await registrations.put(tool())
    async with synced(tmp_path) as (gateway, _):
        assert upstream(gateway, "run-1.lookup") is not None  # applied before `running()` returned


async def test_a_configured_name_is_refused_and_a_clash_written_past_the_api_is_left_out(tmp_path: Path) -> None:
    async with synced(tmp_path, configured("notes")) as (gateway, registrations):
        global_tool = dataclasses.replace(tool("notes"), namespace=None)
        with pytest.raises(NameClash, match="'notes' is the name of a configured server"):
            await registrations.put(global_tool)
        await registrations.registry.put_tool(global_tool)  # as another process could
        server = ServerRegistration("run-1", "lookup", "http://127.0.0.1:9/mcp", expires_at=time.time() + 60)
        await registrations.put(tool())
        await registrations.registry.put_server(server)
        await registrations.sync()
        assert registrations.status(global_tool) == {
            "status": "refused",
            "error": "not served: 'notes' is the name of a configured server",
        }
        assert registrations.status(server)["status"] == "refused"
        assert [u.name for u in gateway.upstreams] == ["notes", "run-1.lookup"]
        assert upstream(gateway, "notes") is not None


async def test_an_unusable_registry_file_is_logged_and_the_gateway_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    async with Gateway([configured("notes")]) as gateway:
        registrations = Registrations(SqliteRegistry(blocker / "registry.sqlite3"), gateway, poll_seconds=0.05)
        async with registrations.running():
            assert [u.name for u in gateway.upstreams] == ["notes"]
    assert "could not apply the registry's registrations" in caplog.text
    assert "Traceback" not in caplog.text
