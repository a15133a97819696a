"""Reading JSON Schemas for people and models: call signatures, parameter lists and short type labels
(example arguments are examples.py's).

A signature is TypeScript-like: what a model needs to call a tool, in few tokens.
`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}` becomes
`{path: string}`. Optional properties get `?`, defaults `= value`, descriptions a `/* ... */`
comment cut to `max_description_len` characters (0 drops them). A `brief` signature, for a listing
that only needs to say how to call the tool, leaves the defaults out and names only the first
`BRIEF_ENUM_VALUES` values of a long enum, with how many there are. Local `$ref`s are resolved, a
reference to a schema already being expanded prints its name instead (recursive schemas), and
nesting deeper than `MAX_DEPTH` prints `object`. It never raises: whatever a server sends as a
schema, the agent gets a readable signature.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypedDict, cast

MAX_DEPTH = 6
DEFAULT_DESCRIPTION_LEN = 60
BRIEF_ENUM_VALUES = 6
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


def signature(schema: Any, *, max_description_len: int = DEFAULT_DESCRIPTION_LEN, brief: bool = False) -> str:
    """The signature of a schema, e.g. `{path: string, tail?: number /* last N lines */}`."""
    root: Mapping[str, Any] = cast(Mapping[str, Any], schema) if isinstance(schema, Mapping) else {}
    try:
        return _Printer(root, max_description_len, brief).type_of(schema, 0, ())
    except RecursionError:  # pathological nesting outside MAX_DEPTH's reach (e.g. huge unions)
        return "object"


def call_signature(
    name: str, schema: Any, *, max_description_len: int = DEFAULT_DESCRIPTION_LEN, brief: bool = False
) -> str:
    """A tool call as a model would write it: `read_file({path: string})`."""
    return f"{name}({signature(schema, max_description_len=max_description_len, brief=brief)})"


def _literal(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return "unknown"


def _flat(text: str) -> str:
    # One line, and no "*/" that would end the comment early.
    return " ".join(text.split()).replace("*/", "* /")


def description_cut(text: Any, limit: int = DEFAULT_DESCRIPTION_LEN) -> bool:
    """Whether a signature with descriptions up to `limit` characters shows `text` cut short."""
    return isinstance(text, str) and len(_flat(text)) > limit


def _comment(text: Any, limit: int) -> str:
    if limit <= 0 or not isinstance(text, str) or not text.strip():
        return ""
    flat = _flat(text)
    if len(flat) > limit:
        flat = flat[: max(limit - 3, 1)].rstrip() + "..."
    return f" /* {flat} */"


class _Printer:
    def __init__(self, root: Mapping[str, Any], description_len: int, brief: bool = False) -> None:
        self.root = root
        self.description_len = description_len
        self.brief = brief

    def resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#"):
            return None
        node: Any = self.root
        for part in (p for p in ref[1:].split("/") if p):
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = cast(Mapping[str, Any], node)[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(cast(list[Any], node)):
                node = cast(list[Any], node)[int(key)]
            else:
                return None
        return cast(Mapping[str, Any], node) if isinstance(node, Mapping) else None

    def type_of(self, node: Any, depth: int, expanding: tuple[str, ...]) -> str:
        if node is True or node is None:
            return "any"
        if node is False:
            return "never"
        if not isinstance(node, Mapping):
            return "any"
        schema = cast(Mapping[str, Any], node)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            # A signature is one line: a name with spaces or newlines in it (a hostile schema's) is flattened.
            name = " ".join(ref.rsplit("/", 1)[-1].split()) or "object"
            target = self.resolve(ref)
            if target is None or ref in expanding or depth >= MAX_DEPTH:
                return name
            return self.type_of(target, depth, (*expanding, ref))
        if "const" in schema:
            return _literal(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            values = [_literal(v) for v in cast(list[Any], schema["enum"])]
            if self.brief and len(values) > BRIEF_ENUM_VALUES + 1:
                return "|".join(values[:BRIEF_ENUM_VALUES]) + f"|… ({len(values)} values)"
            # Long enums (regions, model names...) cost fewer tokens packed: `"KR"|"BR"|...`.
            return ("|" if len(values) > 6 else " | ").join(values)
        for key, joiner in (("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")):
            options = schema.get(key)
            if isinstance(options, list) and options:
                parts = list(dict.fromkeys(self.wrapped(o, depth, expanding) for o in cast(list[Any], options)))
                return self.nullable(joiner.join(parts), schema)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in cast(list[Any], kind) if isinstance(k, str)]
            parts = [self.type_of({**schema, "type": k}, depth, expanding) for k in dict.fromkeys(kinds)]
            return " | ".join(self.paren(p) for p in parts) or "any"
        if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
            return self.nullable(self.array(schema, depth, expanding), schema)
        if kind == "object" or (kind is None and ("properties" in schema or "additionalProperties" in schema)):
            return self.nullable(self.object(schema, depth, expanding), schema)
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return self.nullable(_PRIMITIVES[kind], schema)
        return "any"

    def nullable(self, text: str, schema: Mapping[str, Any]) -> str:
        return f"{text} | null" if schema.get("nullable") is True and not text.endswith("null") else text

    @staticmethod
    def paren(text: str) -> str:
        return f"({text})" if (" | " in text or " & " in text) and not text.startswith("{") else text

    def wrapped(self, node: Any, depth: int, expanding: tuple[str, ...]) -> str:
        return self.paren(self.type_of(node, depth, expanding))

    def array(self, schema: Mapping[str, Any], depth: int, expanding: tuple[str, ...]) -> str:
        items = schema.get("prefixItems", schema.get("items"))
        if isinstance(items, list):  # a tuple
            return "[" + ", ".join(self.type_of(i, depth + 1, expanding) for i in cast(list[Any], items)) + "]"
        if depth + 1 > MAX_DEPTH:
            return "any[]"
        return self.wrapped(items, depth + 1, expanding) + "[]"

    def object(self, schema: Mapping[str, Any], depth: int, expanding: tuple[str, ...]) -> str:
        if depth >= MAX_DEPTH:
            return "object"
        raw_properties = schema.get("properties")
        properties: Mapping[str, Any] = (
            cast(Mapping[str, Any], raw_properties) if isinstance(raw_properties, Mapping) else {}
        )
        raw_required = schema.get("required")
        listed = cast(list[Any], raw_required) if isinstance(raw_required, list) else []
        required: set[str] = {r for r in listed if isinstance(r, str)}
        extra = schema.get("additionalProperties")
        if not properties:
            if extra is False:
                return "{}"
            value = "any" if extra in (None, True) else self.type_of(extra, depth + 1, expanding)
            return f"Record<string, {value}>" if extra not in (None,) else "object"
        fields: list[str] = []
        for name, prop in properties.items():
            key = name if _IDENTIFIER.match(name) else _literal(name)
            optional = "" if name in required else "?"
            text = f"{key}{optional}: {self.type_of(prop, depth + 1, expanding)}"
            if optional and not self.brief and isinstance(prop, Mapping) and "default" in prop:
                default = _literal(cast(Mapping[str, Any], prop)["default"])
                text += f" = {default if len(default) <= 40 else default[:37] + '...'}"
            if isinstance(prop, Mapping):
                text += _comment(cast(Mapping[str, Any], prop).get("description"), self.description_len)
            fields.append(text)
        if isinstance(extra, Mapping) or extra is True:
            fields.append(f"[key: string]: {self.type_of(extra, depth + 1, expanding)}")
        return "{" + ", ".join(fields) + "}"


_SCALARS = {"string", "number", "integer", "boolean", "null"}


class Parameter(TypedDict, total=False):
    name: str
    type: str
    description: str
    required: bool
    default: Any
    enum: list[Any]


def _as_dict(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def type_label(schema: Mapping[str, Any]) -> str:
    """A short type for a property schema: `string`, `number[]`, `"a" | "b"`, `object`, `Foo`."""
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v) for v in cast(list[Any], schema["enum"]))
    if isinstance(ref := schema.get("$ref"), str):
        return " ".join(ref.rsplit("/", 1)[-1].split()) or "object"
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list):
            labels = [type_label(_as_dict(o)) for o in cast(list[Any], options)]
            return " | ".join(dict.fromkeys(labels))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in cast(list[Any], kind))
    if kind == "array":
        items = _as_dict(schema.get("items"))
        inner = type_label(items) if items else "any"
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    return "any"


def parameters(schema: Mapping[str, Any]) -> list[Parameter]:
    """The top-level properties of an input schema, required ones first as the schema lists them."""
    properties = _as_dict(schema.get("properties"))
    required_list = schema.get("required")
    required = set(cast(list[str], required_list)) if isinstance(required_list, list) else set[str]()
    out: list[Parameter] = []
    for name, raw in properties.items():
        prop = _as_dict(raw)
        param: Parameter = {"name": name, "type": type_label(prop), "required": name in required}
        if isinstance(desc := prop.get("description"), str) and desc:
            param["description"] = " ".join(desc.split())
        if "default" in prop:
            param["default"] = prop["default"]
        out.append(param)
    out.sort(key=lambda p: not p.get("required", False))
    return out


def is_flat(schema: Mapping[str, Any]) -> bool:
    """Whether the parameter list says everything: no nested objects, references or combinators."""
    if any(k in schema for k in ("$defs", "definitions", "allOf", "anyOf", "oneOf", "patternProperties")):
        return False
    for raw in _as_dict(schema.get("properties")).values():
        prop = _as_dict(raw)
        if any(k in prop for k in ("$ref", "allOf", "not", "if", "properties", "patternProperties")):
            return False
        items = _as_dict(prop.get("items"))
        if items and (items.get("type") in ("object", "array") or "$ref" in items or "properties" in items):
            return False
        if prop.get("type") == "object":
            return False
        for combinator in ("anyOf", "oneOf"):
            if isinstance(options := prop.get(combinator), list) and any(
                _as_dict(o).get("type") not in _SCALARS for o in cast(list[Any], options)
            ):
                return False
    return True
