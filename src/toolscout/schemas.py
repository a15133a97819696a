"""The JSON schemas of tools as the gateway judges them: whether one can be validated within the validator's
budget, judged when it arrives, and one canonical JSON text for hashing a definition.

A JSON Schema can cost far more to check than its size says: 40 levels of
`anyOf: [{$ref: next}, {$ref: next}]` is 2^40 evaluations for one argument, and a `$ref` that leads
back to itself without reaching into the arguments never ends at all. Both are found here by a
static reading of the schema (local `$ref`s resolved by JSON pointer, `$anchor` or `#`), before any
call: a registration with such a schema is refused, an upstream's tool with one is listed as
unusable. The validator's own budget (gateway/validation.py) stops whatever this estimate misses.

Every walk here is iterative and each subschema is costed once (memoised), so the reading takes
time in proportion to the schema's size, whatever its depth or shape.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote

MAX_EVALUATIONS = 1_000
"""The most subschema evaluations one place in the arguments may cost in the worst case: every
branch of `anyOf`/`allOf`/`oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas` and every `$ref`
target count, each followed to the end."""
MAX_DEPTH = 64
"""The deepest nesting of objects and arrays in a schema document."""
MAX_VALUES = 50_000
"""The most JSON values (objects, arrays, strings, numbers...) in a schema document."""

_ONE, _LIST, _MAP, _REF = range(4)
_IN_PLACE = {
    "allOf": _LIST,
    "anyOf": _LIST,
    "oneOf": _LIST,
    "not": _ONE,
    "if": _ONE,
    "then": _ONE,
    "else": _ONE,
    "dependentSchemas": _MAP,
    "dependencies": _MAP,
    "$ref": _REF,
    "$dynamicRef": _REF,
    "$recursiveRef": _REF,
}
"""The keywords whose subschemas apply where the schema itself does (their evaluations add up)."""
_DESCENDING = {
    "items": _ONE,  # or a list, before 2020-12
    "prefixItems": _LIST,
    "additionalItems": _ONE,
    "contains": _ONE,
    "additionalProperties": _ONE,
    "propertyNames": _ONE,
    "unevaluatedItems": _ONE,
    "unevaluatedProperties": _ONE,
    "properties": _MAP,
    "patternProperties": _MAP,
}
"""The keywords whose subschemas apply to a part of the value (each a place of its own)."""
_UNEVALUATED = ("unevaluatedItems", "unevaluatedProperties")


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """What a schema may cost to validate (see the module constants for each)."""

    max_evaluations: int = MAX_EVALUATIONS
    max_depth: int = MAX_DEPTH
    max_values: int = MAX_VALUES


@dataclass(frozen=True, slots=True)
class SchemaCost:
    """What the static reading of a schema found: its size, depth and worst evaluations at one place."""

    values: int
    depth: int
    evaluations: int
    problem: str | None
    """Why the schema cannot be validated within the limits (a sentence naming the limit), or None."""


def schema_problem(schema: Any, limits: SchemaLimits | None = None) -> str | None:
    """Why `schema` cannot be validated within `limits`, as a sentence that names the limit and what
    to change; None when it can. Remembered per schema object (see `_Remembered`)."""
    if limits is not None:
        return measure(schema, limits).problem
    return _remembered.problem(schema)


def measure(schema: Any, limits: SchemaLimits | None = None) -> SchemaCost:
    """The static reading of `schema` against `limits` (default: the module's constants)."""
    limits = limits or SchemaLimits()
    values, depth, combined = _size(schema, limits)
    if depth > limits.max_depth:
        reason = f"nests deeper than {limits.max_depth} levels (the limit on a schema's nesting)"
        return SchemaCost(values, depth, 0, f"input schema {reason}; flatten it")
    if values > limits.max_values:
        reason = f"has more than {limits.max_values:,} JSON values (the limit on a schema's size)"
        return SchemaCost(values, depth, 0, f"input schema {reason}; make it smaller")
    if not combined:  # (most schemas) every subschema is evaluated once where it applies
        return SchemaCost(values, depth, 1, None)
    evaluations, problem = _Costing(schema, limits.max_evaluations).run()
    return SchemaCost(values, depth, evaluations, problem)


def _size(document: Any, limits: SchemaLimits) -> tuple[int, int, bool]:
    """(values, deepest nesting, whether any object has an in-place keyword) of a JSON document,
    counting stopped once past either limit."""
    values, deepest, combined = 1, 1, False
    pending: list[tuple[Any, int]] = [(document, 1)] if isinstance(document, dict | list) else []
    while pending:
        value, depth = pending.pop()
        deepest = max(deepest, depth)
        if deepest > limits.max_depth or values > limits.max_values:
            break
        if isinstance(value, dict):
            mapping = cast(dict[str, Any], value)
            combined = combined or not mapping.keys().isdisjoint(_IN_PLACE)
            children: Collection[Any] = mapping.values()
        else:
            children = cast(list[Any], value)
        values += len(children)
        pending.extend((child, depth + 1) for child in children if _is_container(child))
    return values, deepest, combined


class _Costing:
    """The worst-case evaluations at one place in the arguments of every subschema reachable from the
    root, memoised per subschema; a `$ref` cycle that stays in place is the problem found."""

    def __init__(self, root: Any, limit: int) -> None:
        self._root = root
        self._limit = limit
        self._cost: dict[int, int] = {}
        self._anchors: dict[str, Any] | None = None

    def run(self) -> tuple[int, str | None]:
        """(the highest cost seen, the problem if any)."""
        highest = 0
        places: list[tuple[Any, str]] = [(self._root, "#")]  # each starts a new place in the arguments
        seen: set[int] = set()
        while places:
            node, pointer = places.pop()
            if id(node) in seen or id(node) in self._cost:
                continue
            seen.add(id(node))
            cost, problem = self._in_place(node, pointer, places)
            highest = max(highest, cost)
            if problem is not None:
                return highest, problem
        return highest, None

    def _in_place(self, start: Any, pointer: str, places: list[tuple[Any, str]]) -> tuple[int, str | None]:
        """The cost of evaluating `start` at one place: itself plus its in-place subschemas', added up
        (depth first, without recursion). Subschemas that reach into the arguments go to `places`."""
        on_path: set[int] = set()
        # Each frame: a subschema, where it is, its in-place subschemas, those still to cost.
        stack: list[tuple[Any, str, list[Any], list[tuple[Any, str]]]] = []
        node, where = start, pointer
        while True:
            if id(node) in on_path:
                first = next(i for i, frame in enumerate(stack) if frame[0] is node)
                loop = " -> ".join([*(frame[1] for frame in stack[first:]), where])
                return 0, (
                    f"input schema has a $ref cycle that never reaches into the arguments ({loop}), so "
                    "validating it never ends; make every $ref loop pass through properties or items"
                )
            on_path.add(id(node))
            children = self._split(node, where, places)
            stack.append((node, where, [child for child, _ in children], children))
            while stack:
                node, where, inner, pending = stack[-1]
                while pending and id(pending[-1][0]) in self._cost:
                    pending.pop()
                if pending:
                    node, where = pending[-1]  # costed once entered and left, then popped above
                    break
                stack.pop()
                on_path.discard(id(node))
                total = sum(self._cost[id(child)] for child in inner)
                if total and _has_unevaluated(node):
                    total *= 2  # finding what was evaluated walks the in-place subschemas again
                cost = self._cost[id(node)] = 1 + total
                if cost > self._limit:
                    return cost, (
                        f"input schema may need more than {self._limit:,} subschema evaluations for one value "
                        f"(the limit; passed at {where}, where anyOf, allOf, oneOf and $ref branches add up); "
                        "simplify its combinations or share fewer $ref targets"
                    )
            else:
                return self._cost[id(start)], None

    def _split(self, node: Any, where: str, places: list[tuple[Any, str]]) -> list[tuple[Any, str]]:
        """`node`'s in-place subschemas (returned) and those that reach into the value (onto `places`)."""
        found: list[tuple[Any, str]] = []
        if not isinstance(node, dict):
            return found
        for key, value in cast(dict[str, Any], node).items():
            shape = _IN_PLACE.get(key)
            into = found
            if shape is None:
                shape = _DESCENDING.get(key)
                if shape is None:
                    continue
                into = places
                if shape is _ONE and _is_list(value):
                    shape = _LIST  # `items` as a list of schemas (before 2020-12)
            if shape is _REF:
                target = self._resolve(value)
                if target is not None:
                    found.append((target, str(value)))  # (a local $ref is the JSON pointer of its target)
            elif shape is _ONE:
                if _is_schema(value):
                    into.append((value, f"{where}/{key}"))
            elif shape is _LIST:
                if isinstance(value, list):
                    into.extend((s, f"{where}/{key}/{i}") for i, s in enumerate(cast(list[Any], value)))
            elif isinstance(value, dict):
                for name, sub in cast(dict[str, Any], value).items():
                    if _is_schema(sub):  # (draft 4-7 `dependencies` may list names instead)
                        into.append((sub, f"{where}/{key}/{name}"))
        return found

    def _resolve(self, ref: Any) -> Any | None:
        """The subschema a local `$ref` names (`#`, `#/json/pointer`, `#anchor`), or None."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None  # another document: jsonschema resolves it, or says it cannot
        fragment = unquote(ref[1:])
        if not fragment:
            return self._root
        if not fragment.startswith("/"):
            return self._anchor(fragment)
        node: Any = self._root
        for part in fragment[1:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = cast(dict[str, Any], node)[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(cast(list[Any], node)):
                node = cast(list[Any], node)[int(part)]
            else:
                return None
        return node if _is_schema(node) else None

    def _anchor(self, name: str) -> Any | None:
        if self._anchors is None:
            self._anchors = {}
            pending: list[Any] = [self._root]
            while pending:
                value = pending.pop()
                if isinstance(value, dict):
                    mapping = cast(dict[str, Any], value)
                    for key in ("$anchor", "$dynamicAnchor"):
                        if isinstance(mapping.get(key), str):
                            self._anchors.setdefault(mapping[key], mapping)
                    pending.extend(mapping.values())
                elif isinstance(value, list):
                    pending.extend(cast(list[Any], value))
        return self._anchors.get(name)


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict | bool)


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list)


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _has_unevaluated(node: Any) -> bool:
    return isinstance(node, dict) and any(key in node for key in _UNEVALUATED)


class _Remembered:
    """Each schema's problem, remembered by the schema object's identity (the object kept alive with
    it, so its id cannot be reused), so listing the same tools again costs a lookup per tool."""

    _MAX = 65_536

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, str | None]] = {}

    def problem(self, schema: Any) -> str | None:
        known = self._known.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        problem = measure(schema).problem
        if len(self._known) >= self._MAX:
            self._known.clear()
        self._known[id(schema)] = (schema, problem)
        return problem


_remembered = _Remembered()


def canonical_json(value: Any) -> bytes:
    """Return `value` as one JSON text whatever the order its keys came in, in UTF-8.

    Keys are sorted and there are no spaces, so a hash of it (a pinned tool definition, a confirmed
    call's arguments) does not change with key order; a value JSON cannot hold is written as its `str`.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.encode("utf-8", "surrogatepass")
