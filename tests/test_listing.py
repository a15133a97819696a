"""Listings for the model: TOON where it is smaller in tokens, compact JSON where it is not."""

from __future__ import annotations

import json
from typing import Any

import pytest
import toon_format

from toolscout.render.text import compact_json, count_tokens, model_text, tabular

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
