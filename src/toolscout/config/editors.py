"""The editors `ConfigDocument` uses, one per file format, and what they share.

Each editor changes one document in place and renders it back with everything it was not asked to
change as the user wrote it. JSON and JSONC are edited by splicing the text over the spans the
JSONC parser records (`JsoncEditor`), in the file's own indentation and line endings, so comments,
trailing commas and every other byte stay. YAML is edited with ruamel.yaml's round-trip mode
(`YamlBackend`), TOML with tomlkit (`TomlBackend`), tables laid out the way people write them. Both
libraries file a full-line comment under the entry above it, so each backend moves such comments
back to the key or header they introduce.

The shared part comes first: the protocol every editor follows, the error for a key path that runs
through something that is not a mapping, and walking plain mappings by key path (YAML and TOML).
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol, cast

import tomlkit
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import AoT, Array, Comment, InlineTable, Item, String, StringType, Table, Whitespace

from toolscout.config.formats import Member, Node, parse
from toolscout.errors import ConfigurationError

INLINE_TABLE_WIDTH = 80


def describe(value: Any) -> str:
    """Return a few words for the kind of a plain value, for error messages."""
    kinds = [(bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"), (dict, "a mapping")]
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def path_conflict(keys: Sequence[str], depth: int, found: Any) -> ConfigurationError:
    """The error for a key path that runs through something that is not a mapping."""
    where = ".".join(keys[: depth + 1])
    return ConfigurationError(
        f"cannot set {'.'.join(keys)}: {where} is {describe(found)}, not a mapping. "
        f"Remove or rename {where} first, or choose another key."
    )


class Backend(Protocol):
    """What `ConfigDocument` asks of an editor: look a key path up, put or remove a value, render the text."""

    def lookup(self, keys: Sequence[str]) -> tuple[bool, Any]: ...
    def put(self, keys: Sequence[str], value: Any) -> None: ...
    def remove(self, keys: Sequence[str]) -> bool: ...
    def render(self) -> str: ...
    def whole(self) -> dict[str, Any]: ...


def as_mapping(value: Any) -> MutableMapping[Any, Any] | None:
    """Return `value` as a mutable mapping, or None when it is not one."""
    return cast(MutableMapping[Any, Any], value) if isinstance(value, MutableMapping) else None


def plain(value: Any) -> Any:
    """Return ruamel and tomlkit values as dict/list/str/int/float/bool/None (dates as ISO text)."""
    if isinstance(value, Item | Container | OutOfOrderTableProxy):
        value = cast(Any, value).unwrap()
    if value is None or isinstance(value, bool | ScalarBoolean):
        return None if value is None else bool(value)
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in cast(Mapping[Any, Any], value).items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in cast(Sequence[Any], value)]
    return value.isoformat() if isinstance(value, dt.date | dt.time) else str(value)


def same(old: Any, new: Any) -> bool:
    """Whether two plain values are equal and of the same types, so `1` never counts as `True` or `1.0`."""
    if isinstance(old, dict) and isinstance(new, Mapping):
        old_map, new_map = cast(dict[str, Any], old), cast(Mapping[str, Any], new)
        return old_map.keys() == new_map.keys() and all(same(v, new_map[k]) for k, v in old_map.items())
    if isinstance(old, list) and isinstance(new, list | tuple):
        old_seq, new_seq = cast(list[Any], old), cast(Sequence[Any], new)
        return len(old_seq) == len(new_seq) and all(map(same, old_seq, new_seq))
    return type(cast(object, old)) is type(cast(object, new)) and old == new


class MappingBackend:
    """Shared walking for the YAML and TOML backends, whose documents are nested mappings."""

    root: MutableMapping[Any, Any]

    def _walk(self, keys: Sequence[str]) -> MutableMapping[Any, Any] | None:
        node: MutableMapping[Any, Any] | None = self.root
        for key in keys:
            node = as_mapping(node.get(key)) if node is not None else None
        return node

    def _parent_for_put(self, keys: Sequence[str]) -> MutableMapping[Any, Any]:
        # ConfigDocument nests the value under the first missing key, so every parent exists.
        node = self.root
        for depth, key in enumerate(keys[:-1]):
            child = as_mapping(node.get(key))
            if child is None:
                raise path_conflict(keys, depth, plain(node.get(key)))
            node = child
        return node

    def lookup(self, keys: Sequence[str]) -> tuple[bool, Any]:
        parent = self._walk(keys[:-1])
        return (True, plain(parent[keys[-1]])) if parent is not None and keys[-1] in parent else (False, None)

    def whole(self) -> dict[str, Any]:
        return cast(dict[str, Any], plain(self.root))


# JSON and JSONC: splices over the spans the parser records.


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
        """Return (found, plain value) at the key path."""
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


# YAML: ruamel.yaml round-trip mode, comments kept where they belong.


def _guess_yaml_indent(text: str) -> tuple[int, int, int]:
    """Return (mapping, sequence, offset) for ruamel's `indent()`, read off the first nested lines."""
    mapping = offset = sequence = None
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for above, line in itertools.pairwise(lines):
        if not above.rstrip().endswith(":"):
            continue
        parent = len(above) - len(above.lstrip(" -"))
        indent = len(line) - len(line.lstrip(" "))
        if line.lstrip().startswith("- ") and offset is None:
            content = len(line) - len(line[indent + 1 :].lstrip(" "))
            offset, sequence = max(indent - parent, 0), content - parent
        elif mapping is None and indent > parent and not line.lstrip().startswith("-"):
            mapping = indent - parent
    mapping = mapping or 2
    if offset is None or sequence is None:
        offset, sequence = mapping, mapping + 2
    return mapping, max(sequence, offset + 2), offset


