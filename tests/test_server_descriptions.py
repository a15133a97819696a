"""A server's description: the configured one, else what the server says of itself, else one made from
its tools, so that `list_mcp_servers`, the search's server documents and the Python API all have words
for every server. Real SDK clients in front of in-process upstreams."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.gateway_client import structured
from tests.servers.shelf import shelf_server, tool
from toolscout.catalog import SERVER_DESCRIPTION_LIMIT, CatalogTool, describe_server
from toolscout.config import ToolRule
from toolscout.config.rules import RuleSet
from toolscout.config.scopes import Scope, scoped
from toolscout.gateway.core import Gateway
from toolscout.gateway.index import server_contexts
from toolscout.search.ranker import ServerIndex
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

MAIL = [tool("send_email", "Send an email to a recipient."), tool("list_inbox", "List the messages in the inbox.")]
FILES = [tool("read_file", "Read a file from disk."), tool("delete_file", "Delete a file from disk.")]


@asynccontextmanager
async def gateway_of(specs: Sequence[UpstreamSpec], rules: RuleSet | None = None) -> AsyncGenerator[Gateway]:
    async with Gateway(specs, rules=rules) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


async def servers_listed(gateway: Gateway) -> dict[str, dict[str, Any]]:
    async with Client(build_server(gateway), mode="legacy") as client:
        result = await client.call_tool("list_mcp_servers", {})
    return {s["name"]: s for s in structured(result)["servers"]}


async def test_a_silent_server_is_described_by_its_tools_and_a_configured_or_own_description_wins() -> None:
    specs = [
        UpstreamSpec("mail", InProcessUpstream(shelf_server("mail", MAIL))),
        UpstreamSpec("configured", InProcessUpstream(shelf_server("c", MAIL, description="Own")), description="Ours"),
        UpstreamSpec("own", InProcessUpstream(shelf_server("own", MAIL, description="Mail, said by itself"))),
        UpstreamSpec("titled", InProcessUpstream(shelf_server("titled", MAIL, title="Mailbox"))),
        UpstreamSpec("empty", InProcessUpstream(shelf_server("empty", []))),
    ]
    async with gateway_of(specs) as gateway:
        listed = await servers_listed(gateway)
        generated = "Tools: list_inbox (List the messages in the inbox); send_email (Send an email to a recipient)."
        assert listed["mail"]["description"] == generated
        assert listed["configured"]["description"] == "Ours"
        assert listed["own"]["description"] == "Mail, said by itself"
        assert listed["titled"]["description"] == "Mailbox"
        assert listed["empty"]["description"] == ""
        # The Python API's upstream says the same.
        assert {u.name: u.description for u in gateway.upstreams}["mail"] == generated
        assert {u.name: u.own_description for u in gateway.upstreams}["mail"] == ""


async def test_a_disabled_or_hidden_tool_and_one_outside_the_scope_are_never_in_a_made_description() -> None:
    specs = [UpstreamSpec("files", InProcessUpstream(shelf_server("files", [*FILES, tool("secret_tool", "Hush.")])))]
    rules = RuleSet([ToolRule(pattern=["secret_*"], hidden=True)])
    async with gateway_of(specs, rules) as gateway:
        whole = (await servers_listed(gateway))["files"]["description"]
        assert "read_file" in whole and "delete_file" in whole and "secret" not in whole
        with scoped(Scope.of(servers=["files"], tools=["!delete_*"])):
            narrowed = (await servers_listed(gateway))["files"]["description"]
        assert narrowed == "Tools: read_file (Read a file from disk)."


def test_a_made_description_is_bounded_and_the_same_whatever_the_order_of_the_tools() -> None:
    tools = [CatalogTool("s", tool(f"tool_{i:03}", "Does a thing to many things. " * 5), True, ()) for i in range(50)]
    text = describe_server(tools)
    assert len(text) <= SERVER_DESCRIPTION_LIMIT and text.endswith("…")
    assert describe_server(reversed(tools)) == text
    assert describe_server([]) == ""


def first_server(gateway: Gateway, query: str) -> str:
    """The server whose document (its name, description and tools' names) ranks first for `query`: the
    servers' own ranking in the search (`ServerIndex`, what the learned ranker's server features read)."""
    index = ServerIndex.build(gateway.catalog.tools(), server_contexts(gateway.upstreams))
    scores = index.lexical(query)
    names = list(dict.fromkeys(t.server for t in gateway.catalog.tools()))
    return names[int(scores.argmax())]


@pytest.mark.parametrize("described", [False, True])
async def test_a_configured_description_changes_which_server_a_server_query_finds_first(described: bool) -> None:
    # Two servers whose tools are named alike; only a description says which one holds the invoices.
    tools = [tool("fetch_record", "Fetch a record by id."), tool("store_record", "Store a record.")]
    about = "Invoices and billing for customers" if described else None
    specs = [
        UpstreamSpec("alpha", InProcessUpstream(shelf_server("alpha", tools))),
        UpstreamSpec("beta", InProcessUpstream(shelf_server("beta", tools)), description=about),
    ]
    async with gateway_of(specs) as gateway:
        assert first_server(gateway, "customer invoices billing") == ("beta" if described else "alpha")


async def test_a_made_description_reaches_the_server_documents_of_the_search() -> None:
    specs = [
        UpstreamSpec("alpha", InProcessUpstream(shelf_server("alpha", FILES))),
        UpstreamSpec("beta", InProcessUpstream(shelf_server("beta", MAIL))),
    ]
    async with gateway_of(specs) as gateway:
        contexts = server_contexts(gateway.upstreams)
        assert "Send an email" in contexts["beta"] and "Read a file" in contexts["alpha"]
        # A word only a summary has (not a tool's name) finds its server.
        assert first_server(gateway, "recipient") == "beta"
