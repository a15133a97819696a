"""Tool definitions pinned on first sight (`toolPinning`): the defence against a server that changes a
tool's description or schema after it was trusted (a "rug pull", tool poisoning).

Trust on first use: each tool's definition is pinned with its hash when the gateway first sees it,
kept with the persistent catalog (in memory for the process when that is off). A later definition
that differs is logged (a warning) and audited with a readable diff, once per new definition;
under `quarantine` the tool is also neither listed, found nor run (`Catalog.admit` raises
`TOOL_QUARANTINED`) until a person approves it with `toolscout pins approve`, which a running
gateway takes up within `POLL_SECONDS` (the store's version), lifting the quarantine and telling
clients their lists changed. A server that goes back to the pinned definition is trusted again. A
description that reads as instructions to the model (gateway/poisoning.py) is flagged in the log
and kept with the pin, for `toolscout pins list`.

The verdict (`quarantined`) is asked by the catalog for every tool it is given, on the event loop:
a definition is hashed again only when it differs from the one last hashed for that tool. Reading a
definition for instructions costs far more than hashing it (a whole catalog's worth would hold the
event loop for seconds at start), and decides no verdict, so it is done in a worker thread by the
background task, which then logs, keeps and audits what it found.

The module holds, in this order: `ToolPins`, the policy above; a tool's definition as it is
pinned, its hash and what changed between two of them; and the stores that keep the pins.

The definition is what the model is shown and what a call must satisfy: name, title,
description, input and output schema, annotations (not `_meta`, which carries hints for
clients). Its hash is SHA-256 over canonical JSON (keys sorted, no spaces, UTF-8), so the same
definition hashes the same whatever order its server wrote it in.

Pins are kept beside the persistent catalog (SQLite), and in Redis too when the replicas share a
registry there, so that every replica judges a tool by the same pin. A pin is a tool's definition
as first seen (or last approved) and its hash; beside it, the definition seen since when it
differs (`Seen`), until a person approves it or the server goes back to the pinned one. The store
counts approvals and resets in a version, which a running gateway reads every second (`version()`,
one small query) to take them up without a restart. New pins never replace stored ones (`INSERT OR
IGNORE`, `HSETNX`): a gateway that could not read the store in time at start cannot overwrite what
was approved. As the catalog store, a pin store never raises for its backend: failures are logged
and cost only what was to be written or read.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

import anyio
import mcp_types as types

from toolscout.config.models import GatewayConfig, ToolPinning
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.poisoning import instructions_in
from toolscout.gateway.store import CatalogStore, store_path
from toolscout.schemas import canonical_json

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often a running gateway looks at the store's version for approvals and resets made elsewhere."""
LOAD_BUDGET_SECONDS = 2.0
"""How long start-up waits for the stored pins (after that they are read in the background, and win)."""


