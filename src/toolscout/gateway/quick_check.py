"""The quick check: a test of arguments against an input schema, compiled once, that accepts only
arguments the schema surely accepts (the rest go to jsonschema, in gateway/validation.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

Check = Callable[[Any], bool]
"""A quick test of an instance against a schema: True only when the schema surely accepts it."""

_QUICK_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "format"}
)
"""The keywords `_quick_check` judges (`format` asserts nothing: the validators get no format checker).
A schema with any other keyword its draft asserts (`$ref`, `minimum`, `pattern`, ...) has no quick
check. Keywords the draft does not know (`title`, `description`, `x-...`) assert nothing, for
jsonschema either."""

_TYPE_CHECKS: dict[str, Check] = {
    # Subsets of what jsonschema accepts (it also takes 1.0 as an integer, Decimal as a number): a
    # value outside them goes to jsonschema, which decides.
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


_QUICK_DEPTH = 32
"""The deepest subschema the quick check compiles (deeper: jsonschema decides, under its budget)."""


def quick_check(schema: Any, known: frozenset[str], depth: int = 0) -> Check | None:
    """A check that accepts only instances `schema` accepts (draft 4 or later, already checked
    against its meta-schema); None when the schema uses a keyword it does not judge, or nests
    deeper than `_QUICK_DEPTH` (so neither compiling nor running it can exhaust the stack)."""
    if depth > _QUICK_DEPTH:
        return None
    if schema is True:
        return lambda _: True
    if not isinstance(schema, dict):
        return None  # `false`, which accepts nothing: jsonschema says why
    node = cast(dict[str, Any], schema)
    if any(k in known and k not in _QUICK_KEYWORDS for k in node):
        return None
    checks: list[Check] = []
    kind = node.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else cast(list[str], kind)
        if any(n not in _TYPE_CHECKS for n in names):
            return None
        tests = [_TYPE_CHECKS[n] for n in names]
        checks.append(tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests))
    if "enum" in node:
        # Only strings are judged here: jsonschema compares a string with strings alone, by ==.
        words = frozenset(e for e in cast(list[Any], node["enum"]) if isinstance(e, str))
        checks.append(lambda v: isinstance(v, str) and v in words)
    if "anyOf" in node:
        options = [quick_check(option, known, depth + 1) for option in cast(list[Any], node["anyOf"])]
        if any(option is None for option in options):
            return None
        branches = cast(list[Check], options)
        checks.append(lambda v: any(branch(v) for branch in branches))
    if "items" in node:
        if isinstance(node["items"], list):  # tuple validation (before 2020-12)
            return None
        item = quick_check(node["items"], known, depth + 1)
        if item is None:
            return None
        checks.append(lambda v: not isinstance(v, list) or all(item(i) for i in cast(list[Any], v)))
    object_check = _object_check(node, known, depth)
    if object_check is None:
        return None
    if object_check is not _ANY:
        checks.append(object_check)
    if not checks:
        return _ANY
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _ANY(_: Any) -> bool:
    return True


def _object_check(node: dict[str, Any], known: frozenset[str], depth: int) -> Check | None:
    """`properties`, `required` and `additionalProperties` together (they judge objects only)."""
    properties: dict[str, Check] = {}
    for name, sub in cast(dict[str, Any], node.get("properties", {})).items():
        judged = quick_check(sub, known, depth + 1)
        if judged is None:
            return None
        properties[name] = judged
    required = cast(list[str], node.get("required", []))
    extra: Check | None = _ANY
    if "additionalProperties" in node:
        extra = quick_check(node["additionalProperties"], known, depth + 1)  # None for `false`: no other key
    if not properties and not required and extra is _ANY:
        return _ANY

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        instance = cast(dict[str, Any], value)
        for name in required:
            if name not in instance:
                return False
        for name, item in instance.items():
            judge = properties.get(name, extra)
            if judge is None or not judge(item):
                return False
        return True

    return check
