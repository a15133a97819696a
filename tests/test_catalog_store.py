"""The persistent catalog: stored per server and config, answered at once on start, replaced by live lists."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from pydantic import ValidationError

from tests.helpers.catalog_cache import HANGING, UNIT_TOOLS, cached_config, meta, remember, snapshot
from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.paths import PYTHON
from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.catalog import Catalog, CatalogTool
from toolscout.config import GatewayConfig
from toolscout.config.locations import user_cache_dir
from toolscout.config.models import (
    CatalogCacheConfig,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    config_hash,
)
from toolscout.errors import ServerUnavailable
from toolscout.gateway import runtime
from toolscout.gateway.core import Gateway
from toolscout.gateway.store import VERSIONS_PER_SERVER, CatalogStore, Failure
from toolscout.search.bm25 import BM25Backend
from toolscout.upstream import InProcessUpstream, Status, UpstreamSpec

pytestmark = pytest.mark.anyio


def test_round_trip_keeps_tools_and_identity(tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "deep" / "catalog.sqlite3")
    units = snapshot("units", "h1", server_name="units", server_version="1.0", instructions="Convert things.")
    notes = snapshot("notes", "h2", tools=(), protocol_version="2025-11-25")
    store.save([units, notes])

    again = CatalogStore(store.path)  # another gateway, later
    assert again.load({"units": "h1", "notes": "h2"}) == {"units": units, "notes": notes}
    assert again.load({"units": "another config"}) == {}
    assert again.load({"missing": "h1"}) == {}
    assert sorted((e.server, e.tool_count) for e in again.entries()) == [("notes", 0), ("units", 2)]

    assert again.clear("units") == 1
    assert [e.server for e in again.entries()] == ["notes"]
    assert again.clear() == 1
    assert again.entries() == []


def test_a_failed_connection_is_remembered_until_the_server_lists_its_tools(tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    hung = Failure("hang", "h1", time.time(), "did not finish connecting within 30s")
    store.save_failures([hung, Failure("units", "h2", time.time(), "command not found: units")])

    again = CatalogStore(store.path)  # the next command
    found = again.load_failures({"hang": "h1", "units": "h2"})
    assert set(found) == {"hang", "units"} and found["hang"] == hung
    assert again.load_failures({"hang": "another config"}) == {}
    again.save([snapshot("units", "h2")])  # it connected since
    assert set(again.load_failures({"hang": "h1", "units": "h2"})) == {"hang"}
    assert again.clear("hang") == 0  # no catalog entry of it, but its failure goes too
    assert again.load_failures({"hang": "h1"}) == {}


def test_only_the_latest_configurations_of_a_server_are_kept(tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    for n in range(VERSIONS_PER_SERVER + 2):
        store.save([snapshot("units", f"h{n}")])
    kept = {e.config_hash for e in store.entries()}
    assert kept == {f"h{n}" for n in range(2, VERSIONS_PER_SERVER + 2)}


def test_config_hash_changes_with_any_part_of_the_entry() -> None:
    base = StdioServerConfig.model_validate({"command": "srv", "args": ["-v"], "env": {"A": "1", "B": "2"}})
    same = StdioServerConfig.model_validate({"env": {"B": "2", "A": "1"}, "args": ["-v"], "command": "srv"})
    assert config_hash(base) == config_hash(same)
    changed = [
        base.model_copy(update={"command": "other"}),
        base.model_copy(update={"args": ["-v", "--x"]}),
        base.model_copy(update={"env": {"A": "1", "B": "3"}}),
        base.model_copy(update={"cwd": "/tmp"}),
        base.model_copy(update={"timeout": 5.0}),
    ]
    assert len({config_hash(base), *(config_hash(c) for c in changed)}) == len(changed) + 1

    url = "https://example.com/mcp"
    http = HttpServerConfig.model_validate({"url": url})
    assert config_hash(http) != config_hash(SseServerConfig.model_validate({"url": url, "transport": "sse"}))
    assert config_hash(http) != config_hash(http.model_copy(update={"headers": {"Authorization": "Bearer x"}}))


async def test_a_hanging_server_is_answered_from_the_cache_at_once(tmp_path: Path) -> None:
    config = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 600}})
    saved = remember(config, "units", server_name="units", instructions="Converts units.")
    async with Gateway.from_config(config) as gateway:
        started = time.perf_counter()
        # Far below its connect timeout: the server is not waited for.
        with anyio.fail_after(60):
            found = await meta(gateway, "search_tools", {"query": "convert miles to kilometers"})
            first_search = time.perf_counter() - started
            servers = await meta(gateway, "list_mcp_servers", {})
            listed = await meta(gateway, "list_tools", {"server": "units"})
            details = await meta(gateway, "get_tool_details", {"server": "units", "tool": "convert_units"})
        assert gateway.upstream("units").status is Status.CONNECTING
        logging.getLogger(__name__).info("first search from the cache: %.0f ms", first_search * 1000)

    top = found["results"][0]
    assert (top["server"], top["tool"], top["stale"]) == ("units", "convert_units", True)
    assert "connecting" not in found  # nothing is missing from the ranking
    (entry,) = servers["servers"]
    assert entry["status"] == "connecting"
    assert entry["catalog"] == "cached" and entry["toolCount"] == 2
    assert entry["instructions"] == "Converts units."  # what it said last time; no serverInfo until it connects
    assert "serverInfo" not in entry
    assert entry["cachedAt"] == time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(int(saved.saved_at)))
    assert listed["stale"] is True
    assert [t["name"] for t in listed["tools"]] == ["convert_units", "calculate"]
    assert details["stale"] is True and details["inputSchema"] == UNIT_TOOLS[0].input_schema


async def test_execute_still_waits_for_the_live_server_and_a_failed_one_keeps_its_cached_catalog(
    tmp_path: Path,
) -> None:
    # No retry after its failure: a retry would be waited for by execute below (connectTimeout).
    config = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 1, "reconnect": False}})
    remember(config, "units")
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(10):
            assert (await gateway.tool("units", "convert_units")).name == "convert_units"
        # A call is never answered from the cache: it waits (connectTimeout) for the server, then says why not.
        with anyio.fail_after(10), pytest.raises(ServerUnavailable, match="units"):
            await gateway.execute("units", "convert_units", {"value": 1, "from": "mi", "to": "km"})

        with anyio.fail_after(10):
            await gateway.upstream("units").wait_settled()
        status = gateway.server_status(gateway.upstream("units"))
        assert status["status"] == "error" and status["catalog"] == "cached"
        assert status["error"].startswith("did not finish connecting within 1s")
        # Search and details still find what the server offered last time.
        assert [h.tool.name for h in await gateway.search("convert miles to kilometers", limit=1)] == ["convert_units"]
        with anyio.fail_after(10):
            assert len(await gateway.tools("units")) == 2
        with anyio.fail_after(10), pytest.raises(ServerUnavailable):
            await gateway.execute("units", "calculate", {})


async def test_a_changed_config_is_never_answered_from_the_old_entry(tmp_path: Path) -> None:
    old = cached_config(tmp_path, {"units": {**HANGING, "connectTimeout": 30}})
    remember(old, "units")
    new = cached_config(tmp_path, {"units": {**HANGING, "env": {"UNITS_PRECISION": "3"}, "connectTimeout": 30}})
    async with Gateway.from_config(new) as gateway:
        assert gateway.catalog.tools("units") == []
        assert gateway.cached_at("units") is None
        assert "catalog" not in gateway.server_status(gateway.upstream("units"))
        assert await gateway.search("convert miles to kilometers") == []


async def test_live_tools_replace_the_cached_ones_and_every_new_list_is_saved(tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    stale = types.Tool(name="old_tool", description="Gone since.", input_schema={"type": "object"})
    saved = snapshot("kitchen", "k1", tools=(stale,))
    store.save([saved])
    kitchen = Kitchen()
    declared = types.Tool(name="declared_tool", input_schema={"type": "object"})
    spec = UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), cache_key="k1", static_tools=(declared,))

    async with Gateway([spec], catalog_store=store) as gateway:
        # Before the upstream's task has run at all: what the server offered last time beats the declared list.
        assert [t.name for t in gateway.catalog.tools("kitchen")] == ["old_tool"]
        assert gateway.cached_at("kitchen") == saved.saved_at

        with anyio.fail_after(10):
            await gateway.settle()
        names = {t.name for t in gateway.catalog.tools("kitchen", include_disabled=True)}
        assert "get_weather" in names and "old_tool" not in names
        assert gateway.cached_at("kitchen") is None
        assert "catalog" not in gateway.server_status(gateway.upstream("kitchen"))

        await gateway.execute("kitchen", "learn_trick", {"name": "juggle"})
        with anyio.fail_after(10):
            while gateway.catalog.get("kitchen", "juggle") is None:
                await gateway.upstream("kitchen").wait_changed()

    # Leaving the gateway writes what was still unsaved.
    stored = store.load({"kitchen": "k1"})["kitchen"]
    assert {"get_weather", "juggle"} <= {t.name for t in stored.tools}
    assert (stored.server_name, stored.server_version) == ("kitchen", "1.2.3")
    assert stored.instructions is not None and stored.instructions.startswith("Kitchen-sink")
    assert stored.saved_at > saved.saved_at


async def test_a_corrupt_cache_file_is_moved_aside_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "catalog.sqlite3"
    path.write_bytes(b"this is not a database\n" * 100)
    spec = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server), cache_key="k1")
    with caplog.at_level(logging.WARNING, logger="toolscout.gateway.store"):
        async with Gateway([spec], catalog_store=CatalogStore(path)) as gateway:
            with anyio.fail_after(10):
                await gateway.settle()
            assert gateway.upstream("kitchen").status is Status.CONNECTED
    assert any("unreadable" in r.getMessage() and ".corrupt" in r.getMessage() for r in caplog.records)
    assert (tmp_path / "catalog.sqlite3.corrupt").read_bytes().startswith(b"this is not a database")
    assert "get_weather" in {t.name for t in CatalogStore(path).load({"kitchen": "k1"})["kitchen"].tools}


def test_the_catalog_cache_setting() -> None:
    assert GatewayConfig.model_validate({}).catalog_cache == CatalogCacheConfig(enabled=True, path=None)
    assert GatewayConfig.model_validate({"catalogCache": False}).catalog_cache.enabled is False
    assert GatewayConfig.model_validate({"catalogCache": {"path": "~/c.db"}}).catalog_cache.path == "~/c.db"
    with pytest.raises(ValidationError, match="absolute path"):
        GatewayConfig.model_validate({"catalogCache": {"path": "c.db"}})


async def test_catalog_cache_off_writes_nothing() -> None:
    units = {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
    config = GatewayConfig.model_validate({"mcpServers": {"units": units}, "catalogCache": False})
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(30):
            await gateway.settle()
        assert gateway.upstream("units").status is Status.CONNECTED
    assert not (user_cache_dir() / "catalog.sqlite3").exists()


def test_cache_show_and_clear_on_the_command_line(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    sandbox.write(
        "work/toolscout.yaml", f"mcpServers:\n  units:\n    command: {PYTHON}\n    args: [-m, toolscout.demo.units]\n"
    )
    listed = sandbox.run("list")
    assert listed.returncode == 0, listed.stderr

    shown = sandbox.json("cache", "show")
    assert shown["path"] == str(sandbox.home / ".cache" / "toolscout" / "catalog.sqlite3")
    (entry,) = shown["entries"]
    assert entry["server"] == "units" and entry["state"] == "current" and entry["toolCount"] > 0

    sandbox.write(
        "work/toolscout.yaml",
        f"mcpServers:\n  units:\n    command: {PYTHON}\n    args: [-m, toolscout.demo.units, -v]\n",
    )
    assert sandbox.json("cache", "show")["entries"][0]["state"] == "config changed"

    assert sandbox.json("cache", "clear", "--server", "notes")["removed"] == 0
    done = sandbox.run("cache", "clear")
    assert done.returncode == 0, done.stderr
    assert "Removed 1 cached catalog entry" in done.stdout
    assert json.loads(sandbox.run("cache", "show", "--json").stdout)["entries"] == []


def test_a_list_the_same_as_the_last_changes_nothing(tmp_path: Path) -> None:
    """A server reconnecting, or going live after its stored list, with the same tools: no change,
    so no index rebuild and no list_changed for clients."""
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    store.save([snapshot("units", "k1")])
    catalog = Catalog()
    catalog.set_server_tools("units", store.load({"units": "k1"})["units"].tools)
    version = catalog.version
    catalog.set_server_tools("units", [types.Tool.model_validate(t.model_dump(mode="json")) for t in UNIT_TOOLS])
    assert catalog.version == version
    catalog.set_server_tools("units", UNIT_TOOLS[::-1])  # the order is the server's, and part of its list
    assert catalog.version == version + 1
    catalog.set_server_tools("units", (UNIT_TOOLS[0], UNIT_TOOLS[1].model_copy(update={"description": "New."})))
    assert catalog.version == version + 2
    catalog.set_server_tools("other", [])  # a server listed for the first time is a change, even with no tools
    assert catalog.version == version + 3


class HeldIndex(BM25Backend):
    """A real BM25 backend whose first rebuild says where it runs and waits for the test's word."""

    def __init__(self) -> None:
        super().__init__()
        self.rebuilding = threading.Event()
        self.release = threading.Event()
        self.rebuilds: list[tuple[str, list[str]]] = []

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self.rebuilds.append((threading.current_thread().name, [t.name for t in tools]))
        self.rebuilding.set()
        self.release.wait(10)
        super().rebuild(tools, servers)


