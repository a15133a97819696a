"""A query that names a tag the config puts on tools (`toolRules` `tags`) finds those tools, at
least at `TAG_RELEVANCE`, even where nothing else about them matches the query.

Real processes: the `toolscout` command line and the bundled demo servers over stdio, searched from
the stored catalog (ranked by the same backend as a serve's `search_tools`).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.paths import PYTHON
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