class ToolPins:
    """The pins of one gateway: judged in memory, kept in `store` (None: for this process only)."""

    def __init__(self, mode: ToolPinning = "quarantine", store: PinStore | None = None) -> None:
        self.mode: ToolPinning = mode
        self.store = store
        self.audit: AuditLog | None = None
        """Where changes are recorded (the gateway's audit log)."""
        self.on_changed: Callable[[], None] = lambda: None
        """Called when pins were approved or reset elsewhere: the catalog judges its tools again."""
        self._pins: dict[PinKey, Pin] = {}
        self._hashed: dict[PinKey, tuple[types.Tool, str]] = {}
        """Each tool's definition hash, by the tool object it was taken from. The definition itself is
        not kept: it is one more copy of every schema, and is needed only for a new or changed tool."""
        self._unsaved: dict[PinKey, Pin] = {}
        self._events: list[tuple[Pin, str, dict[str, Any]]] = []
        self._unexamined: dict[tuple[PinKey, str], types.Tool] = {}
        """Definitions (by tool and hash) not yet read for instructions to the model."""
        self._version: int | None = None if store is not None else 0
        """The store's version the pins were read at; None until they were read."""
        self._wanted = anyio.Event()
        self._closing = False

    @classmethod
    def from_config(cls, config: GatewayConfig) -> ToolPins:
        """Pins as `toolPinning` says, kept beside the persistent catalog unless `catalogCache` is off."""
        keep = config.catalog_cache.enabled and config.tool_pinning != "off"
        return cls(config.tool_pinning, pin_store(config) if keep else None)

    def pins(self) -> list[Pin]:
        """Every pin this gateway knows, with what was seen since where it differs."""
        return list(self._pins.values())

    def approve(self, pins: Iterable[Pin]) -> list[Pin]:
        """Approve what was seen of `pins` (those that differ from their pin) in this gateway at once: kept
        in the store when there is one (as `toolscout pins approve` does), and every tool judged again."""
        approved = [pin.approved() for pin in pins if pin.seen is not None]
        if not approved:
            return []
        if self.store is not None:
            self.store.save(approved, replace_existing=True)
        for pin in approved:
            self._pins[pin.key] = pin
            self._hashed.pop(pin.key, None)
        self.on_changed()
        return approved

    # The verdict (Catalog's)

    def quarantined(self, server: str, tool: types.Tool) -> bool:
        """Whether `server`'s `tool` is to be kept from lists, searches and calls; pins it when new, and
        reports a definition that differs from its pin the first time it is seen."""
        if self.mode == "off":
            return False
        key = (server, tool.name)
        hashed = self._hashed.get(key)
        document: str | None = None
        if hashed is None or (hashed[0] is not tool and hashed[0] != tool):
            document = document_of(tool)
            hashed = self._hashed[key] = (tool, digest_of(document))
        current = hashed[1]
        pin = self._pins.get(key)
        if pin is None:
            self._unexamined[(key, current)] = tool
            self._keep(Pin(server, tool.name, current, document or document_of(tool), time.time()))
            return False
        if pin.hash == current:
            if pin.seen is not None:  # back to what was approved
                logger.info("tool %r on %r is back to its pinned definition", tool.name, server)
                self._keep(replace(pin, seen=None))
            return False
        if pin.seen is None or pin.seen.hash != current:
            self._unexamined[(key, current)] = tool
            self._changed(pin, tool, Seen(current, document or document_of(tool), time.time()))
        return self.mode == "quarantine"

    def _changed(self, pin: Pin, tool: types.Tool, seen: Seen) -> None:
        pin = self._keep(replace(pin, seen=seen))
        found = changes(pin.definition, seen.definition)
        outcome = "quarantined" if self.mode == "quarantine" else "changed"
        logger.warning(
            "tool %r on %r changed since it was pinned (%s); %s. Review: toolscout pins diff %s/%s",
            tool.name,
            pin.server,
            summary(found),
            "quarantined until approved" if outcome == "quarantined" else "still usable (toolPinning: warn)",
            pin.server,
            tool.name,
        )
        self._events.append((pin, outcome, {"approvedHash": pin.hash, "currentHash": seen.hash, "diff": found}))

    def _keep(self, pin: Pin) -> Pin:
        self._pins[pin.key] = self._unsaved[pin.key] = pin
        self._wanted.set()
        return pin

    # The store

    async def load(self) -> None:
        """Read the stored pins before any tool is judged (given up on after `LOAD_BUDGET_SECONDS`:
        `follow` reads them later, and they win over what was pinned meanwhile)."""
        if self.store is not None and self.mode != "off":
            with anyio.move_on_after(LOAD_BUDGET_SECONDS):
                await self._read()
            if self._version is None:
                logger.warning("tool pins not read within %gs; read in the background", LOAD_BUDGET_SECONDS)

    async def _read(self) -> bool:
        """Take up the store's pins if its version moved (or was never read); whether they changed."""
        store = self.store
        assert store is not None
        version = await anyio.to_thread.run_sync(store.version, abandon_on_cancel=True)
        if version is None or version == self._version:
            return False
        stored = await anyio.to_thread.run_sync(store.load, abandon_on_cancel=True)
        if stored is None:
            return False
        self._pins = {**{key: pin for key, pin in self._pins.items() if key in self._unsaved}, **stored}
        self._version = version
        return True

    async def follow(self) -> None:
        """Save new pins, audit changes, and take up approvals and resets made elsewhere, until `close()`
        (a task of the gateway's)."""
        if self.mode == "off":
            return
        while True:
            with anyio.move_on_after(POLL_SECONDS):
                await self._wanted.wait()
            self._wanted = anyio.Event()
            await self._flush()
            if self._closing:
                return
            if self.store is not None and await self._read():
                logger.info("tool pins changed in the store (approved or reset): tools judged again")
                self.on_changed()

    async def _examine(self) -> None:
        """Read the definitions seen since last time for instructions to the model (in a worker thread),
        and keep what was found with their pins."""
        pending, self._unexamined = self._unexamined, {}
        if not pending:
            return
        found = await anyio.to_thread.run_sync(lambda: [(k, instructions_in(t)) for k, t in pending.items()])
        for (key, hashed), reasons in found:
            pin = self._pins.get(key)
            if not reasons or pin is None:
                continue
            if pin.hash == hashed:
                self._keep(replace(pin, reasons=reasons))
            elif pin.seen is not None and pin.seen.hash == hashed:
                self._keep(replace(pin, seen=replace(pin.seen, reasons=reasons)))
            else:
                continue  # changed again since: its new definition is examined in turn
            logger.warning("tool %r on %r reads as instructions to the model: %s", key[1], key[0], "; ".join(reasons))

    async def _flush(self) -> None:
        await self._examine()
        events, self._events = self._events, []
        for pin, outcome, change in events:
            now = self._pins.get(pin.key)
            seen = now.seen if now is not None else None
            if seen is not None and seen.hash == change["currentHash"] and seen.reasons:
                change = {**change, "flagged": list(seen.reasons)}
            if self.audit is not None:
                await self.audit.record_change(server=pin.server, tool=pin.tool, outcome=outcome, change=change)
        if self.store is None or not self._unsaved:
            return
        batch, self._unsaved = list(self._unsaved.values()), {}
        try:
            await anyio.to_thread.run_sync(self.store.save, batch)
        except Exception as exc:  # a store must never stop the gateway
            logger.warning("tool pins not saved: %s", exc)

    def close(self) -> None:
        """Have `follow` write what is left and return."""
        self._closing = True
        self._wanted.set()