@pytest.mark.parametrize("stored", [True, False], ids=["stored catalog", "nothing stored"])
async def test_the_index_is_built_off_the_event_loop_first_from_the_stored_catalog(
    tmp_path: Path, stored: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the index being built may start a stored server, never the bound on waiting for it.
    monkeypatch.setattr(runtime, "WARM_INDEX_FIRST_SECONDS", 600.0)
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    if stored:
        store.save([snapshot("kitchen", "k1")])
    index = HeldIndex()
    spec = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server), cache_key="k1")
    fresh = UpstreamSpec("fresh", InProcessUpstream(Kitchen("fresh").server), cache_key="k2")  # never stored
    async with Gateway([spec, fresh], catalog_store=store, search_factory=lambda: index) as gateway:
        upstream = gateway.upstream("kitchen")
        try:
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(index.rebuilding.wait)
            [(thread, names)] = index.rebuilds
            assert thread != threading.current_thread().name  # a worker's: the event loop goes on meanwhile
            # A server with nothing stored connects meanwhile: the first question waits for it anyway.
            with anyio.fail_after(10):
                await gateway.upstream("fresh").wait_settled()
            assert gateway.upstream("fresh").status is Status.CONNECTED
            if stored:
                # The stored catalog is in the first index (`fresh`, starting at once, may be too).
                assert {"convert_units", "calculate"} <= set(names)
                # The server the stored catalog answers for waits for its index, the first search's.
                assert upstream.status is Status.CONNECTING
            else:
                with anyio.fail_after(10):  # nothing stored to index first: it connects meanwhile
                    await upstream.wait_settled()
                assert upstream.status is Status.CONNECTED
        finally:
            index.release.set()
        with anyio.fail_after(10):
            await gateway.settle()
            hits = await gateway.search("what is the weather in Paris")
        assert hits[0].tool.name == "get_weather"
        if stored:  # the live list replaced the stored one: the search had the index rebuilt, off the loop too
            assert len(index.rebuilds) == 2 and "get_weather" in index.rebuilds[1][1]
        assert threading.current_thread().name not in {thread for thread, _ in index.rebuilds}


