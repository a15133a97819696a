"""TOML editing for `ConfigDocument`: tomlkit, tables laid out the way people write them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, cast

import tomlkit
from tomlkit.container import Container
from tomlkit.items import AoT, Array, Comment, InlineTable, String, StringType, Table, Whitespace

from toolscout.config.edit_base import INLINE_TABLE_WIDTH, MappingBackend, as_mapping, path_conflict, plain
from toolscout.errors import ConfigurationError


class TomlBackend(MappingBackend):
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
    """Tables in the order they print (super tables included, though they print no header)."""
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
