"""JSON Schema to TypeScript-like signatures: exact forms, and robustness on any input."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from benchmarks.search import DEFAULT_EVAL_DIR
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolscout.render.signatures import MAX_DEPTH, call_signature, signature, type_label


def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], **extra}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (obj({"path": {"type": "string"}}, ["path"]), "{path: string}"),
        (
            obj({"path": {"type": "string"}, "tail": {"type": "number", "description": "last N lines"}}, ["path"]),
            "{path: string, tail?: number /* last N lines */}",
        ),
        (
            obj({"n": {"type": "integer"}, "ok": {"type": "boolean"}, "x": {"type": "null"}}),
            "{n?: number, ok?: boolean, x?: null}",
        ),
        (obj({"mode": {"enum": ["a", "b", 3]}}), '{mode?: "a" | "b" | 3}'),
        (obj({"kind": {"const": "fixed"}}), '{kind?: "fixed"}'),
        (obj({"v": {"anyOf": [{"type": "string"}, {"type": "number"}]}}), "{v?: string | number}"),
        (obj({"v": {"oneOf": [{"type": "string"}, {"type": "null"}]}}), "{v?: string | null}"),
        (obj({"v": {"type": ["string", "null"]}}), "{v?: string | null}"),
        (obj({"v": {"type": "string", "nullable": True}}), "{v?: string | null}"),
        (obj({"v": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}}), "{v?: A & B}"),
        (obj({"tags": {"type": "array", "items": {"type": "string"}}}), "{tags?: string[]}"),
        (obj({"xs": {"type": "array", "items": {"type": ["string", "number"]}}}), "{xs?: (string | number)[]}"),
        (
            obj({"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}}),
            "{pair?: [string, number]}",
        ),
        (obj({"o": obj({"a": {"type": "string"}}, ["a"])}), "{o?: {a: string}}"),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "Record<string, number>"),
        (
            obj({"a": {"type": "string"}}, additionalProperties={"type": "number"}),
            "{a?: string, [key: string]: number}",
        ),
        (obj({"limit": {"type": "integer", "default": 10}}), "{limit?: number = 10}"),
        (obj({"odd key": {"type": "string"}}, ["odd key"]), '{"odd key": string}'),
        ({"type": "object"}, "object"),
        (obj({}), "object"),
        ({}, "any"),
    ],
)
def test_forms(schema: dict[str, Any], expected: str) -> None:
    assert signature(schema) == expected


def test_refs_resolve_and_recursion_prints_the_name() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}, "gone": {"$ref": "#/$defs/Missing"}},
        "required": ["root"],
        "$defs": {
            "Node": obj({"value": {"type": "number"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}})
        },
    }
    assert signature(schema) == "{root: {value?: number, children?: Node[]}, gone?: Missing}"
    escaped = {"$ref": "#/definitions/a~1b", "definitions": {"a/b": {"type": "string"}}}
    assert signature(escaped) == "string"


def test_a_reference_name_with_a_newline_stays_on_one_line() -> None:
    # Hypothesis found it: an unresolvable `$ref` prints its last segment, which may hold a newline.
    assert signature({"$ref": "\n"}) == "object"
    assert signature({"$ref": "#/$defs/a\nb"}) == "a b"
    assert type_label({"$ref": "#/x/\t"}) == "object"


def test_descriptions_are_cut_or_dropped_and_cannot_close_the_comment() -> None:
    schema = obj({"q": {"type": "string", "description": "Find */ things\n in   the index, fast and well"}})
    assert signature(schema, max_description_len=20) == "{q?: string /* Find * / things i... */}"
    assert signature(schema, max_description_len=0) == "{q?: string}"
    assert call_signature("search", schema, max_description_len=0) == "search({q?: string})"


def test_a_brief_signature_leaves_out_defaults_and_most_of_a_long_enum() -> None:
    champions = [f"C{i}" for i in range(170)]
    schema = obj(
        {
            "champion": {"type": "string", "enum": champions},
            "position": {"type": "string", "enum": ["TOP", "MID", "ADC"]},
            "limit": {"type": "integer", "default": 10, "description": "How many"},
        },
        ["champion"],
    )
    full = signature(schema, max_description_len=0)
    assert '"C169"' in full and "= 10" in full
    brief = signature(schema, max_description_len=0, brief=True)
    assert brief == (
        '{champion: "C0"|"C1"|"C2"|"C3"|"C4"|"C5"|… (170 values), position?: "TOP" | "MID" | "ADC", limit?: number}'
    )
    # Seven values cost no more than six and a count: all are shown.
    seven = obj({"day": {"type": "string", "enum": list("MTWTFSS")}})
    assert signature(seven, brief=True) == signature(seven)


def test_depth_is_bounded() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_DEPTH + 5):
        schema = obj({"x": schema})
    assert signature(schema).count("{") == MAX_DEPTH


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=10),
    st.sampled_from([{"type": t} for t in ("string", "number", "integer", "boolean", "null", "object", "array", "x")]),
    st.just({"$ref": "#/$defs/A"}),
    st.just({"$ref": "#/properties/a"}),
)
_schemas = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "required",
                    "items",
                    "anyOf",
                    "oneOf",
                    "allOf",
                    "enum",
                    "const",
                    "$ref",
                    "$defs",
                    "additionalProperties",
                    "description",
                    "default",
                    "nullable",
                    "prefixItems",
                ]
            ),
            inner,
            max_size=6,
        ),
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_schemas)
@example(obj({"q": {"type": "string", "description": "two\nlines"}, "a\nb": {"enum": ["x\ny"]}}))
def test_any_input_gives_one_line_and_dropping_descriptions_never_lengthens_it(schema: Any) -> None:
    text = signature(schema)  # never raises, whatever the upstream sent
    assert text and "\n" not in text, repr(text)  # a line per tool in a listing: newlines are flattened
    assert len(signature(schema, max_description_len=0)) <= len(text)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), _schemas, min_size=1, max_size=6), st.data())
def test_required_properties_always_appear_as_required(properties: dict[str, Any], data: st.DataObject) -> None:
    required = data.draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    text = signature({"type": "object", "properties": properties, "required": required})
    for name in required:
        assert re.search(rf"\b{name}: ", text), (name, text)


def test_every_livemcpbench_schema_converts_and_shrinks() -> None:
    path = DEFAULT_EVAL_DIR / "catalog_livemcpbench.jsonl"
    if not path.is_file():
        # The public eval data is not part of the repository; TOOLSCOUT_EVAL_DIR points at it.
        pytest.skip(f"no eval data at {path}; set TOOLSCOUT_EVAL_DIR")
    ratios: list[float] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        schema: dict[str, Any] = json.loads(line)["input_schema"] or {"type": "object"}
        text = signature(schema)
        required: list[str] = schema.get("required") or []
        properties: dict[str, Any] = schema.get("properties") or {}
        for name in required:
            if name in properties:
                assert re.search(rf'(^|\{{|, )"?{re.escape(name)}"?: ', text), (name, text)
        ratios.append(len(signature(schema, max_description_len=0)) / len(json.dumps(schema)))
    ratios.sort()
    assert ratios[len(ratios) // 2] < 0.5  # types only: well under half of the raw schema
