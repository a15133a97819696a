"""Editing JSON and JSONC text in place: splices over the spans `toolscout.config.jsonc` records.

A value is set or removed by rewriting only its member's text, in the file's own indentation and
line endings; comments, trailing commas and every other byte stay as the user wrote them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolscout.config.edit_base import path_conflict
from toolscout.config.jsonc import Member, Node, parse

_DEFAULT_UNIT = "  "


def _line_indent(text: str, pos: int) -> str:
    start = end = text.rfind("\n", 0, pos) + 1
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _own_line_prefix(text: str, node_start: int, child_start: int) -> str | None:
    """The whitespace before a child that starts its own line inside its container, else None."""
    line_start = text.rfind("\n", 0, child_start) + 1
    prefix = text[line_start:child_start]
    return prefix if line_start > node_start and not prefix.strip(" \t") else None


def _detect_unit(text: str, root: Node | None) -> str:
    """The indent unit: how much deeper the first child on its own line sits than its container."""
    queue = [root] if root else []
    while queue:
        node = queue.pop(0)
        children = [m.value for m in node.members] if node.members is not None else node.items or []
        starts = [m.start for m in node.members] if node.members is not None else [c.start for c in children]
        outer = _line_indent(text, node.start)
        for start in starts:
            prefix = _own_line_prefix(text, node.start, start)
            if prefix is not None and prefix.startswith(outer) and len(prefix) > len(outer):
                return prefix[len(outer) :]
        queue.extend(c for c in children if c.members is not None or c.items is not None)
    return _DEFAULT_UNIT


class JsoncEditor:
    """JSONC text plus its parse; edits splice the text and parse it again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.root = parse(text)
        first_newline = text.find("\n")
        self.newline = "\r\n" if first_newline > 0 and text[first_newline - 1] == "\r" else "\n"
        self.unit = _detect_unit(text, self.root)

    def render(self) -> str:
        """The current text."""
        return self.text

    def whole(self) -> dict[str, Any]:
        """The document as plain values; an empty document reads as an empty object."""
        return self.root.plain() if self.root is not None else {}

    def _splice(self, *edits: tuple[int, int, str]) -> None:
        # Back to front, so earlier offsets stay valid; one parse at the end also
        # means a half-applied edit is never parsed.
        # (Edits at the same offset land in the order given.)
        for start, _, end, new in sorted(((s, i, e, n) for i, (s, e, n) in enumerate(edits)), reverse=True):
            self.text = self.text[:start] + new + self.text[end:]
        self.root = parse(self.text)

    def _object_at(self, keys: Sequence[str]) -> Node | None:
        node = self.root
        for key in keys:
            member = node.member(key) if node is not None else None
            node = member.value if member is not None else None
        return node if node is not None and node.members is not None else None

    def lookup(self, keys: Sequence[str]) -> tuple[bool, Any]:
        """(found, plain value) at the key path."""
        parent = self._object_at(keys[:-1])
        member = parent.member(keys[-1]) if parent is not None else None
        return (True, member.value.plain()) if member is not None else (False, None)

    def put(self, keys: Sequence[str], value: Any) -> None:
        """Replace the value at `keys`, or insert it together with any missing parent objects."""
        if self.root is None:
            lead = "" if not self.text or self.text.endswith("\n") else self.newline
            self._splice((len(self.text), len(self.text), lead + "{}" + self.newline))
        node, parent = self.root, None
        assert node is not None and node.members is not None, "the document layer rejects non-object roots"
        for depth, key in enumerate(keys[:-1]):
            member = node.member(key)
            if member is None:
                for missing in reversed(keys[depth + 1 :]):
                    value = {missing: value}
                return self._insert(node, parent, key, value)
            if member.value.members is None:
                raise path_conflict(keys, depth, member.value.plain())
            node, parent = member.value, node
        member = node.member(keys[-1])
        if member is None:
            return self._insert(node, parent, keys[-1], value)
        inline = "\n" not in self.text[node.start : node.end]
        rendered = self._render(value, _line_indent(self.text, member.value.start), inline, self._separators(node))
        return self._splice((member.value.start, member.value.end, rendered))

    def _separators(self, obj: Node) -> tuple[str, str]:
        # Inline rendering mimics the file's spacing (`{"a":1,"b":2}` vs `{"a": 1, "b": 2}`),
        # read off this object or else the top level; a trailing comma says nothing about it.
        text = self.text
        pools = [obj.members or [], self.root.members or [] if self.root is not None else []]
        colons = next(([m.colon for m in pool] for pool in pools if pool), list[int]())
        colon = ":" if colons and not text[colons[-1] + 1 : colons[-1] + 2].isspace() else ": "
        commas = next(([m.comma for m in pool[:-1] if m.comma is not None] for pool in pools if pool[1:]), list[int]())
        if not commas:
            return ", " if colon == ": " else ",", colon
        return ", " if text[commas[0] + 1 : commas[0] + 2].isspace() else ",", colon

    def _render(self, value: Any, indent: str, inline: bool, separators: tuple[str, str]) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=separators)
        rendered = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=self.unit)
        return rendered.replace("\n", self.newline + indent)

    def _after_line_comments(self, pos: int) -> int:
        """Past blanks and comments that finish the line at `pos`: a member's own trailing remarks."""
        text = self.text
        while True:
            while pos < len(text) and text[pos] in " \t":
                pos += 1
            if text.startswith("//", pos):
                end = text.find("\n", pos)
                end = len(text) if end < 0 else end
                return end - 1 if text[end - 1] == "\r" else end
            close = text.find("*/", pos) if text.startswith("/*", pos) else -1
            if close < 0 or "\n" in text[pos:close]:
                return pos
            pos = close + 2

    def _insert(self, obj: Node, parent: Node | None, key: str, value: Any) -> None:
        text, members = self.text, obj.members or []
        seps = self._separators(obj)
        label = json.dumps(key, ensure_ascii=False) + seps[1]
        if members and "\n" not in text[obj.start : obj.end]:
            last = members[-1]
            entry = label + self._render(value, "", True, seps)
            if last.comma is None:
                return self._splice((last.value.end, last.value.end, seps[0] + entry))
            return self._splice((last.comma + 1, last.comma + 1, seps[0][1:] + entry + ","))
        if members:
            last = members[-1]
            prefix = _own_line_prefix(text, obj.start, last.start)
            indent = prefix if prefix is not None else _line_indent(text, obj.start) + self.unit
            entry = self.newline + indent + label + self._render(value, indent, False, seps)
            # After the last member and any comment on its line, so that comment stays with it.
            if last.comma is not None:
                at = self._after_line_comments(last.comma + 1)
                return self._splice((at, at, entry + ","))
            at = self._after_line_comments(last.value.end)
            return self._splice((last.value.end, last.value.end, ","), (at, at, entry))
        if parent is not None and "\n" not in text[parent.start : parent.end]:
            return self._splice((obj.start + 1, obj.end - 1, label + self._render(value, "", True, seps)))
        outer = _line_indent(text, obj.start)
        inner = outer + self.unit
        entry = inner + label + self._render(value, inner, False, seps)
        close = obj.end - 1
        if not text[obj.start + 1 : close].strip():
            return self._splice((obj.start + 1, close, self.newline + entry + self.newline + outer))
        # An empty object that holds only comments: keep them above the new member.
        line_start = text.rfind("\n", 0, close) + 1
        if line_start > obj.start and not text[line_start:close].strip(" \t"):
            return self._splice((line_start, line_start, entry + self.newline))
        return self._splice((close, close, self.newline + entry + self.newline + outer))

    def remove(self, keys: Sequence[str]) -> bool:
        """Delete the member at `keys` (every duplicate of it); False when there is none."""
        found = False
        while (obj := self._object_at(keys[:-1])) is not None and (member := obj.member(keys[-1])) is not None:
            self._delete(obj, member)
            found = True
        return found

    def _delete(self, obj: Node, member: Member) -> None:
        text, members = self.text, obj.members or []
        index = next(i for i, m in enumerate(members) if m is member)
        after = member.comma + 1 if member.comma is not None else member.value.end
        if len(members) == 1 and not (text[obj.start + 1 : member.start] + text[after : obj.end - 1]).strip():
            return self._splice((obj.start + 1, obj.end - 1, ""))
        line_start = text.rfind("\n", 0, member.start) + 1
        eol = self._after_line_comments(after)
        if _own_line_prefix(text, obj.start, member.start) is not None and text[eol : eol + 1] in ("\r", "\n", ""):
            # The whole line goes, trailing comment included; comments on lines above stay.
            end = eol + (2 if text.startswith("\r\n", eol) else 1 if text.startswith("\n", eol) else 0)
            edits = [(line_start, end, "")]
            previous = members[index - 1].comma if index > 0 else None
            if index == len(members) - 1 and member.comma is None and previous is not None:
                edits.append((previous, previous + 1, ""))
            return self._splice(*edits)
        if index + 1 < len(members):
            return self._splice((member.start, members[index + 1].start, ""))
        previous = members[index - 1].comma if index > 0 else None
        if previous is not None:
            return self._splice((previous, member.value.end, "") if member.comma is None else (previous + 1, after, ""))
        return self._splice((member.start, after, ""))