class YamlBackend(MappingBackend):
    """A YAML document in ruamel.yaml's round-trip mode, indented as the file is."""

    def __init__(self, text: str, where: str) -> None:
        self.yaml = YAML(typ="rt")
        self.yaml.preserve_quotes = True
        self.yaml.width = 1 << 16  # never re-wrap long lines
        mapping, sequence, offset = _guess_yaml_indent(text)
        self.yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        loaded: Any = self.yaml.load(text)  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(loaded, CommentedMap | None):
            raise ConfigurationError(
                f"{where}: the top level must be a mapping (key: value), found {describe(plain(loaded))}."
            )
        self.root = cast(MutableMapping[Any, Any], loaded if loaded is not None else CommentedMap())

    def _chain(self, keys: Sequence[str]) -> list[tuple[Any, str]]:
        """Return (mapping, key) for each step of the path, as far as the mappings go."""
        chain: list[tuple[Any, str]] = []
        node: Any = self.root
        for key in keys:
            if not isinstance(node, CommentedMap):
                break
            chain.append((node, key))
            node = cast(Any, node).get(key)
        return chain

    def put(self, keys: Sequence[str], value: Any) -> None:
        parent = self._parent_for_put(keys)
        chain, key = self._chain(keys), keys[-1]
        old: Any = parent.get(key)
        new = _to_yaml(value, old)
        carried: list[Any] = []
        target = None
        if not len(parent) and isinstance(parent, CommentedMap) and cast(Any, parent).fa.flow_style():
            cast(Any, parent).fa.set_block_style()  # `servers: {}` grows into a block, as JSON's `{}` does
        if key not in parent and len(parent):
            # Comments after the mapping's last entry sit above whatever follows the
            # mapping; the new last entry must not slip in between.
            carried, target = _detach_tail(parent, list(parent)[-1]), _next_entry(chain[:-1])
        elif key in parent and (_is_block(old) or _is_block(new)):
            carried, target = _detach_tail(parent, key), _next_entry(chain)
            entry = _comments(parent).get(key)
            if not _is_block(old) and entry:
                entry[2] = None  # an old scalar's end-of-line comment cannot stay on a bare `key:` line
        parent[key] = new
        _place(self.root, target, carried)

    def remove(self, keys: Sequence[str]) -> bool:
        parent = self._walk(keys[:-1])
        key = keys[-1]
        if parent is None or key not in parent:
            return False
        # ruamel keeps full-line comments on the entry *above* them; deleting that entry
        # would delete the comments written above the next one.
        entry = _comments(parent).get(key) if isinstance(parent, CommentedMap) else None
        carried: list[Any] = [*(entry[1] or []), *_detach_tail(parent, key)] if entry else []
        target = _next_entry(self._chain(keys))
        del parent[key]
        _place(self.root, target, carried)
        return True

    def render(self) -> str:
        out = io.StringIO()
        self.yaml.dump(self.root, out)  # pyright: ignore[reportUnknownMemberType]
        return out.getvalue()


