"""`search.backend: weighted`: the discovery-engine design's fixed-weight relevance, on its own terms
and through a real gateway's `search_tools` over an SDK client."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.helpers.gateway_client import structured
from toolscout.catalog import CatalogTool
from toolscout.demo import notes, units
from toolscout.gateway.core import Gateway
from toolscout.search import make_backend
from toolscout.search.weighted import WeightedBackend
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec


def _tool(server: str, name: str, description: str, tags: tuple[str, ...] = ()) -> CatalogTool:
    return CatalogTool(server, types.Tool(name=name, description=description, input_schema={}), True, tags)


TOOLS = [
    _tool("github", "create_issue", "Create a new issue in a repository."),
    _tool("github", "list_issues", "List the open issues of a repository.", ("read-only",)),
    _tool("jira", "create_ticket", "Open a ticket for a bug.", ("issues",)),
    _tool("files", "read_file", "Read a file from disk."),
]


def test_each_kind_of_match_adds_the_designs_weight_capped_at_one() -> None:
    backend = make_backend("weighted")
    assert isinstance(backend, WeightedBackend)
    backend.rebuild(TOOLS)
    scores = {h.tool.name: h.relevance for h in backend.search("issue", limit=10)}
    # Query in the name (1.0) is already the cap; in the summary only: 0.8 + the word again (0.3).
    assert scores == {"create_issue": 1.0, "list_issues": 1.0}
    # Words: "create" in create_issue's name (0.5) and summary (0.3); in create_ticket's name (0.5).
    scores = {h.tool.name: h.relevance for h in backend.search("create", limit=10)}
    assert scores == {"create_issue": 1.0, "create_ticket": 1.0}
    scores = {h.tool.name: h.relevance for h in backend.search("new bug", limit=10)}
    assert scores == {"create_issue": 0.3, "create_ticket": 0.3}
    # A tag the query contains adds 0.3, whatever else matches; case is ignored throughout.
    scores = {h.tool.name: h.relevance for h in backend.search("ISSUES board", limit=10)}
    assert scores["create_ticket"] == pytest.approx(0.3) and scores["list_issues"] == pytest.approx(0.8)
    # Nothing matched is left out; a server narrows; the limit holds; ties keep the catalog's order.
    assert backend.search("zebra") == []
    assert [h.tool.name for h in backend.search("issue", server="jira")] == []
    assert [h.tool.name for h in backend.search("create", limit=1)] == ["create_issue"]
    assert backend.search("   ") == [] and backend.search("issue", limit=0) == []


@pytest.mark.anyio
async def test_a_gateway_configured_with_it_ranks_search_tools_by_it() -> None:
    specs = [
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("notes", InProcessUpstream(notes.build_server())),
    ]
    async with Gateway(specs, search=make_backend("weighted")) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway)) as client:
            result = await client.call_tool("search_tools", {"query": "convert units", "limit": 3})
    hits = structured(result)["results"]
    assert hits[0]["tool"] == "convert_units" and hits[0]["relevance"] == 1.0
    backend = make_backend("weighted")
    backend.rebuild(gateway.catalog.tools())
    assert [h["tool"] for h in hits] == [h.tool.name for h in backend.search("convert units", limit=3)]
