"""Parsing the formats a configuration is written in, where the standard library has no parser: JSON
with comments and trailing commas (JSONC), recording where every value sits, and YAML 1.2.

Client configs such as VS Code's `settings.json` are hand-written JSONC full of comments and
trailing commas. Loading and re-dumping them would throw all of that away, so the parser records
where every value and member sits: `toolscout.config.editors.JsoncEditor` rewrites only those
spans, and every byte outside the edited member stays as the user wrote it.

YAML is read with ruamel.yaml's safe loader, which speaks YAML 1.2: only `true` and `false` are
booleans, so a server called `off` stays a name rather than becoming `False` as YAML 1.1 would
have it. TOML needs nothing here: `tomllib` reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


class JsoncSyntaxError(ValueError):
    """The text is not JSON, even allowing comments and trailing commas; `line`/`column` are 1-based."""

    def __init__(self, reason: str, text: str, pos: int) -> None:
        self.reason = reason
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"line {self.line}, column {self.column}: {reason}")


@dataclass
class Node:
    """One value, spanning `text[start:end]`; objects carry `members`, arrays `items`."""

    start: int
    end: int
    scalar: Any = None
    members: list[Member] | None = None
    items: list[Node] | None = None

    def plain(self) -> Any:
        """The value as json.loads would return it (the last of duplicate keys wins)."""
        if self.members is not None:
            return {m.key: m.value.plain() for m in self.members}
        if self.items is not None:
            return [item.plain() for item in self.items]
        return self.scalar

    def member(self, key: str) -> Member | None:
        """The member named `key`; with duplicates the last, as it is the one readers see."""
        for member in reversed(self.members or []):
            if member.key == key:
                return member
        return None


@dataclass
class Member:
    """A member `"key": value` of an object; `comma` is the offset of the comma after it, if any."""

    key: str
    start: int
    colon: int
    value: Node
    comma: int | None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, pos: int | None = None) -> JsoncSyntaxError:
        return JsoncSyntaxError(reason, self.text, self.pos if pos is None else pos)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self) -> None:
        text, size = self.text, len(self.text)
        while self.pos < size:
            if text[self.pos] in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = size if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        start, char = self.pos, self.peek()
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            text = self.string()
            return Node(start, self.pos, scalar=text)
        number = _NUMBER.match(self.text, self.pos) if char in "-0123456789" else None
        if number:
            self.pos = number.end()
            return Node(start, self.pos, scalar=json.loads(number.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return Node(start, self.pos, scalar=literal)
        raise self.fail(f"expected a value, found {char!r}" if char else "unexpected end of file, expected a value")

    def string(self) -> str:
        text, start = self.text, self.pos
        i = start + 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\":
                i += 2
            elif text[i] in "\r\n":
                raise self.fail("unterminated string (strings cannot span lines)", start)
            elif text[i] < " ":
                raise self.fail("control character in string; write it as an escape such as \\t", i)
            else:
                i += 1
        if i >= len(text):
            raise self.fail("unterminated string", start)
        self.pos = i + 1
        try:
            return str(json.loads(text[start : self.pos]))
        except json.JSONDecodeError as exc:
            raise self.fail(f"invalid string: {exc.msg}", start + exc.pos) from None

    def close_or_comma(self, close: str, what: str) -> int | None:
        self.skip()
        if self.peek() == ",":
            self.pos += 1
            return self.pos - 1
        if self.peek() != close:
            found = repr(self.peek()) if self.peek() else "end of file"
            raise self.fail(f"expected ',' or '{close}' after {what}, found {found}")
        return None

    def object(self) -> Node:
        start, members = self.pos, list[Member]()
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "}":
                self.pos += 1
                return Node(start, self.pos, members=members)
            if self.peek() != '"':
                found = repr(self.peek()) if self.peek() else "end of file"
                raise self.fail(f"expected a double-quoted key or '}}', found {found}")
            key_start, key = self.pos, self.string()
            self.skip()
            if self.peek() != ":":
                raise self.fail(f"expected ':' after the key {key!r}")
            colon = self.pos
            self.pos += 1
            value = self.value()
            members.append(Member(key, key_start, colon, value, self.close_or_comma("}", "an object member")))

    def array(self) -> Node:
        start, items = self.pos, list[Node]()
        self.pos += 1
        while True:
            self.skip()
            if self.peek() == "]":
                self.pos += 1
                return Node(start, self.pos, items=items)
            items.append(self.value())
            self.close_or_comma("]", "an array item")


def parse(text: str) -> Node | None:
    """Parse JSONC; None when the text holds no value at all (empty, or only comments)."""
    parser = _Parser(text)
    parser.skip()
    if parser.pos >= len(text):
        return None
    try:
        root = parser.value()
    except RecursionError:
        raise parser.fail("values are nested too deeply") from None
    parser.skip()
    if parser.pos < len(text):
        raise parser.fail("unexpected text after the top-level value")
    return root


def load_yaml(text: str) -> Any:
    """Parse YAML 1.2 text safely; raises `ruamel.yaml.YAMLError` (with marks) on bad input.

    A key written twice in one mapping reads as its last value, as JSON readers have it, rather
    than making the file unreadable.
    """
    # Imported only for a YAML file: `serve` with a JSON config has no use for ruamel.
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    class LastKeyWins(SafeConstructor):
        def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
            return True

    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = LastKeyWins
    return yaml.load(text)  # pyright: ignore[reportUnknownMemberType]
