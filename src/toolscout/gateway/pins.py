"""Tool definitions pinned on first sight (`toolPinning`): the defence against a server that changes a
tool's description or schema after it was trusted (a "rug pull", tool poisoning).

Trust on first use: each tool's definition (pin_diff.py) is pinned with its hash when the gateway
first sees it, kept with the persistent catalog (pin_store.py; in memory for the process when that
is off). A later definition that differs is logged (a warning) and audited with a readable diff,
once per new definition; under `quarantine` the tool is also neither listed, found nor run
(`Catalog.admit` raises `TOOL_QUARANTINED`) until a person approves it with `toolscout pins
approve`, which a running gateway takes up within `POLL_SECONDS` (the store's version), lifting the
quarantine and telling clients their lists changed. A server that goes back to the pinned
definition is trusted again. A description that reads as instructions to the model
(gateway/poisoning.py) is flagged in the log and kept with the pin, for `toolscout pins list`.

The verdict (`quarantined`) is asked by the catalog for every tool it is given, on the event loop:
a definition is hashed again only when it differs from the one last hashed for that tool. Reading a
definition for instructions costs far more than hashing it (a whole catalog's worth would hold the
event loop for seconds at start), and decides no verdict, so it is done in a worker thread by the
background task, which then logs, keeps and audits what it found.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types

from toolscout.config.models import GatewayConfig, ToolPinning
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.pin_diff import changes, definition_of, digest, summary
from toolscout.gateway.pin_store import Pin, PinKey, PinStore, Seen, pin_store
from toolscout.gateway.poisoning import instructions_in

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
        self._hashed: dict[PinKey, tuple[types.Tool, str, dict[str, Any]]] = {}
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

    # The verdict (Catalog's)

    def quarantined(self, server: str, tool: types.Tool) -> bool:
        """Whether `server`'s `tool` is to be kept from lists, searches and calls; pins it when new, and
        reports a definition that differs from its pin the first time it is seen."""
        if self.mode == "off":
            return False
        key = (server, tool.name)
        hashed = self._hashed.get(key)
        if hashed is None or (hashed[0] is not tool and hashed[0] != tool):
            definition = definition_of(tool)
            hashed = self._hashed[key] = (tool, digest(definition), definition)
        _, current, definition = hashed
        pin = self._pins.get(key)
        if pin is None:
            self._unexamined[(key, current)] = tool
            self._keep(Pin(server, tool.name, current, definition, time.time()))
            return False
        if pin.hash == current:
            if pin.seen is not None:  # back to what was approved
                logger.info("tool %r on %r is back to its pinned definition", tool.name, server)
                self._keep(replace(pin, seen=None))
            return False
        if pin.seen is None or pin.seen.hash != current:
            self._unexamined[(key, current)] = tool
            self._changed(pin, tool, Seen(current, definition, time.time()))
        return self.mode == "quarantine"

    def _changed(self, pin: Pin, tool: types.Tool, seen: Seen) -> None:
        pin = self._keep(replace(pin, seen=seen))
        found = changes(pin.definition, seen.definition)
        outcome = "quarantined" if self.mode == "quarantine" else "changed"
        logger.warning(
            "tool %r on %r changed since it was pinned (%s); %s. Review: toolscout pins diff %s %s",
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
    """`ok`, `changed` (seen differing, usable) or `quarantined`."""
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