def status_of(pin: Pin, mode: ToolPinning) -> str:
    """Return the pin's status: `ok`, `changed` (seen differing, usable) or `quarantined`."""
    if pin.seen is None:
        return "ok"
    return "quarantined" if mode == "quarantine" else "changed"


def lockfile(pins: Mapping[PinKey, Pin]) -> dict[str, Any]:
    """The approved pins as a lockfile: sorted, one entry per tool with its hash."""
    tools = [{"server": s, "tool": t, "sha256": pins[(s, t)].hash} for s, t in sorted(pins)]
    return {
        "version": 1,
        "algorithm": "sha256 of canonical JSON (name, title, description, schemas, annotations)",
        "tools": tools,
    }


PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
MAX_CHANGES = 50
"""Schema changes shown per tool (a rewritten schema says the rest in one line)."""
MAX_VALUE_CHARS = 200
MAX_DIFF_LINES = 80


def definition_of(tool: types.Tool) -> dict[str, Any]:
    """The parts of `tool` that are pinned, as JSON."""
    dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {name: dumped[name] for name in PINNED_FIELDS if name in dumped}


def document_of(tool: types.Tool) -> str:
    """The pinned parts of `tool` as one canonical JSON text (what its hash is taken of)."""
    return canonical_json(definition_of(tool)).decode("utf-8")


