"""Two tokens of two namespaces over HTTP never see each other's servers, tools, resources or prompts,
in every mode and both protocol eras; their pinned tools are in their tools/list; dynamic mode's
load_tools is refused at 2026-07-28.

A real gateway over in-process servers (tests/helpers/scoped_gateway.py: kitchen and notes global,
`alpha.books` and `beta.films` in two namespaces), the face over streamable HTTP with a bearer
resolver of fixed scopes, and real SDK clients of both eras sending a token each.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.helpers.gateway_client import ERAS, META_TOOL_NAMES, error_of, structured, text
from tests.helpers.scoped_gateway import UNSEEN, client_with, scoped_http, two_namespaces
from tests.servers.library import URIS
from toolscout.config.models import ModeName
from toolscout.resources.core import gateway_uri

pytestmark = pytest.mark.anyio

MODES: list[ModeName] = ["discovery", "compact", "passthrough", "dynamic"]
PINNED = {"alpha-token": ["alpha_books__add_note", "kitchen__get_weather"], "beta-token": ["beta_films__add_prompt"]}
OWN_SERVERS = {"alpha-token": {"kitchen", "alpha.books"}, "beta-token": {"beta.films"}}


def dump(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(dump(v) for v in value)  # pyright: ignore[reportUnknownVariableType]
    if hasattr(value, "model_dump"):
        return json.dumps(value.model_dump(mode="json", by_alias=True, exclude_none=True))
    return json.dumps(value, default=str)


def assert_unseen(token: str, shown: str, asked: str = "") -> None:
    """Nothing outside `token`'s scope in `shown`, but for the name the client itself asked for."""
    rest = shown.replace(asked, "") if asked else shown
    leaked = [name for name in UNSEEN[token] if name in rest]
    assert not leaked, (leaked, shown)