def _to_yaml(value: Any, old: Any) -> Any:
    """A plain value as ruamel nodes, keeping the flow style or quoting of what it replaces."""
    node: Any
    if isinstance(value, Mapping):
        node = CommentedMap((k, _to_yaml(v, None)) for k, v in cast(Mapping[str, Any], value).items())
    elif isinstance(value, list | tuple):
        node = CommentedSeq(_to_yaml(v, None) for v in cast(Sequence[Any], value))
    else:
        quoted = isinstance(old, SingleQuotedScalarString | DoubleQuotedScalarString) and isinstance(value, str)
        return type(old)(value) if quoted else value
    if isinstance(old, CommentedMap | CommentedSeq) and cast(Any, old).fa.flow_style():
        node.fa.set_flow_style()
    return node


def _is_block(value: Any) -> bool:
    return isinstance(value, CommentedMap | CommentedSeq) and len(value) > 0 and not cast(Any, value).fa.flow_style()


def _last_entry(node: Any) -> tuple[dict[Any, list[Any]], Any, int]:
    """Return (ruamel's comment table, last key or index, comment slot) of a non-empty collection.

    A mapping entry keeps the comments after it in slot 2, a sequence item in slot 0."""
    keys: list[Any] = list(node) if isinstance(node, CommentedMap) else []
    return _comments(node), keys[-1] if keys else len(node) - 1, 2 if keys else 0


def _comments(node: Any) -> dict[Any, list[Any]]:
    """Return ruamel's per-entry comment table: key (or index) -> [?, comments above, comments after, ?]."""
    return node.ca.items


def _detach_tail(node: Any, key: Any) -> list[Any]:
    """Cut off the full-line comments after entry `key`, which ruamel files under its last line."""
    value: Any = node[key]
    if _is_block(value):
        return _detach_tail(value, _last_entry(value)[1])
    slot = 2 if isinstance(node, CommentedMap) else 0
    entry = _comments(node).get(key)
    token: Any = entry[slot] if entry else None
    if entry is None or token is None or "\n" not in token.value:
        return []
    head, rest = str(token.value).split("\n", 1)
    if head:
        token.value = head + "\n"
    else:
        entry[slot] = None
    return [CommentToken(rest, CommentMark(0), None)] if rest else []


def _next_entry(chain: list[tuple[Any, str]]) -> tuple[Any, str] | None:
    """The entry that follows the innermost step of `chain` that is not the last of its mapping."""
    for mapping, key in reversed(chain):
        keys: list[str] = list(mapping)
        if key in keys and keys.index(key) + 1 < len(keys):
            return mapping, keys[keys.index(key) + 1]
    return None


def _place(root: Any, target: tuple[Any, str] | None, carried: list[Any]) -> None:
    """Put comments above `target`, or with no target, at the very end of the document."""
    if not carried:
        return
    if target is not None:
        mapping, key = target
        entry = _comments(mapping).setdefault(key, [None, None, None, None])
        entry[1] = carried + list(entry[1] or [])
        return
    node: Any = root
    if not len(node):
        return
    while _is_block(node[_last_entry(node)[1]]):
        node = node[_last_entry(node)[1]]
    comments, last, slot = _last_entry(node)
    entry = comments.setdefault(last, [None, None, None, None])
    text = "".join(str(token.value) for token in carried)
    if entry[slot] is None:
        entry[slot] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        entry[slot].value += text


# TOML: tomlkit, tables laid out the way people write them.


