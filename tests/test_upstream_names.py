"""Upstreams' own names through the gateway, completions, and resource subscriptions, in both eras.

The gateway lists `server__tool`, `server__prompt` and `toolscout://server/uri`; a client that uses
an upstream's own name is routed when one server has it, and told the gateway's names when several
do. `completion/complete` and resource subscriptions reach the upstream that owns the prompt,
template or resource, and updates come back under the URI the client subscribed with.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import Server
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.helpers.gateway_client import ERAS, expect_error, libraries, text_of
from tests.helpers.http_gateway import http_gateway
from tests.servers.kitchen import Kitchen
from tests.servers.library import Library
from toolscout.config import ToolRule
from toolscout.config.rules import RuleSet
from toolscout.gateway.core import Gateway
from toolscout.resources.core import template_matches
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = [
    pytest.mark.anyio,
    # Handshake-era resources/subscribe and unsubscribe: the SDK marks them deprecated as of 2026-07-28
    # (SEP-2577), and toolscout still relays them for handshake-era peers, which these tests are about.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@asynccontextmanager
async def one_library(
    protocol: str = "auto", rules: list[ToolRule] | None = None
) -> AsyncGenerator[tuple[Gateway, Library]]:
    """`books` (resources, templates, prompts, completions, subscriptions) and the kitchen (tools only)."""
    books = Library("books")
    specs = [
        UpstreamSpec("books", InProcessUpstream(books.server), protocol=protocol),
        UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server)),
    ]
    async with Gateway(specs, rules=RuleSet(rules or [])) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway, books


@pytest.mark.parametrize("era", ERAS)
async def test_passthrough_routes_a_tools_own_name_when_one_server_has_it(era: str) -> None:
    rules = [ToolRule(server="books", pattern=["add_prompt"], enabled=False)]
    async with (
        libraries(rules=rules) as (gateway, _, _),
        Client(build_server(gateway, "passthrough"), mode=era) as client,
    ):
        listed = {t.name for t in (await client.list_tools()).tools}
        assert "kitchen__get_weather" in listed and "get_weather" not in listed  # listed names stay prefixed
        by_own_name = await client.call_tool("get_weather", {"city": "Paris"})
        by_gateway_name = await client.call_tool("kitchen__get_weather", {"city": "Paris"})
        assert not by_own_name.is_error
        assert by_own_name.content == by_gateway_name.content

        # Both libraries have add_note: the caller is told the two names that work.
        ambiguous = await client.call_tool("add_note", {"name": "x"})
        assert ambiguous.is_error and ambiguous.structured_content is not None
        error = ambiguous.structured_content["error"]
        assert error["code"] == "AMBIGUOUS_NAME"
        assert "books__add_note, films__add_note" in error["message"]
        # Only films' add_prompt is enabled: the enabled one is the one a bare name means.
        added = await client.call_tool("add_prompt", {"name": "new"})
        assert not added.is_error
        with anyio.fail_after(30):
            assert "films__new" in {p.name for p in (await client.list_prompts()).prompts}

        with pytest.raises(Exception, match="Unknown tool 'no_such_tool'"):
            await client.call_tool("no_such_tool", {})


@pytest.mark.parametrize("era", ERAS)
async def test_a_disabled_tool_by_its_own_name_is_refused_as_disabled(era: str) -> None:
    rules = [ToolRule(server="kitchen", pattern=["get_weather"], enabled=False)]
    async with (
        one_library(rules=rules) as (gateway, _),
        Client(build_server(gateway, "passthrough"), mode=era) as client,
    ):
        refused = await client.call_tool("get_weather", {"city": "Paris"})
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["error"]["code"] == "TOOL_DISABLED"


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_and_resources_by_their_servers_own_names(era: str) -> None:
    async with one_library() as (gateway, books), Client(build_server(gateway), mode=era) as client:
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content == types.TextContent(text="Hello Ada from books")
        assert prompt == await client.get_prompt("books__greet", {"who": "Ada"})

        # Listed: read as the server has it, and answered in the server's own names.
        listed = await client.read_resource("note://1")
        assert [c.uri for c in listed.contents] == ["note://1", "note://1/attachment"]
        assert text_of(listed.contents[0]) == "books note://1"
        # Not listed, but one of its templates makes it.
        templated = await client.read_resource("https://example.com/search?q=owls")
        assert text_of(templated.contents[0]) == "books https://example.com/search?q=owls"
        # Neither: books is the one server with resources, so it decides.
        await expect_error(client.read_resource("note://missing"), types.INVALID_PARAMS, "no note called missing")
        assert books.reads[-3:] == ["note://1", "https://example.com/search?q=owls", "note://missing"]

        await expect_error(client.get_prompt("no_such_prompt"), types.INVALID_PARAMS, "No prompt named")


@pytest.mark.parametrize("era", ERAS)
async def test_completions_reach_the_server_of_the_prompt_or_template(era: str) -> None:
    async with libraries() as (gateway, _, _), Client(build_server(gateway), mode=era) as client:
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.completions is not None

        by_prompt = await client.complete(types.PromptReference(name="films__greet"), {"name": "who", "value": "A"})
        assert by_prompt.completion.values == ["films:greet:who=A", "context=None"]
        by_template = await client.complete(
            types.ResourceTemplateReference(uri="toolscout://books/note://{id}"),
            {"name": "id", "value": "4"},
            {"lang": "en"},
        )
        assert by_template.completion.values == ["books:note://{id}:id=4", "context={'lang': 'en'}"]

        ambiguous = await expect_error(
            client.complete(types.PromptReference(name="greet"), {"name": "who", "value": "A"}),
            types.INVALID_PARAMS,
            "books__greet, films__greet",
        )
        assert ambiguous.data["code"] == "AMBIGUOUS_NAME"
        await expect_error(
            client.complete(types.PromptReference(name="books__nope"), {"name": "x", "value": ""}),
            types.INVALID_PARAMS,
            "No prompt named",
        )


async def test_a_server_without_completions_completes_nothing() -> None:
    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="plain", arguments=[types.PromptArgument(name="x")])])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return types.GetPromptResult(messages=[])

    plain = Server("plain", on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    specs = [UpstreamSpec("plain", InProcessUpstream(plain))]
    async with Gateway(specs) as gateway, Client(build_server(gateway), mode="legacy") as client:
        with anyio.fail_after(10):
            await gateway.settle()
        upstream = gateway.upstream("plain").server_capabilities
        assert upstream is not None and upstream.completions is None
        nothing = await client.complete(types.PromptReference(name="plain"), {"name": "x", "value": ""})
        assert nothing.completion.values == []
        await expect_error(
            client.complete(types.ResourceTemplateReference(uri="kitchen://{x}"), {"name": "x", "value": ""}),
            types.INVALID_PARAMS,
            "No server has the resource template",
        )


class Updates:
    """The `notifications/resources/updated` URIs a client gets, by message or listen stream."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    def add(self, uri: str) -> None:
        self.uris.append(uri)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def message_handler(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and not self.listening:
            self.add(message.params.uri)

    listening = False

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(10):
            while len(self.uris) < count:
                await self._arrived.wait()


@asynccontextmanager
async def subscribed(client: Client, updates: Updates, uris: list[str]) -> AsyncGenerator[None]:
    """Subscribe `client` to `uris` the way its era does."""
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        for uri in uris:
            subscribing = client.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]
            if "nowhere" in uri:
                await expect_error(subscribing, types.INVALID_PARAMS, "No server named 'nowhere'")
            else:
                await subscribing
        yield
        return
    async with client.listen(resource_subscriptions=uris) as subscription, anyio.create_task_group() as tg:

        async def pump() -> None:
            async for event in subscription:
                if isinstance(event, ResourceUpdated):
                    updates.add(event.uri)

        updates.listening = True
        assert sorted(subscription.honored.resource_subscriptions or []) == sorted(
            u for u in uris if "nowhere" not in u
        )
        tg.start_soon(pump)
        yield
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
@pytest.mark.parametrize("era", ERAS)
async def test_resource_updates_reach_subscribers_under_their_own_uri(era: str, upstream_era: str) -> None:
    updates = Updates()
    legacy_upstream = upstream_era == "legacy"  # in process, "auto" lands on 2026-07-28
    async with one_library(protocol=upstream_era) as (gateway, books):
        async with Client(build_server(gateway), mode=era, message_handler=updates.message_handler) as client:
            modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
            uris = ["toolscout://books/note://1", "secret://key"]
            async with subscribed(client, updates, uris):
                if legacy_upstream:
                    await books.wait_subscribed({"note://1", "secret://key"})
                await books.touch("note://1")
                await books.touch("file:///tmp/my notes.txt")  # nobody subscribed: nobody told
                await books.touch("secret://key")
                await updates.wait_for(2)
                assert updates.uris == uris
            if not modern:
                await client.unsubscribe_resource("secret://key")  # pyright: ignore[reportDeprecated]
                await books.touch("secret://key")
                await books.touch("note://1")
                await updates.wait_for(3)
                assert updates.uris[2:] == ["toolscout://books/note://1"]
            if legacy_upstream:
                # Unsubscribed upstream once no client wants it (its listen stream closed, or it unsubscribed).
                await books.wait_subscribed(set() if modern else {"note://1"})
        if legacy_upstream:
            await books.wait_subscribed(set())  # the client went away: so did its subscriptions


