"""A tool as the Python call a `run_code` program makes: `await notes.create_note(title: str, body: str)`.

The parameters are the input schema's top-level properties, required ones first, each with a Python
type read from its schema (`str`, `int`, `float`, `bool`, `list[str]`, `dict`, `Literal["a", "b"]`,
unions with `|`); an optional one ends in `= <default>` (its schema's, else `None`), or `= ...` in
a `brief` signature. A property whose name is no Python identifier can only be passed as
`**{'max-results': int}`, which is how it is written. Like render/signatures.py it never raises:
whatever a server sends as a schema, the agent gets a readable line.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any, cast

MAX_DEPTH = 4
BRIEF_ENUM_VALUES = 6
_PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def python_call(obj: str, attribute: str, schema: Any, *, brief: bool = False) -> str:
    """`await obj.attribute(name: type, ...)` for a tool whose input schema is `schema`."""
    return f"await {obj}.{attribute}({python_parameters(schema, brief=brief)})"


def python_parameters(schema: Any, *, brief: bool = False) -> str:
    """The keyword parameters of an input schema, as a Python parameter list."""
    root: Mapping[str, Any] = cast(Mapping[str, Any], schema) if isinstance(schema, Mapping) else {}
    raw = root.get("properties")
    properties: Mapping[str, Any] = cast(Mapping[str, Any], raw) if isinstance(raw, Mapping) else {}
    listed = root.get("required")
    required = {r for r in cast(list[Any], listed) if isinstance(r, str)} if isinstance(listed, list) else set[str]()
    plain: list[str] = []
    optional: list[str] = []
    odd: list[str] = []
    for name, prop in properties.items():
        kind = _type(prop, 0, brief)
        if not name.isidentifier() or keyword.iskeyword(name):
            odd.append(f"{name!r}: {kind}")
        elif name in required:
            plain.append(f"{name}: {kind}")
        else:
            optional.append(f"{name}: {kind} = {_default(prop, brief)}")
    parts = [*plain, *optional]
    if odd:
        parts.append("**{" + ", ".join(odd) + "}")
    return ", ".join(parts)


def _default(prop: Any, brief: bool) -> str:
    if brief:
        return "..."
    if isinstance(prop, Mapping) and "default" in prop:
        text = _literal(cast(Mapping[str, Any], prop)["default"])
        return text if len(text) <= 40 else "..."
    return "None"


def _literal(value: Any) -> str:
    """A JSON value as Python writes it: `True`, `None`, `'text'`, `[1, 2]`."""
    return repr(value)


def _type(node: Any, depth: int, brief: bool) -> str:
    if not isinstance(node, Mapping) or depth > MAX_DEPTH:
        return "Any"
    schema = cast(Mapping[str, Any], node)
    if "const" in schema:
        return f"Literal[{_literal(schema['const'])}]"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        values = [_literal(v) for v in cast(list[Any], enum)]
        if brief and len(values) > BRIEF_ENUM_VALUES + 1:
            values = [*values[:BRIEF_ENUM_VALUES], "..."]
        return f"Literal[{', '.join(values)}]"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            kinds = [_type(o, depth + 1, brief) for o in cast(list[Any], options)]
            return " | ".join(dict.fromkeys(kinds))
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [_type({**schema, "type": k}, depth, brief) for k in cast(list[Any], kind) if isinstance(k, str)]
        return " | ".join(dict.fromkeys(kinds)) or "Any"
    if kind == "array":
        items = schema.get("items")
        return f"list[{_type(items, depth + 1, brief)}]" if isinstance(items, Mapping) else "list"
    if kind == "object" or "properties" in schema:
        return "dict"
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    return "Any"
