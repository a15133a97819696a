"""Resources, resource templates and prompts of every upstream through the gateway, in every mode and era.

In process: two `Library` upstreams (the same URIs on both) and the kitchen (tools only), real SDK
clients on the gateway's face. Over stdio: `server-everything`, reads through the gateway compared
with direct reads.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
)
from mcp.shared.uri_template import UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.helpers.gateway_client import ERAS, expect_error, libraries, text_of
from tests.helpers.http_gateway import http_gateway
from tests.helpers.paths import node_path, npm_tool
from tests.servers.kitchen import TINY_PNG
from tests.servers.library import TEMPLATES, URIS
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.models import ModeName, StdioServerConfig
from toolscout.config.rules import RuleSet
from toolscout.gateway.core import Gateway
from toolscout.resources.core import gateway_uri, split_gateway_uri
from toolscout.serve.server import build_server
from toolscout.upstream import StdioUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

MODES: list[ModeName] = ["discovery", "compact", "passthrough", "dynamic"]


def without(model: Any, key: str) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.pop(key)
    return data


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", MODES)
async def test_every_mode_lists_and_reads_every_servers_resources(mode: ModeName, era: str) -> None:
    async with libraries() as (gateway, books, films), Client(build_server(gateway, mode), mode=era) as client:
        capabilities = client.server_capabilities
        assert capabilities.resources == types.ResourcesCapability(subscribe=True, list_changed=True)
        assert capabilities.prompts == types.PromptsCapability(list_changed=True)
        assert capabilities.tools is not None and capabilities.tools.list_changed is (mode != "discovery")
        assert capabilities.completions is not None

        listed = (await client.list_resources()).resources
        assert listed[0].uri == "toolscout://books/note://1"
        # Every page of both servers, in config order; everything but the URI as the server said it.
        assert [r.uri for r in listed] == [gateway_uri(s, u) for s in ("books", "films") for u in URIS]
        upstream = [*books.resources, *films.resources]
        assert [without(r, "uri") for r in listed] == [without(r, "uri") for r in upstream]

        for resource in listed:
            read = await client.read_resource(resource.uri)
            assert read.contents[0].uri == resource.uri
            server, original = split_gateway_uri(resource.uri) or ("", "")
            if original == "bin://logo.png":
                blob = read.contents[0]
                assert isinstance(blob, types.BlobResourceContents)
                assert (blob.blob, blob.mime_type) == (TINY_PNG, "image/png")
            else:
                assert text_of(read.contents[0]) == f"{server} {original}"
        # Exactly the upstream's URIs reached the upstreams: query, fragment and space included.
        assert books.reads == URIS and films.reads == URIS

        first = await client.read_resource("toolscout://books/note://1")
        assert [c.uri for c in first.contents] == [
            "toolscout://books/note://1",
            "toolscout://books/note://1/attachment",
        ]
        assert hop_free(first)["_meta"] == {"example.com/read-by": "books"}  # the gateway stamps its own serverInfo


@pytest.mark.parametrize("era", ERAS)
async def test_templates_stay_rfc6570_and_their_expansions_reach_the_upstream_unchanged(era: str) -> None:
    async with libraries() as (gateway, books, _), Client(build_server(gateway), mode=era) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [gateway_uri(s, t) for s in ("books", "films") for t in TEMPLATES]
        assert [without(t, "uriTemplate") for t in templates[:3]] == [
            without(t, "uriTemplate") for t in books.templates
        ]

        values = {"id": "a/b c?d#e", "q": "x&y=z", "lang": "ä", "name": "%41"}
        for listed, original in zip(templates[:3], TEMPLATES, strict=True):
            mine, theirs = UriTemplate.parse(listed.uri_template), UriTemplate.parse(original)
            assert mine.variable_names == theirs.variable_names
            expanded = mine.expand(values)
            assert expanded == gateway_uri("books", theirs.expand(values))
            read = await client.read_resource(expanded)
            assert books.reads[-1] == theirs.expand(values)  # what the upstream's own template makes
            assert read.contents[0].uri == expanded


@pytest.mark.parametrize("era", ERAS)
async def test_the_same_uri_on_two_servers_stays_two_resources(era: str) -> None:
    async with libraries() as (gateway, books, films), Client(build_server(gateway), mode=era) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
        assert "toolscout://books/note://1" in uris and "toolscout://films/note://1" in uris
        assert len(set(uris)) == len(uris)
        for server in ("books", "films"):
            read = await client.read_resource(f"toolscout://{server}/note://1")
            assert text_of(read.contents[0]) == f"{server} note://1"
        assert books.reads == ["note://1"] and films.reads == ["note://1"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("mode", MODES)
async def test_prompts_are_server__prompt_and_their_resources_are_readable(mode: ModeName, era: str) -> None:
    async with libraries() as (gateway, books, _), Client(build_server(gateway, mode), mode=era) as client:
        listed = (await client.list_prompts()).prompts
        assert [p.name for p in listed] == [
            f"{s}__{n}" for s in ("books", "films") for n in ("greet", "secret_plan", "fail")
        ]
        assert [without(p, "name") for p in listed[:3]] == [without(p, "name") for p in books.prompts]

        result = await client.get_prompt("books__greet", {"who": "Ada"})
        assert result.description == "greet from books"
        greeting, embedded, link = (m.content for m in result.messages)
        assert isinstance(greeting, types.TextContent) and greeting.text == "Hello Ada from books"
        assert isinstance(embedded, types.EmbeddedResource)
        assert embedded.resource.uri == "toolscout://books/note://1"
        assert isinstance(link, types.ResourceLink) and link.uri == "toolscout://books/note://1"
        assert text_of((await client.read_resource(link.uri)).contents[0]) == "books note://1"

        films = await client.get_prompt("films__greet", {"who": "Bo"})
        assert isinstance(films.messages[0].content, types.TextContent)
        assert films.messages[0].content.text == "Hello Bo from films"


@pytest.mark.processes  # its "ghost" upstream's missing command is still tried as a child process
@pytest.mark.parametrize("era", ERAS)
async def test_mistakes_and_failures_are_clear_mcp_errors(era: str) -> None:
    ghost = UpstreamSpec(
        "ghost",
        StdioUpstream("ghost", StdioServerConfig(command="definitely-not-installed-xyz")),
        reconnect=False,
    )
    async with libraries(extra=[ghost]) as (gateway, _, _), Client(build_server(gateway), mode=era) as client:
        # A server's own URI that two servers list: the gateway's names for it are the way out.
        ambiguous = await expect_error(
            client.read_resource("note://1"),
            types.INVALID_PARAMS,
            "books, films",
            "toolscout://books/note://1, toolscout://films/note://1",
        )
        assert ambiguous.data["code"] == "AMBIGUOUS_NAME"
        unknown = await expect_error(
            client.read_resource("toolscout://boks/note://1"), types.INVALID_PARAMS, "No server named 'boks'", "'books'"
        )
        assert unknown.data["code"] == "SERVER_NOT_FOUND"
        upstream = await expect_error(
            client.read_resource("toolscout://books/note://missing"),
            types.INVALID_PARAMS,
            "books",
            "no note called missing",
        )
        assert upstream.data["upstreamData"] == {"uri": "note://missing"}
        down = await expect_error(
            client.read_resource("toolscout://ghost/x://y"), types.INTERNAL_ERROR, "'ghost'", "command not found"
        )
        assert down.data["code"] == "SERVER_UNAVAILABLE"
        # A server that is down lists nothing and blocks no one.
        assert len((await client.list_resources()).resources) == 2 * len(URIS)

        await expect_error(client.get_prompt("books__gret"), types.INVALID_PARAMS, "No prompt named", "books__greet")
        await expect_error(client.get_prompt("books__fail"), types.INTERNAL_ERROR, "books", "the prompt is broken")
        await expect_error(client.list_resources(cursor="2"), types.INVALID_PARAMS, "cursor")
        # The case of a host may be lost on the way (URI normalisation); the server is still found.
        assert (await client.read_resource("toolscout://BOOKS/note://1")).contents[
            0
        ].uri == "toolscout://books/note://1"


@pytest.mark.parametrize("era", ERAS)
async def test_rules_of_kind_resource_and_prompt_hide_and_refuse_tool_rules_do_not(era: str) -> None:
    rules = [
        ToolRule(kind="resource", pattern=["secret://*"], enabled=False),
        ToolRule(kind="prompt", pattern=["secret*"], server="books", enabled=False),
        ToolRule(pattern=["get_weather"], enabled=True),  # a tool whitelist: prompts and resources stay
    ]
    async with libraries(rules=rules) as (gateway, books, _), Client(build_server(gateway), mode=era) as client:
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert not any("secret://" in uri for uri in resources)
        assert len(resources) == 2 * (len(URIS) - 1)
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == [gateway_uri(s, t) for s in ("books", "films") for t in TEMPLATES[:2]]
        refused = await expect_error(
            client.read_resource("toolscout://books/secret://plans"), types.INVALID_PARAMS, "disabled by toolRules"
        )
        assert refused.data["code"] == "RESOURCE_DISABLED"
        assert books.reads == []  # never reached the server

        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert "books__secret_plan" not in prompts and "films__secret_plan" in prompts
        await expect_error(client.get_prompt("books__secret_plan"), types.INVALID_PARAMS, "disabled by toolRules")

        tools = await client.call_tool("list_tools", {"server": "kitchen"})
        assert not tools.is_error and "render_chart" not in str(tools.structured_content)


async def test_a_resource_whitelist_is_a_whitelist_of_resources_only() -> None:
    rules = [ToolRule(kind="resource", pattern=["note://*"], enabled=True)]
    async with libraries(rules=rules) as (gateway, _, _), Client(build_server(gateway), mode="legacy") as client:
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert resources == ["toolscout://books/note://1", "toolscout://films/note://1"]
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["toolscout://books/note://{id}", "toolscout://films/note://{id}"]
        assert len((await client.list_prompts()).prompts) == 6
        assert len(gateway.catalog.tools(include_disabled=False)) == len(gateway.catalog.tools(include_disabled=True))


class ChangeWatcher:
    """Counts the resources and prompts list_changed notices a client gets, by notification or listen stream."""

    def __init__(self) -> None:
        self.counts = {"resources": 0, "prompts": 0}
        self.listening = False  # at 2026-07-28 the SDK also hands listen-stream frames to message_handler
        self._changed = anyio.Event()

    def bump(self, kind: Literal["resources", "prompts"]) -> None:
        self.counts[kind] += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def message_handler(self, message: Any) -> None:
        if self.listening:
            return
        if isinstance(message, types.ResourceListChangedNotification):
            self.bump("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self.bump("prompts")

    async def wait_for(self, kind: Literal["resources", "prompts"], count: int) -> None:
        with anyio.fail_after(10):
            while self.counts[kind] < count:
                await self._changed.wait()


@asynccontextmanager
async def watched(target: Any, era: str, watcher: ChangeWatcher) -> AsyncGenerator[Client]:
    async with Client(target, mode=era, message_handler=watcher.message_handler) as client:
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            yield client
            return
        async with (
            client.listen(resources_list_changed=True, prompts_list_changed=True) as subscription,
            anyio.create_task_group() as tg,
        ):

            async def pump() -> None:
                async for event in subscription:
                    if isinstance(event, ResourcesListChanged):
                        watcher.bump("resources")
                    elif isinstance(event, PromptsListChanged):
                        watcher.bump("prompts")

            watcher.listening = True
            tg.start_soon(pump)
            yield client
            tg.cancel_scope.cancel()


def add(kind: str, name: str) -> dict[str, Any]:
    return {"server": "books", "tool": f"add_{kind}", "arguments": {"name": name}}


@pytest.mark.parametrize("upstream_era", ["legacy", "auto"])
@pytest.mark.parametrize("era", ERAS)
async def test_an_upstreams_list_changed_reaches_the_client(era: str, upstream_era: str) -> None:
    watcher = ChangeWatcher()
    async with libraries(protocol=upstream_era) as (gateway, _, _):
        await known_to_the_gateway(gateway)
        async with watched(build_server(gateway), era, watcher) as client:
            await lists_follow_the_upstream(gateway, client, watcher)


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_too(era: str) -> None:
    watcher = ChangeWatcher()
    async with libraries() as (gateway, _, _):
        await known_to_the_gateway(gateway)
        async with http_gateway(gateway, mode="discovery") as url, watched(url, era, watcher) as client:
            assert text_of((await client.read_resource("toolscout://films/note://1")).contents[0]) == "films note://1"
            await lists_follow_the_upstream(gateway, client, watcher)


async def known_to_the_gateway(gateway: Gateway) -> None:
    """Fetch every list once before a client connects, so that only the upstream's own notice can tell
    the client later (a first fetch is news too, and the check that follows it could see the change)."""
    await gateway.mirror.resources()
    await gateway.mirror.resource_templates()
    await gateway.mirror.prompts()


async def lists_follow_the_upstream(gateway: Gateway, client: Client, watcher: ChangeWatcher) -> None:
    before = [r.uri for r in (await client.list_resources()).resources]
    await client.list_resource_templates()
    await client.list_prompts()

    assert not (await client.call_tool("execute_tool", add("note", "42"))).is_error
    await watcher.wait_for("resources", 1)
    after = [r.uri for r in (await client.list_resources()).resources]
    assert after == [*before[: len(URIS)], "toolscout://books/note://42", *before[len(URIS) :]]

    assert not (await client.call_tool("execute_tool", add("prompt", "farewell"))).is_error
    await watcher.wait_for("prompts", 1)
    assert "books__farewell" in [p.name for p in (await client.list_prompts()).prompts]
    assert watcher.counts == {"resources": 1, "prompts": 1}  # templates did not change: told once


async def test_a_slow_upstream_blocks_no_one_and_its_list_is_announced_when_it_comes() -> None:
    watcher = ChangeWatcher()
    async with libraries() as (gateway, books, _), watched(build_server(gateway), "legacy", watcher) as client:
        books.hold_lists = anyio.Event()
        gateway.mirror.lists.list_wait = 0.05
        first = [r.uri for r in (await client.list_resources()).resources]
        assert first == [gateway_uri("films", u) for u in URIS]  # books is too slow: listed once it answers
        books.hold_lists.set()
        await watcher.wait_for("resources", 1)
        listed = [r.uri for r in (await client.list_resources()).resources]
        assert listed == [gateway_uri(s, u) for s in ("books", "films") for u in URIS]


def hop_free(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    meta = dumped.get("_meta", {})
    meta.pop(types.SERVER_INFO_META_KEY, None)
    if not meta:
        dumped.pop("_meta", None)
    return dumped


def rewritten(data: Any, server: str) -> Any:
    """`data` with every `uri` as the gateway names it (what the gateway should answer)."""
    if isinstance(data, list):
        return [rewritten(item, server) for item in cast(list[Any], data)]
    if isinstance(data, dict):
        items = cast(dict[str, Any], data).items()
        return {k: gateway_uri(server, str(v)) if k == "uri" else rewritten(v, server) for k, v in items}
    return data


@pytest.mark.parametrize("era", ERAS)
async def test_server_everything_reads_the_same_through_the_gateway(era: str) -> None:
    command, env = str(npm_tool("mcp-server-everything")), {"PATH": node_path()}
    server = {"command": command, "args": ["stdio"], "env": env}
    config = GatewayConfig.model_validate({"mcpServers": {"everything": server}})
    direct_params = StdioServerParameters(command=command, args=["stdio"], env=env)
    watcher = ChangeWatcher()
    async with Gateway.from_config(config) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        await known_to_the_gateway(gateway)
        async with watched(build_server(gateway), era, watcher) as client, Client(direct_params, mode=era) as direct:
            # Resources: the same list, every page, URIs prefixed; every read the same, URIs prefixed.
            mine = (await client.list_resources()).resources
            theirs: list[types.Resource] = []
            cursor: str | None = None
            while True:
                page = await direct.list_resources(cursor=cursor)
                theirs.extend(page.resources)
                if (cursor := page.next_cursor) is None:
                    break
            assert theirs, "server-everything lists static resources"
            assert [hop_free(r) for r in mine] == [rewritten(hop_free(r), "everything") for r in theirs]
            for resource, original in zip(mine, theirs, strict=True):
                via_gateway = await client.read_resource(resource.uri)
                straight = await direct.read_resource(original.uri)
                assert hop_free(via_gateway) == rewritten(hop_free(straight), "everything")

            # Templates: expanded on the gateway's side, read from the upstream's (the text has a timestamp).
            templates = (await client.list_resource_templates()).resource_templates
            direct_templates = (await direct.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [
                gateway_uri("everything", t.uri_template) for t in direct_templates
            ]
            text_template = next(t for t in templates if "{resourceId}" in t.uri_template and "text" in t.uri_template)
            uri = UriTemplate.parse(text_template.uri_template).expand({"resourceId": "7"})
            dynamic = await client.read_resource(uri)
            assert dynamic.contents[0].uri == uri
            assert text_of(dynamic.contents[0]).startswith("Resource 7: This is a plaintext resource")

            # Prompts: the same list under server__prompt names, the same messages.
            prompts = (await client.list_prompts()).prompts
            direct_prompts = (await direct.list_prompts()).prompts
            assert [p.name for p in prompts] == [f"everything__{p.name}" for p in direct_prompts]
            assert [without(p, "name") for p in prompts] == [without(p, "name") for p in direct_prompts]
            simple = await client.get_prompt("everything__simple-prompt")
            assert hop_free(simple) == hop_free(await direct.get_prompt("simple-prompt"))
            embedded = await client.get_prompt(
                "everything__resource-prompt", {"resourceType": "Text", "resourceId": "3"}
            )
            resource = embedded.messages[1].content
            assert isinstance(resource, types.EmbeddedResource)
            assert resource.resource.uri == "toolscout://everything/demo://resource/dynamic/text/3"

            # A tool that adds a resource: the server says its list changed, the client is told.
            data = "data:text/plain;base64,aGVsbG8gdG9vbHNjb3V0"
            made = await client.call_tool(
                "execute_tool",
                {"server": "everything", "tool": "gzip-file-as-resource", "arguments": {"name": "hi.gz", "data": data}},
            )
            assert not made.is_error, made
            await watcher.wait_for("resources", 1)
            session_uri = "toolscout://everything/demo://resource/session/hi.gz"
            assert session_uri in [r.uri for r in (await client.list_resources()).resources]
            gz = (await client.read_resource(session_uri)).contents[0]
            assert isinstance(gz, types.BlobResourceContents) and gz.mime_type == "application/gzip"


def test_gateway_uris_round_trip() -> None:
    for server in ("books", "My Server", "a/b", "ü"):
        for uri in [*URIS, "", "relative/path", "toolscout://x/y", "urn:isbn:0451450523", "a b?c=%zz#{x}"]:
            assert split_gateway_uri(gateway_uri(server, uri)) == (server, uri)
    assert gateway_uri("My Server", "note://1") == "toolscout://My%20Server/note://1"
    assert split_gateway_uri("note://1") is None
    assert split_gateway_uri("toolscout://books") is None
    assert split_gateway_uri("TOOLSCOUT://books/x") == ("books", "x")


def test_rules_of_each_kind_decide_only_about_that_kind() -> None:
    rules = RuleSet(
        [
            ToolRule(pattern=["*"], enabled=False),
            ToolRule(kind="prompt", pattern=["keep*"], enabled=True),
            ToolRule(kind="resource", pattern=["!secret://*"], server="books"),  # tags only: decides nothing
        ]
    )
    assert not rules.whitelist
    assert not rules.verdict("books", "keep_me").enabled  # a tool: the tool rule decides
    assert rules.verdict("books", "keep_me", "prompt").enabled
    assert not rules.verdict("books", "other", "prompt").enabled  # the prompt rules are a whitelist
    assert rules.verdict("books", "secret://key", "resource").enabled  # no resource rule says no
    assert ToolRule.model_validate({"pattern": "x"}).kind is None  # unset: a tool rule, as before