# What toolscout wrote before it kept resources and prompts: the same table without `content`.
SCHEMA_WITHOUT_CONTENT = """
CREATE TABLE catalog_v1 (
    server TEXT NOT NULL, config_hash TEXT NOT NULL, saved_at REAL NOT NULL, tools TEXT NOT NULL,
    server_name TEXT, server_version TEXT, title TEXT, description TEXT, instructions TEXT,
    protocol_version TEXT, PRIMARY KEY (server, config_hash)
)
"""


def test_resources_and_prompts_are_kept_and_an_older_file_gains_their_column(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(SCHEMA_WITHOUT_CONTENT)
        tools = json.dumps([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in UNIT_TOOLS])
        db.execute(
            "INSERT INTO catalog_v1 (server, config_hash, saved_at, tools) VALUES (?, ?, ?, ?)",
            ("units", "k1", time.time(), tools),
        )
    store = CatalogStore(path)
    old = store.load({"units": "k1"})["units"]
    assert old.tools == UNIT_TOOLS and old.content() == {}  # never listed: the server answers for itself

    resource = types.Resource(uri="file:///notes/a.md", name="a", mime_type="text/markdown")
    template = types.ResourceTemplate(uri_template="file:///notes/{name}", name="note")
    store.save([dataclasses.replace(old, resources=(resource,), resource_templates=(template,), prompts=())])
    again = store.load({"units": "k1"})["units"]
    assert (again.resources, again.resource_templates, again.prompts) == ((resource,), (template,), ())
    assert again.tools == UNIT_TOOLS


async def test_a_servers_resources_and_prompts_are_listed_from_the_cache_while_it_hangs(tmp_path: Path) -> None:
    store = CatalogStore(tmp_path / "catalog.sqlite3")
    library = Library("library")
    live = UpstreamSpec("library", InProcessUpstream(library.server), cache_key="k1")
    async with Gateway([live], catalog_store=store) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
            resources = await gateway.mirror.resources()
            templates = await gateway.mirror.resource_templates()
            prompts = await gateway.mirror.prompts()
    assert resources and templates and prompts

    # The same configuration (the same key) today: a server that never finishes its handshake.
    hanging = UpstreamSpec.from_config("library", StdioServerConfig.model_validate({**HANGING, "connectTimeout": 600}))
    async with Gateway([dataclasses.replace(hanging, cache_key="k1")], catalog_store=store) as gateway:
        with anyio.fail_after(60):  # far below its connect timeout
            assert await gateway.mirror.resources() == resources
            assert await gateway.mirror.resource_templates() == templates
            assert await gateway.mirror.prompts() == prompts
        assert gateway.upstream("library").status is Status.CONNECTING
    # Its tools came back from the store as well, and the lists are still there for the next start.
    kept = store.load({"library": "k1"})["library"]
    assert kept.resources is not None and len(kept.resources) == len(resources)
    assert kept.prompts is not None and len(kept.prompts) == len(prompts)
