"""The "Run a tool" form built from input schemas, read back into arguments, and results as HTML."""

from __future__ import annotations

import base64
import html.parser
from typing import Any

import mcp_types as types
import pytest

from toolscout.errors import ArgumentValidationError
from toolscout.gateway.validation import ArgumentValidator
from toolscout.serve.dashboard.forms import (
    ALL_ARGUMENTS,
    MAX_FIELDS,
    MAX_OPTIONS,
    field_errors,
    form_for,
    parse_form,
    render_form,
)
from toolscout.serve.dashboard.results import render_result

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What to say <script>alert(1)</script>"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "ratio": {"type": ["number", "null"]},
        "loud": {"type": "boolean"},
        "unit": {"enum": ["km", "mi", "</option><script>x()</script>"]},
        "options": {"type": "object", "properties": {"a": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text", "count", "unit"],
}


class _Elements(html.parser.HTMLParser):
    """The tags of an HTML text with their attributes, and its text, as a browser's parser sees them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]


def test_each_type_gets_its_control_with_required_marks_and_bounds() -> None:
    page = _Elements(render_form(form_for(SCHEMA), action="/run", hidden={"csrf": "t0k"}))
    inputs = {a["name"]: a for a in page.named("input")}
    assert inputs["csrf"]["value"] == "t0k"
    assert inputs["arg:text"]["type"] == "text"
    assert inputs["arg:count"] == {
        "type": "number",
        "step": "1",
        "min": "1",
        "max": "10",
        "id": "f-1",
        "name": "arg:count",
        "value": "3",
    }
    assert inputs["arg:ratio"]["step"] == "any"
    assert inputs["arg:loud"]["type"] == "checkbox"
    assert {a["name"] for a in page.named("select")} == {"arg:unit"}
    assert {a["name"] for a in page.named("textarea")} == {"arg:options", "arg:tags"}
    required = [a for a in page.named("span") if a.get("class") == "required"]
    assert len(required) == 3
    assert ("form", {"class": "run-form", "method": "post", "action": "/run", "novalidate": None}) in page.tags


def test_text_from_the_schema_is_escaped() -> None:
    text = render_form(form_for(SCHEMA), action="/run")
    page = _Elements(text)
    assert not any(tag == "script" for tag, _ in page.tags)
    assert "What to say <script>alert(1)</script>" in "".join(page.text)
    options = [a["value"] for a in page.named("option")]
    assert '"</option><script>x()</script>"' in options


def test_hostile_property_names_stay_inside_their_attributes() -> None:
    schema = {"type": "object", "properties": {'x"><script>y()</script>': {"type": "string"}}}
    page = _Elements(render_form(form_for(schema), action="/run"))
    assert not any(tag == "script" for tag, _ in page.tags)
    assert page.named("input")[0]["name"] == 'arg:x"><script>y()</script>'


def test_parsing_gives_the_schemas_types_and_leaves_out_empty_optional_fields() -> None:
    form = form_for(SCHEMA)
    arguments, errors = parse_form(
        form,
        {
            "arg:text": "hi",
            "arg:count": "4",
            "arg:ratio": "",
            "arg:loud": "true",
            "arg:unit": '"mi"',
            "arg:options": '{"a": "b"}',
            "arg:tags": "",
        },
    )
    assert errors == {}
    assert arguments == {"text": "hi", "count": 4, "loud": True, "unit": "mi", "options": {"a": "b"}}
    ArgumentValidator().validate(SCHEMA, arguments, server="s", tool="t")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("arg:count", "4.5", "'4.5' is not a whole number."),
        ("arg:ratio", "abc", "'abc' is not a number."),
        ("arg:ratio", "nan", "The number must be finite."),
        ("arg:unit", '"yd"', "Pick one of the listed values."),
        (
            "arg:options",
            "{'a': 1}",
            "Not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2).",
        ),
        ("arg:tags", "[" * 100_000, "The JSON nests too deep."),
    ],
)
def test_type_mistakes_are_reported_by_field(name: str, value: str, message: str) -> None:
    submitted = {"arg:text": "hi", "arg:count": "2", "arg:unit": '"km"', name: value}
    _, errors = parse_form(form_for(SCHEMA), submitted)
    assert errors == {name: [message]}


def test_numbers_keep_integers_whole() -> None:
    arguments, _ = parse_form(form_for(SCHEMA), {"arg:ratio": "2", "arg:count": "-3"})
    assert arguments == {"ratio": 2, "count": -3}
    arguments, _ = parse_form(form_for(SCHEMA), {"arg:ratio": "2.5e1"})
    assert arguments == {"ratio": 25.0}


def test_submitted_values_are_shown_again_with_the_gateways_violations_beside_their_fields() -> None:
    form = form_for(SCHEMA)
    submitted = {"arg:count": "40", "arg:unit": '"km"', "arg:tags": '["a", 1]'}
    arguments, errors = parse_form(form, submitted)
    assert errors == {}
    with pytest.raises(ArgumentValidationError) as refused:
        ArgumentValidator().validate(SCHEMA, arguments, server="s", tool="t")
    placed = field_errors(form, refused.value.details["violations"])
    assert placed == {
        "arg:text": ["This parameter is required."],
        "arg:count": ["40 is greater than the maximum of 10"],
        "arg:tags": ["[1]: 1 is not of type 'string'"],
    }
    text = render_form(form, action="/run", values=submitted, errors=placed)
    page = _Elements(text)
    assert {a["name"]: a["value"] for a in page.named("input") if a["type"] == "number"}["arg:count"] == "40"
    assert "40 is greater than the maximum of 10" in page.text
    selected = [a for a in page.named("option") if "selected" in a]
    assert [a["value"] for a in selected] == ['"km"']


def test_schemas_a_form_cannot_show_get_one_json_editor() -> None:
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_FIELDS + 1)}}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"a": deep}}
    cases: list[tuple[Any, str]] = [
        (wide, f"the tool has more than {MAX_FIELDS} parameters"),
        (deep, "input schema nests deeper than 64 levels (the limit on a schema's nesting); flatten it"),
        ({"type": "object", "additionalProperties": {}}, "the input schema names no parameters but accepts any"),
        ([1], "the input schema is not an object"),
    ]
    for schema, reason in cases:
        form = form_for(schema)
        assert form.fields is None
        assert form.reason == reason
        page = _Elements(render_form(form, action="/run"))
        assert [a["name"] for a in page.named("textarea")] == [ALL_ARGUMENTS]
    form = form_for({"type": "object", "additionalProperties": True})
    assert parse_form(form, {ALL_ARGUMENTS: '{"a": [1]}'}) == ({"a": [1]}, {})
    assert parse_form(form, {ALL_ARGUMENTS: "[1]"}) == (
        {},
        {ALL_ARGUMENTS: ["The arguments must be a JSON object: {...}."]},
    )
    assert field_errors(form, [{"path": "$.a", "message": "bad"}]) == {ALL_ARGUMENTS: ["bad"]}


def test_a_tool_without_parameters_gets_no_fields() -> None:
    schemas: list[dict[str, Any]] = [{"type": "object"}, {"type": "object", "properties": {}}]
    for schema in schemas:
        form = form_for(schema)
        assert form.fields == ()
        assert "This tool takes no arguments." in render_form(form, action="/run")
        assert parse_form(form, {"arg:x": "1"}) == ({}, {})


def test_a_long_enum_is_edited_as_json() -> None:
    schema = {"type": "object", "properties": {"n": {"enum": list(range(MAX_OPTIONS + 1))}}}
    form = form_for(schema)
    assert form.fields is not None and form.fields[0].kind == "json"


# Results


def _png() -> str:
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 20).decode()


def test_a_result_shows_text_images_audio_links_and_structured_content() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="<b>bold</b>"),
            types.ImageContent(data=_png(), mime_type="image/png"),
            types.AudioContent(data=_png(), mime_type="audio/wav"),
            types.ResourceLink(name="doc", uri="https://example.com/d"),
            types.ResourceLink(name="bad", uri="javascript:alert(1)"),
            types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a", text="<i>x</i>")),
        ],
        structured_content={"k": "<v>"},
    )
    text = render_result(result)
    page = _Elements(text)
    assert page.named("img")[0]["src"] == f"data:image/png;base64,{_png()}"
    assert page.named("audio")[0]["src"] == f"data:audio/wav;base64,{_png()}"
    assert [a["href"] for a in page.named("a")] == ["https://example.com/d"]
    assert {tag for tag, _ in page.tags} == {
        "section",
        "pre",
        "figure",
        "img",
        "audio",
        "div",
        "a",
        "code",
        "details",
        "summary",
    }
    shown = "".join(page.text)
    assert "<b>bold</b>" in shown and "<i>x</i>" in shown and '"k": "<v>"' in shown and "javascript:alert(1)" in shown
    assert "result-error" not in text


@pytest.mark.parametrize(
    ("mime", "data"),
    [("image/svg+xml", base64.b64encode(b"<svg/>").decode()), ("image/png", 'AAAA"><script>'), ("image/png", "AAA")],
)
def test_images_outside_the_allow_list_or_not_base64_are_not_shown(mime: str, data: str) -> None:
    text = render_result(types.CallToolResult(content=[types.ImageContent(data=data, mime_type=mime)]))
    page = _Elements(text)
    assert page.named("img") == [] and not any(tag == "script" for tag, _ in page.tags)
    assert "not shown" in "".join(page.text)


def test_an_error_result_is_marked() -> None:
    text = render_result(types.CallToolResult(content=[types.TextContent(text="boom")], is_error=True))
    assert 'class="result result-error"' in text and "isError" in text