async def failure(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The error of a call that must fail, as an isError result (toolscout's own tools)."""
    return error_of(await client.call_tool(tool, arguments))


async def check_lists(client: Client, token: str) -> None:
    resources = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    prompts = (await client.list_prompts()).prompts
    for listed in (resources, templates, prompts):
        assert_unseen(token, dump(listed))
    own = "alpha.books" if token == "alpha-token" else "beta.films"
    assert {r.uri for r in resources} >= {gateway_uri(own, URIS[0])}
    assert len(prompts) == len({p.name for p in prompts}), [p.name for p in prompts]  # each once
    other = "beta.films" if token == "alpha-token" else "alpha.books"
    with pytest.raises(MCPError) as read:
        await client.read_resource(gateway_uri(other, URIS[0]))
    assert_unseen(token, read.value.error.message, asked=other)
    with pytest.raises(MCPError) as prompt:
        await client.get_prompt(f"{other.replace('.', '_')}__greet", {"who": "x"})
    assert_unseen(token, prompt.value.error.message, asked=other.replace(".", "_"))
    with pytest.raises(MCPError) as completion:
        await client.complete(
            types.PromptReference(name=f"{other.replace('.', '_')}__greet"), {"name": "who", "value": "a"}
        )
    assert_unseen(token, completion.value.error.message, asked=other.replace(".", "_"))


async def check_discovery(client: Client, token: str, order: list[str]) -> None:
    servers = structured(await client.call_tool("list_mcp_servers", {}))
    # In the gateway's own order, less what the scope does not see.
    assert [s["name"] for s in servers["servers"]] == [name for name in order if name in OWN_SERVERS[token]]
    assert_unseen(token, dump(servers))
    found = structured(await client.call_tool("search_tools", {"query": "add a note or weather", "limit": 50}))
    assert {hit["server"] for hit in found["results"]} <= set(OWN_SERVERS[token])
    assert_unseen(token, dump(found))
    # Near misses: did-you-mean is drawn only from what the scope sees.
    other = "beta.films" if token == "alpha-token" else "alpha.books"
    missing = await failure(client, "list_tools", {"server": other[:-1]})
    assert missing["code"] == "SERVER_NOT_FOUND"
    assert_unseen(token, dump(missing), asked=other[:-1])
    for tool in ("get_tool_details", "execute_tool"):
        outside = await failure(client, tool, {"server": other, "tool": "add_note"})
        assert outside["code"] == "SERVER_NOT_FOUND"
        assert_unseen(token, dump(outside), asked=other)
    if token == "alpha-token":  # kitchen's delete_city is outside alpha's tool rules: not found, never disabled
        for tool in ("get_tool_details", "execute_tool"):
            hidden = await failure(client, tool, {"server": "kitchen", "tool": "delete_cit"})
            assert hidden["code"] == "TOOL_NOT_FOUND"
            assert_unseen(token, dump(hidden))
            exact = await failure(client, tool, {"server": "kitchen", "tool": "delete_city"})
            assert exact["code"] == "TOOL_NOT_FOUND", exact
        listed = structured(await client.call_tool("list_tools", {"server": "kitchen", "includeDisabled": True}))
        assert "delete_city" not in [t["name"] for t in listed["tools"]]


async def check_mode(client: Client, token: str, mode: ModeName, era: str, order: list[str]) -> None:
    tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    assert_unseen(token, dump(tools))
    assert names == [t.name for t in (await client.list_tools()).tools]  # deterministic
    other = "beta.films" if token == "alpha-token" else "alpha.books"
    if mode == "passthrough":
        own_prefixes = tuple(f"{s.replace('.', '_')}__" for s in OWN_SERVERS[token])
        assert names and all(n.startswith(own_prefixes) for n in names), names
        assert set(PINNED[token]) <= set(names)
    else:
        pinned = names[-len(PINNED[token]) :]
        assert pinned == PINNED[token], names
        if mode in ("discovery", "dynamic"):
            assert names[: len(META_TOOL_NAMES)] == META_TOOL_NAMES
            await check_discovery(client, token, order)
        if mode == "compact":
            assert names[:2] == ["inspect", "exec"]
            for tool, key in (("inspect", {}), ("exec", {"tool_name": "add_note"})):
                outside = await failure(client, tool, {"server_name": other, **key})
                assert outside["code"] == "SERVER_NOT_FOUND"
                assert_unseen(token, dump(outside), asked=other)
    # A pinned tool answers natively, as passthrough's do.
    called = await client.call_tool(
        PINNED[token][-1], {"city": "Oslo"} if token == "alpha-token" else {"name": f"p-{era}"}
    )
    assert not called.is_error, text(called)
    # Another namespace's tool by its native name: the protocol's unknown tool, naming nothing unseen.
    with pytest.raises(MCPError) as unknown:
        await client.call_tool(f"{other.replace('.', '_')}__add_note", {"name": "x"})
    assert_unseen(token, unknown.value.error.message, asked=other.replace(".", "_"))
    if mode == "dynamic":
        load = {"tools": [{"server": other, "tool": "add_note"}]}
        refused = await failure(client, "load_tools", load)
        expected = "NOT_IN_THIS_PROTOCOL" if era == "auto" else "SERVER_NOT_FOUND"
        assert refused["code"] == expected, refused
        if era == "auto":
            assert "pinnedTools" in refused["message"]
    await check_lists(client, token)


@pytest.mark.parametrize("mode", MODES)
async def test_two_namespaces_never_see_each_other(mode: ModeName) -> None:
    async with two_namespaces() as gateway, scoped_http(gateway, mode) as url:
        order = [u.name for u in gateway.upstreams]  # (outside any request: every server)
        for era in ERAS:
            for token in ("alpha-token", "beta-token"):
                async with client_with(url, token, era) as client:
                    assert client.protocol_version == ("2025-11-25" if era == "legacy" else "2026-07-28")
                    await check_mode(client, token, mode, era, order)
        # No token at all (a gateway without authentication): everything, as before.
        async with client_with(url, None, "legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            if mode == "passthrough":
                assert {"beta_films__add_note", "alpha_books__add_note", "notes__create_note"} <= set(tools)
            resources = {r.uri for r in (await client.list_resources()).resources}
            assert {gateway_uri("alpha.books", URIS[0]), gateway_uri("beta.films", URIS[0])} <= resources


async def test_no_subscription_outside_the_scope_in_either_era() -> None:
    own, other = gateway_uri("alpha.books", URIS[0]), gateway_uri("beta.films", URIS[0])
    async with two_namespaces() as gateway, scoped_http(gateway, "discovery") as url:
        async with client_with(url, "alpha-token", "legacy") as client:
            with warnings.catch_warnings():
                # Deprecated at 2026-07-28 (listen streams instead); this client speaks 2025-11-25.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(own)  # pyright: ignore[reportDeprecated]
                with pytest.raises(MCPError) as refused:
                    await client.subscribe_resource(other)  # pyright: ignore[reportDeprecated]
            assert_unseen("alpha-token", refused.value.error.message, asked="beta.films")
        async with (
            client_with(url, "alpha-token", "auto") as client,
            client.listen(resource_subscriptions=[own, other]) as subscription,
        ):
            # The listen stream is acknowledged with what it honours: not the other namespace's resource.
            assert subscription.honored is not None
            assert subscription.honored.resource_subscriptions == [own]


async def test_dynamic_loads_only_what_the_scope_sees_in_the_handshake_era() -> None:
    async with (
        two_namespaces() as gateway,
        scoped_http(gateway, "dynamic") as url,
        client_with(url, "beta-token", "legacy") as client,
    ):
        loaded = await client.call_tool("load_tools", {"tools": [{"server": "beta.films", "tool": "add_note"}]})
        assert not loaded.is_error, text(loaded)
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == [
            *META_TOOL_NAMES,
            "load_tools",
            "unload_tools",
            "beta_films__add_note",
            *PINNED["beta-token"],
        ]
        hidden = await failure(client, "load_tools", {"tools": [{"server": "kitchen", "tool": "get_weather"}]})
        assert hidden["code"] == "SERVER_NOT_FOUND"


class Heard:
    """The change notices one client got, in the order they came (handshake era: notifications on
    its session's stream; 2026-07-28: events of its listen stream)."""

    def __init__(self) -> None:
        self.notices: list[str] = []
        self.listening = False  # at 2026-07-28 the SDK also hands listen-stream frames to message_handler
        self._changed = anyio.Event()

    def add(self, notice: object) -> None:
        self.notices.append(type(notice).__name__.removesuffix("Notification"))
        self._changed.set()
        self._changed = anyio.Event()

    async def message_handler(self, message: Any) -> None:
        notices = (types.ToolListChangedNotification, types.ResourceListChangedNotification)
        if isinstance(message, notices) and not self.listening:
            self.add(message)

    async def wait_for(self, notice: str) -> None:
        with anyio.fail_after(10):
            while not any(n.startswith(notice) for n in self.notices):
                await self._changed.wait()


@asynccontextmanager
async def heard_client(url: str, token: str, era: str, heard: Heard) -> AsyncGenerator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=era, message_handler=heard.message_handler
        ) as client,
    ):
        if era == "legacy":
            yield client
            return
        async with (
            client.listen(tools_list_changed=True, resources_list_changed=True) as subscription,
            anyio.create_task_group() as tg,
        ):

            async def pump() -> None:
                async for event in subscription:
                    heard.add(event)

            heard.listening = True
            tg.start_soon(pump)
            yield client
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_is_told_only_of_changes_its_scope_sees(era: str) -> None:
    """Each client's lists are compared under its own scope: a change in another namespace tells it nothing."""
    alpha_heard, beta_heard = Heard(), Heard()
    async with (
        two_namespaces() as gateway,
        scoped_http(gateway, "passthrough") as url,
        heard_client(url, "alpha-token", era, alpha_heard) as alpha,
        heard_client(url, "beta-token", era, beta_heard) as beta,
    ):
        await alpha.list_tools()
        await alpha.list_resources()
        before = [t.name for t in (await beta.list_tools()).tools]
        films = [t.tool for t in gateway.catalog.tools("beta.films")]
        new = types.Tool(name="rate_film", input_schema={"type": "object"})
        gateway.catalog.set_server_tools("beta.films", [*films, new])
        await beta_heard.wait_for("ToolListChanged" if era == "legacy" else "ToolsListChanged")
        assert [t.name for t in (await beta.list_tools()).tools] == [*before, "beta_films__rate_film"]
        # Then a change alpha sees, told on the same stream as any notice of beta's change would
        # have been, after it: alpha's resources.
        await alpha.call_tool("alpha_books__add_note", {"name": "fresh"})
        await alpha_heard.wait_for("Resource")
        assert not any(n.startswith("Tool") for n in alpha_heard.notices), alpha_heard.notices


async def test_a_call_in_rounds_runs_under_its_requests_scope() -> None:
    """A 2026-07-28 client that can be asked questions has its calls run in rounds, in the gateway's own
    task group: still under the scope of the request that started it."""

    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with (
        two_namespaces() as gateway,
        scoped_http(gateway, "discovery") as url,
        httpx2.AsyncClient(headers={"Authorization": "Bearer alpha-token"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", elicitation_callback=decline) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        outside = await failure(client, "execute_tool", {"server": "beta.films", "tool": "add_note", "arguments": {}})
        assert outside["code"] == "SERVER_NOT_FOUND"
        hidden = await failure(client, "execute_tool", {"server": "kitchen", "tool": "delete_city"})
        assert hidden["code"] == "TOOL_NOT_FOUND"
        inside = await client.call_tool(
            "execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "Oslo"}}
        )
        assert not inside.is_error, text(inside)
