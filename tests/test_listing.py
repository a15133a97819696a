"""Listings for the model: TOON where it is smaller in tokens, compact JSON where it is not."""

from __future__ import annotations

import json
from typing import Any

import pytest
import toon_format

from toolscout.render.signatures import call_signature, parameters
from toolscout.render.text import compact_json, count_tokens, details_text, model_text, search_text, tabular

ROWS = {
    "results": [
        {"server": "fs", "tool": f"tool_{i}", "relevance": round(1 - i / 20, 2), "summary": f"Does thing {i}, well."}
        for i in range(10)
    ]
}
NESTED: dict[str, Any] = {"a": {"b": {"c": [1, {"d": None}]}}, "e": []}


def test_uniform_rows_become_toon_and_decode_back() -> None:
    text = model_text(ROWS)
    assert text.startswith("results[10]{server,tool,relevance,summary}:")
    assert toon_format.decode(text) == ROWS
    assert count_tokens(text) < count_tokens(compact_json(ROWS))


@pytest.mark.parametrize(
    ("data", "form", "expected"),
    [
        (NESTED, "json", '{"a":{"b":{"c":[1,{"d":null}]}},"e":[]}'),  # TOON's indentation costs more here
        ([], "json", "[]"),  # the same in both: JSON on a tie
        ({}, "toon", ""),
        ("plain", "toon", "plain"),  # no quotes
        ({"ünï": "cödé ツール"}, "toon", '"ünï": cödé ツール'),
        (ROWS, "toon", toon_format.encode(ROWS)),  # uniform rows: one header, a line each
    ],
)
def test_the_form_with_fewer_tokens_is_chosen(data: Any, form: str, expected: str) -> None:
    text = model_text(data)
    assert text == expected
    # Counted here from the encoders themselves: no more tokens than either form.
    as_json = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    assert count_tokens(text) <= min(count_tokens(as_json), count_tokens(toon_format.encode(data)))
    # Whichever it chose, the model reads the same data.
    assert (json.loads(text) if form == "json" else toon_format.decode(text)) == data


def test_tabular_makes_listing_rows_one_table() -> None:
    data: dict[str, Any] = {
        "query": "weather",
        "results": [
            {"server": "a", "tool": "now", "tags": ["weather", "read"]},
            {"server": "b", "tool": "later", "tags": [], "note": "beta"},
        ],
    }
    table = tabular(data)
    assert table == {
        "query": "weather",
        "results": [
            {"server": "a", "tool": "now", "tags": "weather, read", "note": None},
            {"server": "b", "tool": "later", "tags": "", "note": "beta"},
        ],
    }
    written = toon_format.encode(table)
    assert "results[2]{server,tool,tags,note}:" in written  # one header, then a line per row
    assert toon_format.decode(written) == table
    assert data["results"][0]["tags"] == ["weather", "read"]  # the data itself is left alone


def test_tabular_leaves_nested_objects_and_plain_lists_as_they_are() -> None:
    data: dict[str, Any] = {"servers": [{"name": "a", "serverInfo": {"name": "x"}}], "names": ["a", "b"]}
    assert tabular(data) == data


def _hit(server: str, tool: str, relevance: float) -> dict[str, Any]:
    return {"server": server, "tool": tool, "summary": f"{tool} things.", "relevance": relevance, "tags": []}


def test_a_search_answer_names_each_server_once_per_run_and_repeats_long_queries_cut_short() -> None:
    query = "please read the quarterly report from the shared drive and then mail a summary to Ada"
    data = {
        "query": query,
        "results": [
            _hit("files", "read_file", 0.9) | {"signature": "read_file({path: string})"},
            _hit("files", "list_directory", 0.5),
            _hit("mail", "send_mail", 0.4),
            _hit("files", "write_file", 0.2),
        ],
        "steps": ["please read the quarterly report from the shared drive", "mail a summary to Ada"],
    }
    answer = search_text(data)
    lines = answer.splitlines()
    assert lines[0] == "4 tools for 'please read the quarterly report from…':"
    assert [line for line in lines if line.startswith("server ")] == ["server files:", "server mail:", "server files:"]
    assert "- read_file({path: string}) (0.90): read_file things." in lines
    assert "- list_directory (0.50): list_directory things." in lines  # no signature: the name
    assert "Steps read: 1. please read the quarterly report from…; 2. mail a summary to Ada" in answer
    assert query not in answer
    assert count_tokens(answer) < count_tokens(json.dumps(data))


def test_one_tool_several_servers_offer_alike_is_one_hit_under_all_their_names() -> None:
    signed = {"signature": "npm_types({packages: string[]})"}
    data = {
        "query": "npm types",
        "results": [
            _hit("npm", "npm_types", 0.9) | signed,
            _hit("npm-eu", "npm_types", 0.89) | signed,
            _hit("npm", "npm_deps", 0.6),
            _hit("npm-us", "npm_types", 0.5) | signed,
            # The same name with another summary is another tool: its own line.
            _hit("mirror", "npm_types", 0.4) | signed | {"summary": "Types of a mirrored package."},
        ],
    }
    lines = search_text(data).splitlines()
    assert lines[1:7] == [
        "servers npm, npm-eu, npm-us (the same tool on each):",
        "- npm_types({packages: string[]}) (0.90): npm_types things.",
        "server npm:",
        "- npm_deps (0.60): npm_deps things.",
        "server mirror:",
        "- npm_types({packages: string[]}) (0.40): Types of a mirrored package.",
    ]
    assert lines[0] == "5 tools for 'npm types':"  # every hit still counted (and in the structured answer)


def test_tool_details_add_in_full_only_the_descriptions_the_call_line_cut() -> None:
    long = "The path of the file to read, relative to the server's root folder, with forward slashes."
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": long}, "tail": {"type": "integer"}},
        "required": ["path"],
    }
    data = {
        "server": "files",
        "tool": "read_file",
        "description": "Read a file.",
        "signature": call_signature("read_file", schema),
        "parameters": parameters(schema),
        "inputSchema": schema,
    }
    flat = details_text(data, include_schema=False)
    assert flat.splitlines()[-2:] == ["In full:", f"- path: {long}"]
    assert "tail" not in flat.split("In full:")[1]
    # A nested schema's call line is not enough: the list and the schema stay.
    nested = details_text(data, include_schema=True)
    assert "Parameters:\n- path (string, required): " in nested and "Input schema: " in nested
