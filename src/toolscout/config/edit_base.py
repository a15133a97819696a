"""What the editing backends share: their protocol, the errors for a key path they cannot set, and
walking plain mappings by key path (YAML and TOML)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Protocol, cast

from ruamel.yaml.scalarbool import ScalarBoolean
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import Item

from toolscout.errors import ConfigurationError

INLINE_TABLE_WIDTH = 80


def describe(value: Any) -> str:
    """A few words for the kind of a plain value, for error messages."""
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
    def lookup(self, keys: Sequence[str]) -> tuple[bool, Any]: ...
    def put(self, keys: Sequence[str], value: Any) -> None: ...
    def remove(self, keys: Sequence[str]) -> bool: ...
    def render(self) -> str: ...
    def whole(self) -> dict[str, Any]: ...


def as_mapping(value: Any) -> MutableMapping[Any, Any] | None:
    return cast(MutableMapping[Any, Any], value) if isinstance(value, MutableMapping) else None


def plain(value: Any) -> Any:
    """ruamel and tomlkit values down to dict/list/str/int/float/bool/None (dates as ISO text)."""
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
    """Equal and of the same types, so `1` never counts as `True` or `1.0`."""
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