def digest_of(document: str) -> str:
    """The SHA-256 of a canonical JSON text (`document_of`), in hex: a pin's hash."""
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def changes(approved: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """What differs from `approved` in `current`: the description as a unified diff (lines), and
    every other change by JSON path (`$.inputSchema.properties.path.type`) with its values before
    and after (`null`: absent)."""
    found: dict[str, Any] = {}
    before, after = approved.get("description") or "", current.get("description") or ""
    if before != after:
        lines = difflib.unified_diff(before.splitlines(), after.splitlines(), "approved", "current", lineterm="", n=1)
        found["description"] = _capped([*lines][2:], MAX_DIFF_LINES)  # (the two file-name lines say nothing)
    paths: list[dict[str, Any]] = []
    for name in PINNED_FIELDS:
        if name != "description":
            _walk(f"$.{name}", approved.get(name), current.get(name), paths)
    if paths:
        found["changes"] = paths[:MAX_CHANGES]
        if len(paths) > MAX_CHANGES:
            found["more"] = len(paths) - MAX_CHANGES
    return found


def _walk(path: str, before: Any, after: Any, found: list[dict[str, Any]]) -> None:
    if before == after or len(found) > MAX_CHANGES:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        old, new = cast(dict[str, Any], before), cast(dict[str, Any], after)
        for key in sorted({*old, *new}):
            _walk(
                f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]",
                old.get(key),
                new.get(key),
                found,
            )
        return
    if isinstance(before, list) and isinstance(after, list):
        old_items, new_items = cast(list[Any], before), cast(list[Any], after)
        if len(old_items) == len(new_items):
            for i, (a, b) in enumerate(zip(old_items, new_items, strict=True)):
                _walk(f"{path}[{i}]", a, b, found)
            return
    found.append({"path": path, "before": _shown(before), "after": _shown(after)})


def _shown(value: Any) -> Any:
    """Return `value`, or its JSON cut short when long (a diff is for reading, the pin keeps the whole)."""
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _capped(lines: list[str], limit: int) -> list[str]:
    return lines if len(lines) <= limit else [*lines[:limit], f"… {len(lines) - limit} more lines"]


def diff_lines(found: dict[str, Any]) -> list[str]:
    """Return what `changes()` found as lines for a terminal or a log."""
    lines: list[str] = []
    if "description" in found:
        lines.append("description:")
        lines.extend(f"  {line}" for line in found["description"])
    for change in found.get("changes", ()):
        before, after = change["before"], change["after"]
        if before is None:
            lines.append(f"{change['path']}: added {json.dumps(after, ensure_ascii=False)}")
        elif after is None:
            lines.append(f"{change['path']}: removed (was {json.dumps(before, ensure_ascii=False)})")
        else:
            lines.append(
                f"{change['path']}: {json.dumps(before, ensure_ascii=False)} → {json.dumps(after, ensure_ascii=False)}"
            )
    if found.get("more"):
        lines.append(f"… and {found['more']} more changes")
    return lines


def summary(found: dict[str, Any]) -> str:
    """One line naming what changed (for the log): `description, $.inputSchema.properties.x`."""
    parts = (["description"] if "description" in found else []) + [c["path"] for c in found.get("changes", ())]
    text = ", ".join(parts[:6])
    return text + (f" and {len(parts) - 6 + int(found.get('more', 0))} more" if len(parts) > 6 else "")


PinKey = tuple[str, str]
"""(server, tool)."""

_BUMP = "INSERT INTO pin_version_v1 (id, version) VALUES (0, 1) ON CONFLICT(id) DO UPDATE SET version = version + 1"


@dataclass(frozen=True)
class Seen:
    """A definition of the tool that differs from its pin, as last seen."""

    hash: str
    document: str
    """The definition as canonical JSON text (`definition` reads it)."""
    at: float
    reasons: tuple[str, ...] = ()

    @property
    def definition(self) -> dict[str, Any]:
        return cast(dict[str, Any], json.loads(self.document))