class TomlBackend(MappingBackend):
    """A TOML document in tomlkit, tables laid out the way people write them."""

    def __init__(self, text: str, where: str) -> None:
        del where  # a TOML document is always a table
        self.doc = tomlkit.parse(text)
        self.root = cast(MutableMapping[Any, Any], self.doc)

    def put(self, keys: Sequence[str], value: Any) -> None:
        if self._edit_inline(keys, lambda parent, key: parent.update({key: value}) or True) is not None:
            return
        parent = self._parent_for_put(keys)
        record = parent is not self.root and any(not isinstance(v, Table | AoT) for v in parent.values())
        item = self._convert(value, keys, parent.get(keys[-1]), inline=isinstance(parent, InlineTable), record=record)
        if keys[-1] not in parent:
            # The new entry prints after the body of this table: keep that body's closing
            # comments above the header they belong to.
            owner = _last_table(parent)
            if isinstance(item, Table | AoT) or owner is parent:
                _pin_comments_to_next_header(self.doc, owner)
        if isinstance(item, Table | AoT):
            _end_with_blank_line(item)
        parent[keys[-1]] = item

    def remove(self, keys: Sequence[str]) -> bool:
        removed = self._edit_inline(keys, lambda parent, key: parent.pop(key, None) is not None)
        if removed is not None:
            return removed
        parent = self._walk(keys[:-1])
        if parent is None or keys[-1] not in parent:
            return False
        item = parent[keys[-1]]
        if isinstance(item, Table | AoT):
            _pin_comments_to_next_header(self.doc, _last_table(item), skip=item)
        del parent[keys[-1]]
        # An implicit parent (`mcp_servers` of `[mcp_servers.time]`) prints nothing once
        # empty, so drop it rather than keep a key the file no longer has.
        for depth in range(len(keys) - 2, -1, -1):
            node, holder = self._walk(keys[: depth + 1]), self._walk(keys[:depth])
            if not (isinstance(node, Table) and node.is_super_table() and not node and holder is not None):
                break
            del holder[keys[depth]]
        return True

    def _edit_inline(self, keys: Sequence[str], change: Callable[[dict[str, Any], str], bool]) -> bool | None:
        """Edit inside an inline table by rebuilding it, as tomlkit's own edits mangle its spacing
        (`{  B = "2", C = "3"}`). An inline table holds no comments, so nothing else is lost.
        Returns `change`'s answer, or None when no inline table is on the path."""
        node = self.root
        for depth, key in enumerate(keys[:-1]):
            child = as_mapping(node.get(key))
            if child is None:
                return None
            if isinstance(child, InlineTable):
                flat = cast(dict[str, Any], plain(child))
                inner = flat
                for step, name in enumerate(keys[depth + 1 : -1], start=depth + 1):
                    below = inner.setdefault(name, {})
                    if not isinstance(below, dict):
                        raise path_conflict(keys, step, below)
                    inner = cast(dict[str, Any], below)
                answer = change(inner, keys[-1])
                if answer:
                    node[key] = self._inline_table(flat, keys[: depth + 1])
                return answer
            node = child
        return None

    def render(self) -> str:
        return self.doc.as_string()

    def _convert(self, value: Any, keys: Sequence[str], old: Any, *, inline: bool, record: bool) -> Any:
        if value is None:
            raise ConfigurationError(f"cannot set {'.'.join(keys)} to null: TOML has no null. Delete the key instead.")
        if isinstance(value, Mapping):
            items = cast(Mapping[str, Any], value)
            if inline:
                return self._inline_table(items, keys)
            if record and all(map(_is_flat_value, items.values())):
                candidate = self._inline_table(items, keys)
                if len(f"{keys[-1]} = {candidate.as_string()}") <= INLINE_TABLE_WIDTH:
                    return candidate
            return self._table(items, keys)
        if isinstance(value, list | tuple):
            values = cast(Sequence[Any], value)
            if not inline and _is_table_list(values):
                tables: Any = tomlkit.aot()  # AoT's list methods are untyped
                for entry in values:
                    tables.append(self._table(entry, keys))
                return tables
            array: Any = tomlkit.array()  # Array's list methods are untyped
            array.extend(self._convert(v, keys, None, inline=True, record=False) for v in values)
            if isinstance(old, Array) and "\n" in old.as_string():
                array.multiline(True)
            return array
        if isinstance(old, String) and old.type is StringType.SLL and isinstance(value, str) and "'" not in value:
            return tomlkit.string(value, literal=True)
        return tomlkit.item(value)

    def _inline_table(self, value: Mapping[str, Any], keys: Sequence[str]) -> InlineTable:
        table = tomlkit.inline_table()
        for k, v in value.items():
            table.append(k, self._convert(v, [*keys, k], None, inline=True, record=False))
        if not value:
            return table
        # tomlkit prints new inline tables as `{K = "v"}`; TOML's own docs and Codex's write `{ K = "v" }`.
        spaced = tomlkit.parse(f"x = {{ {table.as_string()[1:-1]} }}\n")["x"]
        return cast(InlineTable, spaced)

    def _table(self, value: Mapping[str, Any], keys: Sequence[str]) -> Table:
        record = not all(isinstance(v, Mapping) or _is_table_list(v) for v in value.values())
        # A table of tables prints no header of its own: `[a.b]`, not an empty `[a]` above it.
        table = tomlkit.table(is_super_table=bool(value) and not record)
        # Plain values first: in TOML they must come above the table's sub-tables.
        for k, v in sorted(value.items(), key=lambda kv: isinstance(kv[1], Mapping) or _is_table_list(kv[1])):
            table.append(k, self._convert(v, [*keys, k], None, inline=False, record=record))
        return table


