"""A query that names a tag the config puts on tools (`toolRules` `tags`) finds those tools, at
least at `TAG_RELEVANCE`, even where nothing else about them matches the query.

Real processes: the `toolscout` command line and the bundled demo servers over stdio, searched from
the stored catalog (ranked by the same backend as a serve's `search_tools`); smart mode's candidates
and an explained search over the same servers in process, through an SDK client.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.gateway_client import error_of
from tests.helpers.paths import PYTHON
from tests.helpers.smart_gateway import smart_client, smart_gateway
from toolscout.config import ToolRule
from toolscout.config.models import SmartConfig
from toolscout.search.hybrid import TAG_RELEVANCE


def test_a_query_naming_a_tag_finds_the_tagged_tools(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    demos = {name: {"command": PYTHON, "args": ["-m", f"toolscout.demo.{name}"]} for name in ("notes", "units")}
    rules = [
        {"server": "notes", "pattern": "delete_*", "tags": ["dangerous"]},
        {"pattern": "convert_*", "tags": ["maths", "read-only"]},
    ]
    sandbox.write("work/toolscout.json", json.dumps({"mcpServers": demos, "toolRules": rules}))
    assert sandbox.run("list", "--refresh").returncode == 0

    # Nothing of delete_note's name, description or schema says "dangerous": only its tag does.
    (hit,) = sandbox.json("search", "dangerous")["results"]
    assert (hit["server"], hit["tool"], hit["relevance"]) == ("notes", "delete_note", TAG_RELEVANCE)
    assert hit["tags"] == ["dangerous"]

    # "maths" is a word of calculate's description too; the tool tagged with it comes first.
    found = sandbox.json("search", "maths")["results"]
    assert [r["tool"] for r in found[:2]] == ["convert_units", "calculate"]
    # A tag of several words matches when the query has them all.
    assert sandbox.json("search", "read-only tools")["results"][0]["tool"] == "convert_units"
    partly = json.loads(sandbox.run("search", "read it aloud", "--json").stdout)["results"]  # "read", not "only"
    assert all(r["relevance"] < TAG_RELEVANCE for r in partly if r["tool"] == "convert_units")

    # A tag raises a tool that matches better anyway no further: it is a floor, not a bonus.
    exact = sandbox.json("search", "delete a note dangerous")["results"][0]
    assert exact["tool"] == "delete_note" and exact["relevance"] > TAG_RELEVANCE


@pytest.mark.anyio
async def test_smart_mode_and_an_explained_search_keep_the_tag_floor() -> None:
    # Over the bundled demo servers in process; smart mode's candidates and an explained search rank
    # a tool whose tag the query names as `search_tools` does.
    rules = [ToolRule(pattern=["convert_*"], tags=["maths"])]
    async with smart_gateway(rules=rules) as gateway:
        gateway.smart = SmartConfig()
        (best, *_) = await gateway.candidates("maths", limit=5, method="hybrid")
        assert (best.tool.name, best.relevance) == ("convert_units", TAG_RELEVANCE)

        (first, *_) = await gateway.explain_search("maths", limit=3)
        assert (first.tool, first.relevance) == ("convert_units", TAG_RELEVANCE)
        assert first.contributions["tags"] == TAG_RELEVANCE
        assert first.smart is not None and first.smart["combined"] == max(
            h.smart["combined"] for h in await gateway.explain_search("maths", limit=3) if h.smart is not None
        )

        # `calculate`'s description says "maths"-like things to the embeddings; the tagged tool still leads.
        async with smart_client(gateway, "legacy") as client:
            answer = await client.call_tool("smart_tool_discovery", {"request": "maths"})
        error = error_of(answer)
        assert error["fallback_options"][0]["tool_name"] == "units/convert_units"