@dataclass(frozen=True)
class Pin:
    """A tool's approved definition (as first seen, or as last approved) and what differs from it now."""

    server: str
    tool: str
    hash: str
    document: str
    """The approved definition as canonical JSON text: a gateway holds a pin for every tool it has
    seen, and the text takes a fraction of the memory of the same definition as dicts (the dicts
    are made by `definition` when a change is shown)."""
    pinned_at: float
    reasons: tuple[str, ...] = ()
    """Why its description reads as instructions to the model (gateway/poisoning.py); empty when clean."""
    seen: Seen | None = field(default=None)

    @property
    def key(self) -> PinKey:
        return (self.server, self.tool)

    @property
    def definition(self) -> dict[str, Any]:
        return cast(dict[str, Any], json.loads(self.document))

    def approved(self) -> Pin:
        """This pin with what was seen since as the approved definition."""
        if self.seen is None:
            return self
        s = self.seen
        return replace(self, hash=s.hash, document=s.document, pinned_at=time.time(), reasons=s.reasons, seen=None)

    def to_json(self) -> str:
        seen = self.seen
        record: dict[str, Any] = {
            "hash": self.hash,
            "definition": self.definition,
            "pinnedAt": self.pinned_at,
            "reasons": list(self.reasons),
        }
        if seen is not None:
            record["seen"] = {
                "hash": seen.hash,
                "definition": seen.definition,
                "at": seen.at,
                "reasons": list(seen.reasons),
            }
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, server: str, tool: str, text: str) -> Pin | None:
        """The pin a stored record holds; None (and a warning) when it cannot be read."""
        try:
            raw = cast(dict[str, Any], json.loads(text))
            seen = cast(dict[str, Any] | None, raw.get("seen"))
            return cls(
                server,
                tool,
                str(raw["hash"]),
                _document(raw["definition"]),
                float(raw["pinnedAt"]),
                tuple(str(r) for r in raw.get("reasons", ())),
                Seen(
                    str(seen["hash"]), _document(seen["definition"]), float(seen["at"]), tuple(seen.get("reasons", ()))
                )
                if seen is not None
                else None,
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            logger.warning("tool pins: ignoring the unreadable pin of %s on %s: %s", tool, server, exc)
            return None


def _document(definition: Any) -> str:
    """A stored definition (a JSON object) as canonical JSON text."""
    return canonical_json(dict(definition)).decode("utf-8")


class PinStore(Protocol):
    """Where pins are kept between runs. Called from worker threads; never raises for its backend."""

    path: Path
    """The local file (what the command line shows)."""

    def version(self) -> int | None:
        """How many approvals and resets the store has seen (None: it cannot be read now)."""
        ...

    def load(self) -> dict[PinKey, Pin] | None:
        """Every pin (None: the store cannot be read now)."""
        ...

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        """Keep `pins`: new ones never replace a stored pin, only what was seen since is updated
        (`replace_existing`: the pins replace the stored ones, and the version grows: an approval)."""
        ...

    def reset(self) -> int:
        """Forget every pin (each tool is pinned again when next seen); how many there were."""
        ...


class SqlitePins:
    """Pins in the persistent catalog's SQLite file."""

    def __init__(self, catalog: CatalogStore) -> None:
        self.path = catalog.path
        self._catalog = catalog

    def version(self) -> int | None:
        def read(db: sqlite3.Connection) -> int | None:
            row = db.execute("SELECT version FROM pin_version_v1").fetchone()
            return int(row[0]) if row is not None else 0

        return self._catalog.run("read pins of", read, None)

    def load(self) -> dict[PinKey, Pin] | None:
        def read(db: sqlite3.Connection) -> dict[PinKey, Pin]:
            rows = db.execute("SELECT server, tool, record FROM tool_pins_v1").fetchall()
            pins = (Pin.from_json(str(r[0]), str(r[1]), str(r[2])) for r in rows)
            return {pin.key: pin for pin in pins if pin is not None}

        return self._catalog.run("read pins of", read, None)

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        def write(db: sqlite3.Connection) -> None:
            with db:
                for pin in pins:
                    row = (pin.server, pin.tool, pin.to_json())
                    if replace_existing:
                        db.execute("INSERT OR REPLACE INTO tool_pins_v1 (server, tool, record) VALUES (?, ?, ?)", row)
                        continue
                    stored = db.execute(
                        "SELECT record FROM tool_pins_v1 WHERE server = ? AND tool = ?", (pin.server, pin.tool)
                    ).fetchone()
                    if stored is None:
                        db.execute("INSERT INTO tool_pins_v1 (server, tool, record) VALUES (?, ?, ?)", row)
                        continue
                    kept = Pin.from_json(pin.server, pin.tool, str(stored[0]))
                    if kept is not None and kept.hash == pin.hash:  # only what was seen since is ours to write
                        db.execute(
                            "UPDATE tool_pins_v1 SET record = ? WHERE server = ? AND tool = ?",
                            (replace(kept, seen=pin.seen).to_json(), pin.server, pin.tool),
                        )
                if replace_existing:
                    db.execute(_BUMP)

        if pins:
            self._catalog.run("write pins to", write, None)

    def reset(self) -> int:
        def delete(db: sqlite3.Connection) -> int:
            with db:
                gone = db.execute("DELETE FROM tool_pins_v1").rowcount
                db.execute(_BUMP)
                return gone

        return self._catalog.run("reset pins in", delete, 0)


class SharedPins:
    """Pins in Redis for every replica (a hash of `server\\0tool` → the pin's JSON, and a version
    counter), and in `local` for this machine's command line; Redis down: the local file answers."""

    def __init__(self, url: str, *, prefix: str, local: SqlitePins) -> None:
        import redis
        import redis.exceptions

        from toolscout.registry.redis import COMMAND_TIMEOUT, CONNECT_TIMEOUT, redis_address

        self.where = redis_address(url)
        self.path = local.path
        self.local = local
        self._pins_key, self._version_key = f"{prefix}pins", f"{prefix}pins:version"
        self._redis: redis.Redis = redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=COMMAND_TIMEOUT
        )
        self._failures = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

    def version(self) -> int | None:
        try:
            return int(cast(str | None, self._redis.get(self._version_key)) or 0)
        except self._failures:
            # The local file's counter, another one than Redis's: a switch between them at most reads the
            # pins again for nothing, and without it a gateway started while Redis is away reads none.
            return self.local.version()

    def load(self) -> dict[PinKey, Pin] | None:
        try:
            raw = cast(Mapping[str, str], self._redis.hgetall(self._pins_key))  # pyright: ignore[reportUnknownMemberType]
        except self._failures as exc:
            logger.warning("tool pins: Redis at %s unreachable, the local file answers: %s", self.where, exc)
            return self.local.load()
        found: dict[PinKey, Pin] = {}
        for name, text in raw.items():
            server, _, tool = name.partition("\0")
            pin = Pin.from_json(server, tool, text)
            if pin is not None:
                found[pin.key] = pin
        return found

    def save(self, pins: Sequence[Pin], *, replace_existing: bool = False) -> None:
        self.local.save(pins, replace_existing=replace_existing)
        try:
            for pin in pins:
                name = f"{pin.server}\0{pin.tool}"
                if replace_existing:
                    self._redis.hset(self._pins_key, name, pin.to_json())  # pyright: ignore[reportUnknownMemberType]
                elif not self._redis.hsetnx(self._pins_key, name, pin.to_json()):  # pyright: ignore[reportUnknownMemberType]
                    stored = cast(str | None, self._redis.hget(self._pins_key, name))  # pyright: ignore[reportUnknownMemberType]
                    kept = Pin.from_json(pin.server, pin.tool, stored) if stored is not None else None
                    if kept is not None and kept.hash == pin.hash:
                        self._redis.hset(self._pins_key, name, replace(kept, seen=pin.seen).to_json())  # pyright: ignore[reportUnknownMemberType]
            if replace_existing and pins:
                self._redis.incr(self._version_key)
        except self._failures as exc:
            logger.warning("tool pins: not written to Redis at %s: %s", self.where, exc)

    def reset(self) -> int:
        gone = self.local.reset()
        try:
            gone = max(gone, int(self._redis.hlen(self._pins_key)))  # pyright: ignore[reportUnknownMemberType]
            self._redis.delete(self._pins_key)
            self._redis.incr(self._version_key)
        except self._failures as exc:
            logger.warning("tool pins: not reset in Redis at %s: %s", self.where, exc)
        return gone


def pin_store(config: GatewayConfig) -> SqlitePins | SharedPins:
    """The pin store the config says: beside the persistent catalog, and in Redis with a Redis registry."""
    local = SqlitePins(CatalogStore(store_path(config.catalog_cache)))
    if config.registry.backend == "redis" and config.registry.url:
        return SharedPins(config.registry.url, prefix=config.registry.key_prefix, local=local)
    return local


def approve_pins(store: PinStore, pins: Iterable[Pin]) -> list[Pin]:
    """Approve what was seen of `pins` (those that differ from their pin); the pins approved."""
    approved = [pin.approved() for pin in pins if pin.seen is not None]
    store.save(approved, replace_existing=True)
    return approved
