"""The gateway's upstreams changing while it runs (`Gateway.set_servers`): real in-process servers over
the SDK's memory transport, and a real stdio child for the process that must be reaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import alive
from mcp import Client

from tests.helpers.catalog_cache import HANGING, UNIT_TOOLS, cached_config, remember
from tests.helpers.gateway_client import notes_server
from tests.helpers.list_changes import ListWatcher, watched_client
from tests.helpers.paths import PYTHON, ROOT
from tests.servers.chatty import Chatty
from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.config import StdioServerConfig
from toolscout.errors import ConfigurationError, ServerNameTaken, ServerNotFound, ServerUnavailable
from toolscout.gateway.core import Gateway
from toolscout.gateway.runtime import ServerChanges
from toolscout.modes.compact import CompactSurface
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, Status, StdioUpstream, Upstream, UpstreamSpec

pytestmark = pytest.mark.anyio


async def until(upstream: Upstream, status: Status) -> None:
    with anyio.fail_after(20):
        while upstream.status is not status:
            await upstream.wait_changed()


def notes_spec(**options: Any) -> UpstreamSpec:
    return UpstreamSpec("notes", InProcessUpstream(notes_server()), **options)


async def test_a_server_added_while_running_connects_and_is_searched_listed_and_called() -> None:
    kitchen = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))
    async with Gateway([kitchen]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        before = gateway.upstream("kitchen")
        identity = before.identity
        assert not [hit for hit in await gateway.search("create a note") if hit.tool.server == "notes"]

        changes = await gateway.set_servers([kitchen, notes_spec()], owner="config")

        assert (changes.added, changes.unchanged) == (("notes",), ("kitchen",))
        assert not changes.removed and not changes.restarted
        await until(gateway.upstream("notes"), Status.CONNECTED)
        hits = await gateway.search("create a note")
        assert (hits[0].tool.server, hits[0].tool.name) == ("notes", "create_note")
        assert [t.name for t in await gateway.tools("notes")] == ["create_note", "get_weather"]
        result = await gateway.execute("notes", "create_note", {"title": "x"})
        assert not result.is_error
        # The server that was there is the very same connection.
        assert gateway.upstream("kitchen") is before and before.identity is identity
        assert before.status is Status.CONNECTED
        assert [u.name for u in gateway.upstreams] == ["kitchen", "notes"]


async def test_a_removed_server_leaves_every_part_of_the_gateway() -> None:
    books, films = Library("books"), Library("films")
    specs = [
        UpstreamSpec("books", InProcessUpstream(books.server)),
        UpstreamSpec("films", InProcessUpstream(films.server)),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        assert any(r.uri.startswith("toolscout://films/") for r in await gateway.mirror.resources())
        assert any(p.name.startswith("films__") for p in await gateway.mirror.prompts())
        assert any(hit.tool.server == "films" for hit in await gateway.search("add a note", limit=50, min_relevance=0))
        films_upstream = gateway.upstream("films")

        changes = await gateway.set_servers(specs[:1], owner="config")

        assert (changes.added, changes.removed, changes.unchanged) == ((), ("films",), ("books",))
        assert films_upstream.stopped
        with pytest.raises(ServerNotFound):
            gateway.upstream("films")
        with pytest.raises(ServerNotFound):
            await gateway.execute("films", "add_note", {})
        with pytest.raises(ServerNotFound):
            await gateway.search("add a note", server="films")
        assert [u.name for u in gateway.upstreams] == ["books"]
        assert gateway.catalog.tools("films", include_disabled=True) == []
        assert all(t.server == "books" for t in gateway.catalog.tools(include_disabled=True))
        hits = await gateway.search("add a note", limit=50, min_relevance=0)
        assert hits and all(hit.tool.server == "books" for hit in hits)
        resources = await gateway.mirror.resources()
        assert resources and not any("films" in r.uri for r in resources)
        assert not any("films" in t.uri_template for t in await gateway.mirror.resource_templates())
        assert not any(p.name.startswith("films__") for p in await gateway.mirror.prompts())
        assert gateway.cached_at("films") is None
        with pytest.raises(ServerNotFound):
            await gateway.mirror.read("toolscout://films/note://1")


async def test_a_changed_spec_restarts_only_its_server() -> None:
    kitchen = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))
    notes = notes_spec(description="Personal notes")
    async with Gateway([kitchen, notes]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        old_notes, old_kitchen = gateway.upstream("notes"), gateway.upstream("kitchen")
        kitchen_identity = old_kitchen.identity

        changed = UpstreamSpec("notes", notes.transport, description="Work notes")
        changes = await gateway.set_servers([kitchen, changed], owner="config")

        assert (changes.restarted, changes.unchanged) == (("notes",), ("kitchen",))
        assert not changes.added and not changes.removed
        new_notes = gateway.upstream("notes")
        assert new_notes is not old_notes and old_notes.stopped
        await until(new_notes, Status.CONNECTED)
        assert new_notes.description == "Work notes"
        assert gateway.server_status(new_notes)["description"] == "Work notes"
        assert not (await gateway.execute("notes", "create_note", {})).is_error
        assert gateway.upstream("kitchen") is old_kitchen and old_kitchen.identity is kitchen_identity
        assert [u.name for u in gateway.upstreams] == ["kitchen", "notes"]
        # The same specs again: nothing to do.
        again = await gateway.set_servers([kitchen, changed], owner="config")
        assert not again and again.unchanged == ("kitchen", "notes") and gateway.upstream("notes") is new_notes


# Chatty declares logging (deprecated at 2026-07-28) on purpose: it is a server of the handshake era.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_call_in_flight_on_a_removed_server_ends_with_server_unavailable() -> None:
    chatty = Chatty()
    specs = [UpstreamSpec("chatty", InProcessUpstream(chatty.server)), notes_spec()]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        failures: list[ServerUnavailable] = []
        changes = ServerChanges()

        async def call() -> None:
            try:
                await gateway.execute("chatty", "hold", {})
            except ServerUnavailable as exc:
                failures.append(exc)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await chatty.holding.wait()  # the call is in the server's hands
                changes = await gateway.set_servers(specs[1:], owner="config")
        assert changes.removed == ("chatty",)
        assert len(failures) == 1
        assert failures[0].code == "SERVER_UNAVAILABLE"
        assert "removed from the gateway" in failures[0].message
        assert "connecting to it again" not in failures[0].message
        with pytest.raises(ServerNotFound):
            await gateway.execute("chatty", "hold", {})


async def test_another_owners_name_is_refused_and_nothing_changes() -> None:
    specs = [UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        taken = UpstreamSpec("kitchen", InProcessUpstream(notes_server()))
        with pytest.raises(ServerNameTaken) as refused:
            await gateway.set_servers([notes_spec(), taken], owner="registry")
        assert refused.value.code == "SERVER_NAME_TAKEN"
        assert "from the config file" in refused.value.message
        assert [u.name for u in gateway.upstreams] == ["kitchen"]
        with pytest.raises(ConfigurationError, match="more than once: notes"):
            await gateway.set_servers([notes_spec(), notes_spec()], owner="registry")
        # The config's change leaves the registry's servers alone, and the other way round.
        await gateway.set_servers([notes_spec()], owner="registry")
        assert (await gateway.set_servers(specs, owner="config")).unchanged == ("kitchen",)
        assert [u.name for u in gateway.upstreams] == ["kitchen", "notes"]


async def test_config_servers_come_first_in_file_order_then_the_others_by_name() -> None:
    def spec(name: str) -> UpstreamSpec:
        return UpstreamSpec(name, InProcessUpstream(notes_server()))

    async with Gateway([spec("m"), spec("b")]) as gateway:
        assert [u.name for u in gateway.upstreams] == ["m", "b"]  # as given (the file's order)
        await gateway.set_servers([spec("zeta"), spec("alpha")], owner="registry")
        await gateway.set_servers([spec("c"), spec("m"), spec("b")], owner="config")
        assert [u.name for u in gateway.upstreams] == ["c", "m", "b", "alpha", "zeta"]
        with anyio.fail_after(20):
            await gateway.settle()
        # The catalog lists in the same order, whatever order the servers connected in.
        servers = [t.server for t in gateway.catalog.tools()]
        assert list(dict.fromkeys(servers)) == ["c", "m", "b", "alpha", "zeta"]


async def test_changes_before_the_gateway_runs_edit_the_set_it_starts_and_after_it_stopped_are_refused() -> None:
    gateway = Gateway([])
    changes = await gateway.set_servers([notes_spec()], owner="config")
    assert changes.added == ("notes",)
    async with gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        assert gateway.upstream("notes").status is Status.CONNECTED
    with pytest.raises(RuntimeError, match="stopped"):
        await gateway.set_servers([], owner="config")


async def test_a_removed_stdio_server_is_reaped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    config = StdioServerConfig(command=PYTHON, args=["-m", "tests.servers.chatty", str(pid_file)], cwd=str(ROOT))
    chatty = UpstreamSpec("chatty", StdioUpstream("chatty", config))
    async with Gateway([notes_spec()]) as gateway:
        await gateway.set_servers([chatty], owner="registry")
        await until(gateway.upstream("chatty"), Status.CONNECTED)
        pid = int(pid_file.read_text())
        assert alive(pid)
        with anyio.fail_after(30):
            changes = await gateway.set_servers([], owner="registry")
        assert changes.removed == ("chatty",)
        assert not alive(pid)  # set_servers returned once its child was gone
        assert gateway.upstream("notes").status is Status.CONNECTED


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_clients_are_told_their_tool_list_changed(era: str) -> None:
    async with Gateway([UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        watcher = ListWatcher()
        async with watched_client(build_server(gateway, "passthrough"), era, watcher) as client:
            assert "create_note" not in await tool_names(client)
            await gateway.set_servers([*gateway_specs(gateway), notes_spec()], owner="config")
            await watcher.wait_for(1)
            # `toolNames: auto` in front of two servers now: every tool `server__tool`.
            with anyio.fail_after(10):
                while "notes__create_note" not in await tool_names(client):
                    await watcher.wait_for(watcher.count + 1)
            assert "kitchen__get_weather" in await tool_names(client)
            await gateway.set_servers(gateway_specs(gateway)[:1], owner="config")
            await watcher.wait_for(watcher.count + 1)
            names = await tool_names(client)
            assert "create_note" not in names and not any(name.startswith("notes__") for name in names)
            assert "get_weather" in names  # one server again: its own names


def gateway_specs(gateway: Gateway) -> list[UpstreamSpec]:
    return [u.spec for u in gateway.upstreams]


async def tool_names(client: Client) -> list[str]:
    result: types.ListToolsResult = await client.list_tools()
    return [t.name for t in result.tools]


async def test_a_restarted_server_keeps_its_resource_subscriptions() -> None:
    first, second = Library("books"), Library("books")
    async with Gateway([UpstreamSpec("books", InProcessUpstream(first.server), protocol="legacy")]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        await gateway.upstream("books").resource_subscriptions.add("note://1")
        await first.wait_subscribed({"note://1"})

        moved = UpstreamSpec("books", InProcessUpstream(second.server), protocol="legacy")
        assert (await gateway.set_servers([moved], owner="config")).restarted == ("books",)

        await second.wait_subscribed({"note://1"})  # subscribed again on the new connection
        assert gateway.upstream("books").resource_subscriptions.uris == ["note://1"]


async def test_clients_are_told_their_resource_and_prompt_lists_changed() -> None:
    told: list[str] = []
    arrived = anyio.Event()

    async def handler(message: Any) -> None:
        nonlocal arrived
        if isinstance(message, types.ResourceListChangedNotification | types.PromptListChangedNotification):
            told.append(message.method)
            arrived.set()
            arrived = anyio.Event()

    books, films = Library("books"), Library("films")
    specs = [
        UpstreamSpec("books", InProcessUpstream(books.server)),
        UpstreamSpec("films", InProcessUpstream(films.server)),
    ]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway), mode="legacy", message_handler=handler) as client:
            assert any("films" in r.uri for r in (await client.list_resources()).resources)
            assert any(p.name.startswith("films__") for p in (await client.list_prompts()).prompts)
            await gateway.set_servers(specs[:1], owner="config")
            with anyio.fail_after(10):
                while set(told) != {"notifications/resources/list_changed", "notifications/prompts/list_changed"}:
                    await arrived.wait()
            assert not any("films" in r.uri for r in (await client.list_resources()).resources)
            assert not any(p.name.startswith("films__") for p in (await client.list_prompts()).prompts)


async def test_a_server_added_while_running_starts_from_its_stored_catalog(tmp_path: Path) -> None:
    config = cached_config(tmp_path, {"units": HANGING})
    remember(config, "units")  # what a gateway of this config listed last time
    async with Gateway.from_config(cached_config(tmp_path, {})) as gateway:
        specs = [UpstreamSpec.from_config(name, server) for name, server in config.mcp_servers.items()]
        with anyio.fail_after(20):
            await gateway.set_servers(specs, owner="config")
        # Its handshake never finishes: what it offers comes from the store, at once.
        assert [t.name for t in gateway.catalog.tools("units")] == [t.name for t in UNIT_TOOLS]
        assert gateway.cached_at("units") is not None
        hits = await gateway.search("miles to kilometers")
        assert (hits[0].tool.server, hits[0].tool.name) == ("units", "convert_units")


async def test_a_change_is_made_whole_even_if_its_caller_is_cancelled() -> None:
    kitchen = UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))
    async with Gateway([kitchen]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        old = gateway.upstream("kitchen")
        caller = anyio.CancelScope()

        async def change() -> None:
            with caller:
                await gateway.set_servers([notes_spec()], owner="config")

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(change)
                while not old.stopped:  # the change is under way: kitchen is being stopped
                    await old.wait_changed()
                caller.cancel()
        assert [u.name for u in gateway.upstreams] == ["notes"]
        assert gateway.catalog.tools("kitchen", include_disabled=True) == []
        await until(gateway.upstream("notes"), Status.CONNECTED)


async def test_compacts_description_follows_a_server_swapped_for_one_that_looks_the_same() -> None:
    def disabled(name: str) -> UpstreamSpec:
        return UpstreamSpec(name, InProcessUpstream(notes_server()), disabled=True)

    async with Gateway([disabled("alpha")]) as gateway:
        surface = CompactSurface(gateway)
        assert "Server: alpha [disabled]" in surface.description()
        # No tools either way: the catalog is as it was.
        await gateway.set_servers([disabled("beta")], owner="config")
        assert "Server: beta [disabled]" in surface.description()
        assert "alpha" not in surface.description()
