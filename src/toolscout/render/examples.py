"""Example arguments for a tool, made from its input schema with values that look like real ones.

`get_tool_details` gives them as `examples` and `toolscout inspect --examples` prints them: a model
copies an example's shape more readily than it reads a schema, and a placeholder (`"<path>"`) copied
as it is makes a call that fails. So a value comes, in this order, from the schema itself (its
`examples`, `default`, `const`, first `enum` value), from the description's own example ("City
name, e.g. Paris" gives "Paris"), from the `format` (`date`, `email`, `uri`, ...), from the words of
the property's name (`city`, `file_path`, `max_results`, ...), and last from the name itself. Numbers
keep within the schema's bounds, strings within its lengths and `pattern` (a value they refuse gives
way to the next one; a pattern none of them matches gets the last). It never raises: whatever a server
sends as a schema, an example comes out.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any, TypedDict, cast

MAX_DEPTH = 6
"""Nesting deeper than this gets no example value (null): a recursive schema ends somewhere."""


class Example(TypedDict):
    """One example call: what it shows, and the arguments to pass (`execute_tool`'s `arguments`)."""

    description: str
    arguments: dict[str, Any]


def tool_examples(schema: Mapping[str, Any]) -> list[Example]:
    """The examples of a tool with this input schema: its required arguments, then, when it has
    optional parameters without a default (or a null one), one with those too."""
    required = example_arguments(schema)
    everything = example_arguments(schema, optional=True)
    if not everything:
        return [{"description": "No arguments", "arguments": {}}]
    if everything == required:
        return [{"description": "Required arguments", "arguments": required}]
    if not required:
        return [{"description": "Optional arguments", "arguments": everything}]
    return [
        {"description": "Required arguments", "arguments": required},
        {"description": "With optional arguments", "arguments": everything},
    ]


def example_arguments(schema: Mapping[str, Any], *, optional: bool = False) -> dict[str, Any]:
    """Arguments that satisfy the schema's shape: every required property (and, with `optional`,
    every top-level optional one without a default, or with a null one), each with a value that looks
    like a real one."""
    value = _Examples(schema).value(schema, "value", 0, optional=optional)
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _as_dict(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


_FORMAT_EXAMPLES = {
    "date-time": "2025-01-31T09:00:00Z",
    "date": "2025-01-31",
    "time": "09:00:00",
    "duration": "PT1H",
    "email": "ada@example.com",
    "idn-email": "ada@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.10",
    "ipv6": "2001:db8::10",
    "uri": "https://example.com/docs",
    "url": "https://example.com/docs",
    "iri": "https://example.com/docs",
    "uri-reference": "/docs/intro",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "regex": "^[a-z]+$",
    "json-pointer": "/items/0",
}

# The words of a property's name, each with a value a person would pass for it. A name is read from
# its last word back ("from_unit" is a unit, "repo_owner" an owner), the whole name first.
_WORD_EXAMPLES: dict[str, Any] = {
    "address": "10 Downing Street, London",
    "after": "The quick red fox.",
    "author": "Ada Lovelace",
    "before": "The quick brown fox.",
    "body": "Budget approved; hiring starts in March.",
    "branch": "main",
    "category": "work",
    "channel": "general",
    "city": "Paris",
    "code": "print('hello')",
    "color": "blue",
    "colour": "blue",
    "command": "ls -la",
    "comment": "Looks good to me.",
    "content": "Meeting moved to Friday at 3 pm.",
    "country": "France",
    "currency": "EUR",
    "date": "2025-01-31",
    "datetime": "2025-01-31T09:00:00Z",
    "description": "Weekly sync with the design team",
    "dir": "docs",
    "directory": "docs",
    "domain": "example.com",
    "email": "ada@example.com",
    "expression": "(3 + 4) * 2",
    "file": "docs/notes.md",
    "filename": "notes.md",
    "folder": "docs",
    "formula": "(3 + 4) * 2",
    "glob": "**/*.md",
    "host": "example.com",
    "hostname": "example.com",
    "id": "42",
    "keyword": "invoice",
    "keywords": "invoice",
    "label": "bug",
    "lang": "en",
    "language": "en",
    "locale": "en-US",
    "location": "Paris",
    "message": "Hello from toolscout!",
    "model": "gpt-4o-mini",
    "name": "Ada Lovelace",
    "note": "Buy milk on the way home.",
    "owner": "octocat",
    "path": "docs/notes.md",
    "pattern": "*.md",
    "phone": "+1 555 0100",
    "prompt": "Write a haiku about autumn.",
    "q": "weather in Paris",
    "query": "weather in Paris",
    "question": "What is the capital of France?",
    "regex": "^[a-z]+$",
    "repo": "octocat/hello-world",
    "repository": "octocat/hello-world",
    "search": "weather in Paris",
    "sql": "SELECT id, name FROM users LIMIT 10",
    "status": "open",
    "subject": "Quarterly report",
    "summary": "Quarterly report",
    "tag": "work",
    "term": "invoice",
    "text": "The quick brown fox jumps over the lazy dog.",
    "time": "09:00",
    "timestamp": "2025-01-31T09:00:00Z",
    "timezone": "Europe/Paris",
    "title": "Quarterly report",
    "topic": "climate",
    "tz": "Europe/Paris",
    "unit": "km",
    "uri": "https://example.com/docs",
    "url": "https://example.com/docs",
    "user": "octocat",
    "username": "octocat",
    "website": "https://example.com",
    "zone": "Europe/Paris",
}
_NUMBER_WORDS: dict[str, int | float] = {
    "age": 30,
    "amount": 25.5,
    "count": 10,
    "days": 7,
    "height": 600,
    "hours": 2,
    "lat": 48.8566,
    "latitude": 48.8566,
    "limit": 10,
    "lines": 20,
    "lng": 2.3522,
    "lon": 2.3522,
    "longitude": 2.3522,
    "max": 10,
    "minutes": 30,
    "n": 5,
    "number": 42,
    "offset": 0,
    "page": 1,
    "port": 8080,
    "price": 19.99,
    "quantity": 2,
    "results": 10,
    "seconds": 30,
    "size": 10,
    "temperature": 21.5,
    "timeout": 30,
    "top": 5,
    "value": 26.2,
    "width": 800,
    "year": 2025,
}

_HINT = re.compile(
    r"\b(?:e\.g\.|eg\.|for example|for instance|such as)[,:]?\s*"
    r"""(?:"([^"]+)"|'([^']+)'|`([^`]+)`|([^\s,;)"'`][^,;)"'`]*?))(?=[,;)]|\.\s|\.?$|\s+or\s)""",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _words(name: str) -> list[str]:
    """`fromUnit`, `from_unit` and `from-unit` all as ["from", "unit"]."""
    return [w.lower() for w in _WORDS.findall(name)]


def _hint(description: Any) -> str | None:
    """The example a description gives of its value ("City name, e.g. Paris": "Paris"), if any."""
    if not isinstance(description, str):
        return None
    found = _HINT.search(description)
    if found is None:
        return None
    value = next(group for group in found.groups() if group is not None).strip()
    return value or None


class _Examples:
    """The example values of one schema (its root, for `$ref`s)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def value(self, node: Mapping[str, Any], name: str, depth: int, *, optional: bool = False) -> Any:
        if isinstance(examples := node.get("examples"), list) and examples:
            return cast(list[Any], examples)[0]
        if node.get("default") is not None:  # (a null default says "leave it out", not what to pass)
            return node["default"]
        if "const" in node:
            return node["const"]
        if isinstance(enum := node.get("enum"), list) and enum:
            return cast(list[Any], enum)[0]
        if depth > MAX_DEPTH:
            return None
        if isinstance(ref := node.get("$ref"), str) and ref.startswith("#/"):
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = _as_dict(target).get(part)
            # The referring schema's own description (and hint) goes with the referred one.
            merged = {**_as_dict(target), **{k: v for k, v in node.items() if k == "description"}}
            return self.value(merged, name, depth + 1)
        for combinator in ("anyOf", "oneOf", "allOf"):
            if isinstance(options := node.get(combinator), list):
                usable = [_as_dict(o) for o in cast(list[Any], options) if _as_dict(o).get("type") != "null"]
                if usable:
                    described = {"description": node["description"]} if "description" in node else {}
                    return self.value({**described, **usable[0]}, name, depth + 1)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in cast(list[Any], kind) if k != "null"), None)
        if kind == "object" or "properties" in node:
            return self.object(node, depth, optional=optional)
        if kind == "array":
            items = _as_dict(node.get("items"))
            return [self.value(items, _singular(name), depth + 1)] if items else []
        if kind in ("integer", "number"):
            return self.number(node, name, integer=kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self.string(node, name)

    def object(self, node: Mapping[str, Any], depth: int, *, optional: bool) -> dict[str, Any]:
        properties = _as_dict(node.get("properties"))
        required = node.get("required")
        wanted = [k for k in cast(list[Any], required) if isinstance(k, str)] if isinstance(required, list) else []
        if optional:  # (a default is what the tool does without it: nothing to show; null is no default)
            wanted += [k for k, v in properties.items() if k not in wanted and _as_dict(v).get("default") is None]
        return {key: self.value(_as_dict(properties.get(key)), key, depth + 1) for key in wanted}

    def number(self, node: Mapping[str, Any], name: str, *, integer: bool) -> int | float:
        candidates: list[int | float] = []
        if (hinted := _hint(node.get("description"))) is not None:
            with contextlib.suppress(ValueError):
                candidates.append(float(hinted.rstrip(".")))
        candidates += [_NUMBER_WORDS[w] for w in reversed(_words(name)) if w in _NUMBER_WORDS]
        candidates.append(1)
        low, high = node.get("minimum"), node.get("maximum")
        for candidate in candidates:
            value = round(candidate) if integer else candidate
            # Held to the bounds: a `max_results` of at most 5 reads 5, not the usual 10.
            if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
                value = high
            if isinstance(low, int | float) and not isinstance(low, bool) and value < low:
                value = low
            if _within(value, node):
                return round(value) if integer else value
        # Nothing fits (exclusive bounds): the middle of the bounds, or a bound.
        bounds = [b for b in (low, high) if isinstance(b, int | float) and not isinstance(b, bool)]
        number = sum(bounds) / len(bounds) if bounds else 1
        return round(number) if integer else number

    def string(self, node: Mapping[str, Any], name: str) -> str:
        candidates: list[str] = []
        if (hinted := _hint(node.get("description"))) is not None:
            candidates.append(hinted)
        if isinstance(fmt := node.get("format"), str) and fmt in _FORMAT_EXAMPLES:
            candidates.append(_FORMAT_EXAMPLES[fmt])
        words = _words(name)
        joined = "".join(words)
        if joined in _WORD_EXAMPLES:
            candidates.append(str(_WORD_EXAMPLES[joined]))
        candidates += [str(_WORD_EXAMPLES[w]) for w in reversed(words) if w in _WORD_EXAMPLES]
        candidates.append(" ".join(words) or "example")
        for candidate in candidates:
            if _fits(candidate, node):
                return candidate
        low = node.get("minLength")
        return "a" * low if isinstance(low, int) and low > 0 else candidates[-1]


def _singular(name: str) -> str:
    """The name of one item of an array called `name` (`tags`: `tag`), for its example."""
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _within(value: float, node: Mapping[str, Any]) -> bool:
    """Whether `value` keeps within the number schema's bounds."""

    def bound(key: str) -> float | None:
        found = node.get(key)
        return float(found) if isinstance(found, int | float) and not isinstance(found, bool) else None

    low, high = bound("minimum"), bound("maximum")
    above, below = bound("exclusiveMinimum"), bound("exclusiveMaximum")
    return (
        (low is None or value >= low)
        and (high is None or value <= high)
        and (above is None or value > above)
        and (below is None or value < below)
    )


def _fits(value: str, node: Mapping[str, Any]) -> bool:
    """Whether `value` keeps within the string schema's lengths and matches its `pattern`."""
    low, high = node.get("minLength"), node.get("maxLength")
    if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
        return False
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            return re.search(pattern, value) is not None
        except re.error:  # a pattern Python cannot read: the value stands
            return True
    return True
