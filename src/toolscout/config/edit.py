"""The configuration file as a document edited in place, keeping its comments and layout.

The CLI edits files people wrote by hand: toolscout's own config and the MCP client
configs (Claude Desktop, Cursor, VS Code JSONC, Codex TOML, YAML). A `ConfigDocument`
changes only what it is asked to, writes atomically with a backup, and refuses to
overwrite a file that changed under it.

- JSON/JSONC: text splices (`toolscout.config.editors.JsoncEditor`) over the spans the JSONC parser
  records (`toolscout.config.formats`).
- YAML: ruamel.yaml round-trip mode (YAML 1.2), indentation guessed from the file.
- TOML: tomlkit. A mapping set at the top level, or one holding other mappings, becomes a
  `[table]` (a header-less super table when it holds only tables). A flat mapping beside
  plain values (`env` next to `command`) becomes an inline table when its line fits in 80
  columns, the way Codex documents `env = { KEY = "v" }`: the server stays one block.
  Longer or nested ones become sub-tables, since TOML inline tables cannot span lines.

Both libraries file a full-line comment under the entry *above* it, so a plain edit would
carry a comment away from the key or header it introduces; the backends move such comments
back where they belong.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import secrets
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from tomlkit.exceptions import ParseError

from toolscout.config.editors import Backend, JsoncEditor, TomlBackend, YamlBackend, describe, same
from toolscout.config.formats import JsoncSyntaxError
from toolscout.errors import ConfigurationError

Format = Literal["json", "yaml", "toml"]


def _format_for(path: Path) -> Format:
    suffix = path.suffix.lower()
    return "yaml" if suffix in (".yaml", ".yml") else "toml" if suffix == ".toml" else "json"


def _key_path(keys: Sequence[str]) -> list[str]:
    if isinstance(keys, str):
        raise TypeError(f"keys must be a sequence of strings such as [{keys!r}], not a string")
    path = list(keys)
    if not path or not all(isinstance(k, str) for k in cast(list[Any], path)):
        raise ValueError(f"keys must be a non-empty sequence of strings, got {path!r}")
    return path


def _create_exclusive(path: Path, content: bytes, mode: int) -> None:
    """Create `path` (never an existing file) holding `content`; on any failure, leave nothing behind."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; not every platform lets a directory be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class ConfigDocument:
    """One configuration file, edited in place: only what is set or deleted changes."""

    path: Path
    format: Format

    def __init__(self, path: Path, text: str, snapshot: bytes | None) -> None:
        """Use `load`, `new` or `load_or_new`; `snapshot` is the file's bytes as read (None: no file)."""
        self.path = path
        self.format = _format_for(path)
        self._text = text
        self._snapshot = snapshot
        self._dirty = False
        self._bom = "\ufeff" if text.startswith("\ufeff") else ""
        body = text[len(self._bom) :]
        # ruamel and tomlkit write "\n" and end files their own way; JSON splices need neither fix.
        self._crlf = self.format != "json" and "\r\n" in body
        if self.format != "json":
            body = body.replace("\r\n", "\n")
        self._trailing = len(body) - len(body.rstrip("\n")) if body.strip() else 1
        self._backend = self._parse(body)

    def _parse(self, body: str) -> Backend:
        where = str(self.path)
        try:
            if self.format == "json":
                editor = JsoncEditor(body)
                if editor.root is not None and editor.root.members is None:
                    found = describe(editor.root.plain())
                    raise ConfigurationError(f"{where}: the top level must be an object ({{...}}), found {found}.")
                return editor
            return YamlBackend(body, where) if self.format == "yaml" else TomlBackend(body, where)
        except JsoncSyntaxError as exc:
            line, column, reason = exc.line, exc.column, exc.reason
        except MarkedYAMLError as exc:
            error = cast(Any, exc)
            mark = error.problem_mark or error.context_mark
            line, column = (int(mark.line) + 1, int(mark.column) + 1) if mark is not None else (0, 0)
            reason = str(error.problem or error.context or "invalid YAML")
        except YAMLError as exc:
            line, column, reason = 0, 0, str(exc)
        except ParseError as exc:
            line, column, reason = exc.line, exc.col + 1, str(exc).split(" at line ")[0]
        place = f" at line {line}, column {column}" if line else ""
        raise ConfigurationError(
            f"{where}: invalid {self.format.upper()}{place}: {reason}. "
            "Fix the file (or restore a backup) and run the command again."
        )

    @classmethod
    def load(cls, path: Path) -> ConfigDocument:
        """Read and parse `path`; missing, unreadable, non-UTF-8 or malformed files raise ConfigurationError."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ConfigurationError(f"{path} does not exist. Check the path, or create the file first.") from None
        except IsADirectoryError:
            raise ConfigurationError(
                f"{path} is a directory, not a configuration file. Pass the file inside it."
            ) from None
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read {path}: {exc.strerror or exc}. Check its permissions and retry."
            ) from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise ConfigurationError(
                f"{path} is not UTF-8 text (invalid byte on line {line}, byte offset {exc.start}). "
                "Save it as UTF-8 and run the command again."
            ) from None
        return cls(path, text, raw)

    @classmethod
    def new(cls, path: Path) -> ConfigDocument:
        """An empty mapping for a file that does not exist yet; `save()` creates it."""
        path = Path(path)
        return cls(path, "{}\n" if _format_for(path) == "json" else "", None)

    @classmethod
    def load_or_new(cls, path: Path) -> ConfigDocument:
        """Return `load(path)` if the file exists, else `new(path)`."""
        path = Path(path)
        return cls.load(path) if path.exists() else cls.new(path)

    def rewritten(self, text: str) -> ConfigDocument:
        """Return this file with `text` as its whole content instead: saved byte for byte over what was read
        (so a file that changed on disk since is still refused)."""
        return ConfigDocument(self.path, text, self._snapshot)

    @property
    def raw(self) -> bytes | None:
        """The file's bytes as read (None: it did not exist)."""
        return self._snapshot

    def data(self) -> dict[str, Any]:
        """The whole document as plain Python values."""
        return self._backend.whole()

    def get(self, keys: Sequence[str]) -> Any:
        """The plain value at the key path, or None when any part of it is absent."""
        return self._backend.lookup(_key_path(keys))[1]

    def set(self, keys: Sequence[str], value: Any) -> None:
        """Set the key path to a plain value, creating missing parent mappings.

        A mapping set over a mapping changes only the keys that differ (and removes the
        ones it lacks), so comments and layout inside the unchanged parts survive.
        """
        self._assign(_key_path(keys), value)

    def _assign(self, keys: list[str], value: Any) -> None:
        # Missing parents are created by nesting the value under the first missing key:
        # one insertion, placed and formatted like any other new entry.
        for depth in range(1, len(keys)):
            found, current = self._backend.lookup(keys[:depth])
            if not found:
                for key in reversed(keys[depth:]):
                    value = {key: value}
                keys = keys[:depth]
                break
            if not isinstance(current, dict):
                break  # the backend names the conflict
        found, current = self._backend.lookup(keys)
        if found and isinstance(value, Mapping) and isinstance(current, dict):
            new, old = cast(Mapping[str, Any], value), cast(dict[str, Any], current)
            for key in [k for k in old if k not in new]:
                self._dirty |= self._backend.remove([*keys, key])
            for key, item in new.items():
                if key not in old or not same(old[key], item):
                    self._assign([*keys, key], item)
        elif not (found and same(current, value)):
            self._backend.put(keys, value)
            self._dirty = True

    def delete(self, keys: Sequence[str]) -> bool:
        """Remove the key at the path; False if it was not there."""
        removed = self._backend.remove(_key_path(keys))
        self._dirty |= removed
        return removed

    def text(self) -> str:
        """The document as `save()` would write it; untouched, exactly the text read."""
        if not self._dirty:
            return self._text
        body = self._backend.render()
        if self.format != "json" and body.strip():
            body = body.rstrip("\n") + "\n" * self._trailing
            body = body.replace("\n", "\r\n") if self._crlf else body
        return self._bom + body

    def _check_unchanged(self, target: Path) -> None:
        try:
            current = target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            current = None
        except OSError as exc:
            raise ConfigurationError(f"cannot read {self.path}: {exc.strerror or exc}. Check its permissions.") from exc
        if current != self._snapshot:
            raise ConfigurationError(f"{self.path} changed on disk since it was read; run the command again.")

    def save(self, *, backup: bool = True) -> Path | None:
        """Write atomically (temp file, fsync, rename); returns the backup of the old content, if made.

        A document that would be written as it was read is not written at all, and gets no backup;
        nor does content that one of the file's backups already holds (a round trip of edits)."""
        text = self.text()
        content = text.encode("utf-8")
        if content == self._snapshot:
            self._dirty = False
            return None
        # Write through a symlink (dotfile managers) rather than replace the link with a file.
        target = Path(os.path.realpath(self.path))
        self._check_unchanged(target)
        temp: Path | None = None
        backup_path: Path | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            previous = target.stat() if self._snapshot is not None else None
            candidate = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
            # New files get the usual 0o666 & ~umask; an existing file's mode is copied once the
            # content is in, so a file holding secrets is never briefly more readable.
            _create_exclusive(candidate, content, 0o666 if previous is None else 0o600)
            temp = candidate
            if previous is not None:
                _copy_access(temp, previous)
                if backup and self._snapshot is not None:
                    backup_path = self._write_backup(target, self._snapshot, previous)
            self._check_unchanged(target)
            os.replace(temp, target)
            temp = None
            _fsync_directory(target.parent)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot write {self.path}: {exc.strerror or exc}. "
                "Check that its directory exists and is writable, then run the command again."
            ) from exc
        finally:
            if temp is not None:
                with contextlib.suppress(OSError):
                    temp.unlink()
        self._text, self._snapshot, self._dirty = text, content, False
        return backup_path

    @staticmethod
    def _write_backup(target: Path, previous: bytes, access: os.stat_result) -> Path:
        kept = _backup_holding(target, previous)
        if kept is not None:
            return kept
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for counter in itertools.count():
            candidate = target.with_name(f"{target.name}.{stamp}{f'-{counter}' if counter else ''}.bak")
            try:
                _create_exclusive(candidate, previous, 0o600)
            except FileExistsError:
                continue
            _copy_access(candidate, access)  # no more readable than the file it backs up
            return candidate
        raise AssertionError("unreachable")


MAX_BACKUPS_COMPARED = 50
"""How many of a file's newest backups are compared with the content about to be backed up."""


def _backup_holding(target: Path, content: bytes) -> Path | None:
    """The newest backup of `target` that holds exactly `content`, if any (among the latest few)."""
    backups = sorted(target.parent.glob(f"{glob.escape(target.name)}.*.bak"), reverse=True)
    for path in backups[:MAX_BACKUPS_COMPARED]:
        with contextlib.suppress(OSError):
            if path.stat().st_size == len(content) and path.read_bytes() == content:
                return path
    return None


def _copy_access(path: Path, access: os.stat_result) -> None:
    os.chmod(path, stat.S_IMODE(access.st_mode))
    if hasattr(os, "chown"):
        # Run under sudo, leave the user's file owned by the user (only root can do this).
        with contextlib.suppress(OSError):
            os.chown(path, access.st_uid, access.st_gid)