async def test_subscribing_to_what_no_server_has_is_a_clear_error() -> None:
    async with one_library() as (gateway, _), Client(build_server(gateway), mode="legacy") as client:
        await expect_error(
            client.subscribe_resource("toolscout://nowhere/x://y"),  # pyright: ignore[reportDeprecated]
            types.INVALID_PARAMS,
            "No server named 'nowhere'",
        )
        # Unsubscribing from what one never subscribed to is fine, as the spec has it.
        await client.unsubscribe_resource("toolscout://books/note://1")  # pyright: ignore[reportDeprecated]


@pytest.mark.parametrize("era", ERAS)
async def test_subscriptions_over_http(era: str) -> None:
    updates = Updates()
    async with (
        one_library(protocol="legacy") as (gateway, books),
        http_gateway(gateway, mode="discovery") as url,
        Client(url, mode=era, message_handler=updates.message_handler) as client,
        subscribed(client, updates, ["toolscout://books/note://1", "toolscout://nowhere/x://y"]),
    ):
        await books.wait_subscribed({"note://1"})
        await books.touch("note://1")
        await updates.wait_for(1)
        assert updates.uris == ["toolscout://books/note://1"]


def test_template_matching_follows_rfc6570_operators() -> None:
    assert template_matches("note://{id}", "note://42")
    assert not template_matches("note://{id}", "note://a/b")  # a simple value has no `/`
    assert template_matches("file:///{+path}", "file:///srv/a/b.md")
    assert template_matches("https://example.com/search{?q,lang}", "https://example.com/search?q=x&lang=en")
    assert template_matches("https://example.com/search{?q,lang}", "https://example.com/search")
    assert template_matches("repo://{owner}{/path}", "repo://me/a/b")
    assert not template_matches("note://{id}/data", "note://42/meta")
    assert template_matches("a.b+c://{x}", "a.b+c://1") and not template_matches("a.b+c://{x}", "aXb+c://1")


@pytest.mark.parametrize("era", ERAS)
async def test_in_front_of_one_server_passthrough_refuses_names_it_did_not_list(era: str) -> None:
    """Forwarding such a name would let a server with a loose lookup run a disabled tool
    (tests/test_rule_bypass.py). The client gets the protocol's unknown-tool error from the gateway."""
    specs = [UpstreamSpec("kitchen", InProcessUpstream(Kitchen().server))]
    async with Gateway(specs) as gateway, Client(build_server(gateway, "passthrough"), mode=era) as client:
        with anyio.fail_after(10):
            await gateway.settle()
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {"x": 1})
        assert raised.value.error.code == types.INVALID_PARAMS
        assert raised.value.error.message.startswith("Unknown tool 'no_such_tool'.")
