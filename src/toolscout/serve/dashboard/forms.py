"""The "Run a tool" form: HTML fields generated from a tool's input schema, and the submitted form read
back into arguments of the schema's types.

Each top-level property becomes one field: a string a text box, a number or integer a number box
with the schema's bounds, a boolean a checkbox, an `enum` a select, and anything else (objects,
arrays, `anyOf`, a list of types...) a JSON editor, a textarea whose text is parsed on submit.
A required property is marked, and its field carries a `*`.

Everything here comes from an upstream server: names, titles, descriptions, enum values and
defaults are escaped on the way into the page, so a `<script>` in a description is shown as text.
A schema too large or deep for the validator (`toolscout.schemas.schema_problem`), or with more
properties than a form can usefully show, gets one JSON editor for all the arguments instead of
fields, and long descriptions and enum lists are cut: the work of building a form stays bounded
whatever the schema.

The form checks types only (a number box that holds "abc"); whether the arguments satisfy the
schema is the gateway's validation, the same as for `execute_tool`, whose violations
`field_errors` places next to their fields. The form is sent with `novalidate` for that reason:
one judge of the arguments, the gateway, not the browser's reading of a few attributes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Literal, cast

from toolscout.schemas import schema_problem

FIELD_PREFIX = "arg:"
"""Form names of argument fields start with this, so that no property name meets the form's own
fields (the CSRF token, the tool's name)."""
ALL_ARGUMENTS = "arguments"
"""The form name of the one JSON editor used when the schema gets no fields."""
MAX_FIELDS = 100
"""The most properties shown as fields; a schema with more gets one JSON editor."""
MAX_OPTIONS = 200
"""The most enum values shown as a select; a longer enum is edited as JSON."""
MAX_TEXT_CHARS = 2_000
"""Descriptions and titles are cut to this many characters on the page."""
MAX_JSON_CHARS = 1_000_000
"""The longest JSON text a field may hold (the HTTP layer bounds the whole request as well)."""

Kind = Literal["string", "number", "integer", "boolean", "enum", "json"]


@dataclass(frozen=True, slots=True)
class FormField:
    """One top-level property of the input schema, as the form shows it."""

    name: str
    kind: Kind
    required: bool
    title: str
    description: str
    options: tuple[Any, ...] = ()
    """The enum's values (kind `enum`)."""
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None
    has_default: bool = False

    @property
    def form_name(self) -> str:
        return FIELD_PREFIX + self.name


@dataclass(frozen=True, slots=True)
class Form:
    """The fields of a schema, or None for fields when the whole arguments are one JSON editor (`reason` says why)."""

    fields: tuple[FormField, ...] | None
    reason: str | None = None


def form_for(schema: Any) -> Form:
    """The form for a tool's input schema."""
    if not isinstance(schema, dict):
        return Form(None, "the input schema is not an object")
    schema = cast(dict[str, Any], schema)
    problem = schema_problem(schema)
    if problem is not None:
        return Form(None, problem)
    properties: Any = schema.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        return Form(None, "the input schema's properties are not an object")
    properties = cast(dict[str, Any], properties)
    if len(properties) > MAX_FIELDS:
        return Form(None, f"the tool has more than {MAX_FIELDS} parameters")
    if not properties and schema.get("additionalProperties") not in (None, False):
        # Arguments of any name, and none named: only a JSON object can say what to send.
        return Form(None, "the input schema names no parameters but accepts any")
    raw_required: Any = schema.get("required")
    required = (
        {r for r in cast(list[Any], raw_required) if isinstance(r, str)}
        if isinstance(raw_required, list)
        else set[str]()
    )
    return Form(tuple(_field(name, prop, name in required) for name, prop in properties.items()))


def _field(name: str, prop: Any, required: bool) -> FormField:
    node = cast(dict[str, Any], prop) if isinstance(prop, dict) else {}
    title = _text(node.get("title")) or name
    description = _text(node.get("description"))
    common: dict[str, Any] = {"name": name, "required": required, "title": title, "description": description}
    if "default" in node:
        common.update(default=node["default"], has_default=True)
    enum: Any = node.get("enum")
    if "const" in node and enum is None:
        enum = [node["const"]]
    if isinstance(enum, list) and 0 < len(cast(list[Any], enum)) <= MAX_OPTIONS:
        return FormField(kind="enum", options=tuple(cast(list[Any], enum)), **common)
    kind = _single_type(node)
    if kind in ("number", "integer"):
        return FormField(kind=kind, minimum=_bound(node.get("minimum")), maximum=_bound(node.get("maximum")), **common)
    if kind in ("string", "boolean"):
        return FormField(kind=kind, **common)
    return FormField(kind="json", **common)


def _single_type(node: Mapping[str, Any]) -> str | None:
    """The property's one JSON type (a nullable one counts as its other type), if it has exactly one
    and nothing (`anyOf`, `format`-free compositions) makes a plain field the wrong editor."""
    if any(key in node for key in ("anyOf", "oneOf", "allOf", "$ref", "not", "if")):
        return None
    kind: Any = node.get("type")
    if isinstance(kind, list):
        others = [k for k in cast(list[Any], kind) if k != "null"]
        kind = others[0] if len(others) == 1 else None
    return kind if isinstance(kind, str) else None


def _bound(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return value if len(value) <= MAX_TEXT_CHARS else value[: MAX_TEXT_CHARS - 1] + "…"


# Rendering


def render_form(
    form: Form,
    *,
    action: str,
    hidden: Mapping[str, str] = {},
    values: Mapping[str, str] | None = None,
    errors: Mapping[str, Sequence[str]] | None = None,
    submit: str = "Run",
) -> str:
    """The form as HTML. `values`: what was submitted (shown again after a refusal), else the schema's
    defaults; `errors`: messages by form name (`field_errors`), the key "" for the form as a whole;
    `hidden`: fields such as the CSRF token and the tool's name."""
    errors = errors or {}
    parts = [f'<form class="run-form" method="post" action="{escape(action)}" novalidate>']
    parts += [f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in hidden.items()]
    parts += _messages(errors.get("", ()))
    if form.fields is None:
        text = (values or {}).get(ALL_ARGUMENTS, "{}")
        note = f'<p class="note">All arguments as one JSON object: {escape(form.reason or "")}.</p>'
        parts += [
            '<div class="field field-json">',
            f'<label for="f-{ALL_ARGUMENTS}">arguments</label>',
            note,
            f'<textarea id="f-{ALL_ARGUMENTS}" name="{ALL_ARGUMENTS}" rows="8" spellcheck="false">'
            f"{escape(text)}</textarea>",
            *_messages(errors.get(ALL_ARGUMENTS, ())),
            "</div>",
        ]
    elif not form.fields:
        parts.append('<p class="note">This tool takes no arguments.</p>')
    else:
        for index, field in enumerate(form.fields):
            parts.append(_render_field(field, index, values, errors.get(field.form_name, ())))
    parts.append(f'<button type="submit">{escape(submit)}</button></form>')
    return "\n".join(parts)


def _render_field(field: FormField, index: int, values: Mapping[str, str] | None, errors: Sequence[str]) -> str:
    ident = f"f-{index}"
    name = escape(field.form_name)
    mark = ' <span class="required" title="required">*</span>' if field.required else ""
    invalid = ' aria-invalid="true"' if errors else ""
    shown = None if values is None else values.get(field.form_name)
    label = f'<label for="{ident}"><code>{escape(field.name)}</code>{mark}'
    if field.title != field.name:
        label += f' <span class="title">{escape(field.title)}</span>'
    label += "</label>"
    if field.kind == "enum":
        chosen = shown if values is not None else (json.dumps(field.default) if field.has_default else None)
        options = [] if field.required else ['<option value="">(not set)</option>']
        for option in field.options:
            value = json.dumps(option, ensure_ascii=False)
            selected = " selected" if value == chosen else ""
            options.append(f'<option value="{escape(value)}"{selected}>{escape(_option_text(option))}</option>')
        control = f'<select id="{ident}" name="{name}"{invalid}>{"".join(options)}</select>'
    elif field.kind == "boolean":
        checked = shown is not None if values is not None else field.default is True
        control = (
            f'<input type="checkbox" id="{ident}" name="{name}" value="true"{" checked" if checked else ""}{invalid}>'
        )
    elif field.kind == "json":
        text = shown if shown is not None else (json.dumps(field.default, indent=2) if field.has_default else "")
        control = f'<textarea id="{ident}" name="{name}" rows="4" spellcheck="false"{invalid}>{escape(text)}</textarea>'
    else:
        text = shown if shown is not None else (_plain(field.default) if field.has_default else "")
        if field.kind == "string":
            attributes = 'type="text"'
        else:
            step = "1" if field.kind == "integer" else "any"
            attributes = f'type="number" step="{step}"'
            if field.minimum is not None:
                attributes += f' min="{escape(repr(field.minimum))}"'
            if field.maximum is not None:
                attributes += f' max="{escape(repr(field.maximum))}"'
        control = f'<input {attributes} id="{ident}" name="{name}" value="{escape(text)}"{invalid}>'
    description = f'<p class="description">{escape(field.description)}</p>' if field.description else ""
    kind = "JSON" if field.kind == "json" else field.kind
    return "\n".join(
        [
            f'<div class="field field-{field.kind}" data-field="{escape(field.name)}">',
            label,
            f'<span class="type">{escape(kind)}</span>',
            control,
            description,
            *_messages(errors),
            "</div>",
        ]
    )


def _messages(messages: Sequence[str]) -> list[str]:
    return [f'<p class="error" role="alert">{escape(m)}</p>' for m in messages]


def _option_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# Reading the submitted form


def parse_form(form: Form, submitted: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The arguments the submitted form gives, and the type mistakes found, by form name (as
    `render_form` takes them). An empty optional field is left out of the arguments."""
    arguments: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    if form.fields is None:
        value, problem = _json(submitted.get(ALL_ARGUMENTS, "").strip() or "{}")
        if problem is not None:
            errors[ALL_ARGUMENTS] = [problem]
        elif not isinstance(value, dict):
            errors[ALL_ARGUMENTS] = ["The arguments must be a JSON object: {...}."]
        else:
            arguments = cast(dict[str, Any], value)
        return arguments, errors
    for field in form.fields:
        raw = submitted.get(field.form_name)
        if field.kind == "boolean":
            if raw is not None:
                arguments[field.name] = True
            elif field.required or field.default is True:
                arguments[field.name] = False
            continue
        if raw is None or (raw.strip() == "" and (field.kind != "string" or not field.required)):
            continue  # left empty: not sent (the gateway says so if it is required)
        value, problem = _value(field, raw)
        if problem is not None:
            errors[field.form_name] = [problem]
        else:
            arguments[field.name] = value
    return arguments, errors


def _value(field: FormField, raw: str) -> tuple[Any, str | None]:
    if field.kind == "string":
        return raw, None
    if field.kind == "enum":
        value, problem = _json(raw)
        if problem is not None or value not in field.options:
            return None, "Pick one of the listed values."
        return value, None
    if field.kind == "json":
        return _json(raw)
    text = raw.strip()
    if field.kind == "integer":
        if not re.fullmatch(r"[+-]?\d{1,300}", text):
            return None, f"{text[:40]!r} is not a whole number."
        return int(text), None
    try:
        number = float(text)
    except ValueError:
        return None, f"{text[:40]!r} is not a number."
    if not math.isfinite(number):
        return None, "The number must be finite."
    return (int(text) if re.fullmatch(r"[+-]?\d{1,300}", text) else number), None


def _json(text: str) -> tuple[Any, str | None]:
    if len(text) > MAX_JSON_CHARS:
        return None, f"The JSON text is longer than {MAX_JSON_CHARS:,} characters."
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
    except RecursionError:
        return None, "The JSON nests too deep."


# The gateway's refusal, placed next to the fields


def field_errors(form: Form, violations: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    """The gateway's validation violations (`{"path": "$.a[0]", "message"}`, as `ArgumentValidationError`
    carries them) by form name: each under the field its path starts in, a missing required property
    under its own field, and the rest under "" (the form as a whole)."""
    names = sorted((f.name for f in form.fields or ()), key=len, reverse=True)
    whole = ALL_ARGUMENTS if form.fields is None else ""
    placed: dict[str, list[str]] = {}
    for violation in violations:
        path, message = str(violation.get("path", "$")), str(violation.get("message", ""))
        target = whole
        if form.fields is not None:
            missing = _REQUIRED.fullmatch(message) if path == "$" else None
            if missing is not None and missing.group(1) in names:
                target, message = FIELD_PREFIX + missing.group(1), "This parameter is required."
            else:
                for name in names:  # the longest name first: "$.a.b" is in field "a.b" if there is one
                    prefix = "$." + name
                    if path == prefix or path.startswith((prefix + ".", prefix + "[")):
                        target = FIELD_PREFIX + name
                        if path != prefix:
                            message = f"{path.removeprefix(prefix).lstrip('.')}: {message}"
                        break
                else:
                    if path != "$":
                        message = f"{path}: {message}"
        placed.setdefault(target, []).append(message)
    return placed


_REQUIRED = re.compile(r"'(.*)' is a required property", re.DOTALL)
