"""Reading JSON Schemas for people and models: parameter lists and short type labels."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypedDict, cast

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
        return ref.rsplit("/", 1)[-1]
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


_FORMAT_EXAMPLES = {
    "date-time": "2025-01-31T09:00:00Z",
    "date": "2025-01-31",
    "time": "09:00:00",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy the schema's shape: every required property, filled from the schema's own hints."""
    value = _example(schema, schema, "value", 0)
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _example(node: Mapping[str, Any], root: Mapping[str, Any], name: str, depth: int) -> Any:
    if isinstance(examples := node.get("examples"), list) and examples:
        return cast(list[Any], examples)[0]
    for key in ("default", "const"):
        if key in node:
            return node[key]
    if isinstance(enum := node.get("enum"), list) and enum:
        return cast(list[Any], enum)[0]
    if depth > 6:
        return None
    if isinstance(ref := node.get("$ref"), str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = _as_dict(target).get(part)
        return _example(_as_dict(target), root, name, depth + 1)
    for combinator in ("anyOf", "oneOf", "allOf"):
        if isinstance(options := node.get(combinator), list):
            usable = [_as_dict(o) for o in cast(list[Any], options) if _as_dict(o).get("type") != "null"]
            if usable:
                return _example(usable[0], root, name, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast(list[Any], kind) if k != "null"), None)
    if kind == "object" or "properties" in node:
        properties = _as_dict(node.get("properties"))
        required = node.get("required")
        wanted = cast(list[str], required) if isinstance(required, list) else []
        return {key: _example(_as_dict(properties.get(key)), root, key, depth + 1) for key in wanted}
    if kind == "array":
        items = _as_dict(node.get("items"))
        return [_example(items, root, name, depth + 1)] if items else []
    if kind == "integer":
        return int(node.get("minimum", 1))
    if kind == "number":
        return node.get("minimum", 1.5)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    fmt = node.get("format")
    return _FORMAT_EXAMPLES.get(fmt, f"<{name}>") if isinstance(fmt, str) else f"<{name}>"
