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