def _is_table_list(value: Any) -> bool:
    items = cast(Sequence[Any], value) if isinstance(value, list | tuple) else ()
    return bool(items) and all(isinstance(v, Mapping) for v in items)


def _is_flat_value(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return not any(isinstance(v, Mapping | list | tuple) for v in cast(Sequence[Any], value))
    return not isinstance(value, Mapping)


def _tables_of(item: Any) -> list[Table]:
    return list(item.body) if isinstance(item, AoT) else [item] if isinstance(item, Table) else []


def _headers(container: Container) -> Iterator[Table]:
    """Yield the tables in the order they print (super tables included, though they print no header)."""
    for _, item in container.body:
        for table in _tables_of(item):
            yield table
            yield from _headers(table.value)


def _last_table(node: Any) -> Table | None:
    """The table whose body prints last within `node`: `node` itself when it has no sub-tables."""
    if isinstance(node, AoT):
        return _last_table(node.body[-1]) if node.body else None
    body = node.value.body if isinstance(node, Table) else node.body if isinstance(node, Container) else []
    tables = [table for _, item in body for table in _tables_of(item)]
    return _last_table(tables[-1]) if tables else node if isinstance(node, Table) else None


def _pin_comments_to_next_header(doc: Container, owner: Table | None, skip: Table | AoT | None = None) -> None:
    """Move the comments that close `owner`'s body into the indent of the next header.

    tomlkit files a comment written right above `[next]` under the previous table, so an
    entry added to (or a table removed with) that table would take the comment with it.
    Only comments after the body's last blank line move: those touch the header."""
    if owner is None:
        return
    order = list(_headers(doc))
    inside = {id(t) for top in _tables_of(skip) for t in [top, *_headers(top.value)]}
    index = next((i for i, table in enumerate(order) if table is owner), None)
    if index is None:
        return
    header = next((t for t in order[index + 1 :] if id(t) not in inside and not t.is_super_table()), None)
    body = owner.value.body
    start = len(body)
    while start and body[start - 1][0] is None and isinstance(body[start - 1][1], Comment | Whitespace):
        start -= 1
    blanks = [i for i in range(start, len(body)) if isinstance(body[i][1], Whitespace)]
    cut = blanks[-1] + 1 if blanks else start
    if header is None or not any(isinstance(item, Comment) for _, item in body[cut:]):
        return
    header.trivia.indent = "".join(item.as_string() for _, item in body[cut:]) + header.trivia.indent
    del body[cut:]


def _end_with_blank_line(item: Table | AoT) -> None:
    """End a new table's last block with a blank line, so a table header after it is set apart."""
    if isinstance(item, AoT):
        if item.body:
            _end_with_blank_line(item.body[-1])
        return
    body = item.value.body
    last = body[-1][1] if body else None
    if isinstance(last, Table | AoT):
        _end_with_blank_line(last)
    else:
        item.add(tomlkit.nl())
