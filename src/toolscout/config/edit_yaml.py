"""YAML editing for `ConfigDocument`: ruamel.yaml round-trip mode, comments kept where they belong."""

from __future__ import annotations

import io
import itertools
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, cast

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from toolscout.config.edit_base import MappingBackend, describe, plain
from toolscout.errors import ConfigurationError


def _guess_yaml_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) for ruamel's `indent()`, read off the first nested lines."""
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
        """(mapping, key) for each step of the path, as far as the mappings go."""
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
    """(ruamel's comment table, last key or index, comment slot) of a non-empty collection.

    A mapping entry keeps the comments after it in slot 2, a sequence item in slot 0."""
    keys: list[Any] = list(node) if isinstance(node, CommentedMap) else []
    return _comments(node), keys[-1] if keys else len(node) - 1, 2 if keys else 0


def _comments(node: Any) -> dict[Any, list[Any]]:
    """ruamel's per-entry comment table: key (or index) -> [?, comments above, comments after, ?]."""
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
