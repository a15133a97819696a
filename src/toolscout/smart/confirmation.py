"""Confirmation ids: the planned call of a destructive tool, proposed by the gateway, confirmed once.

A `confirmation_required` answer carries an id bound to the exact tool (`server/tool`), the exact
arguments (a hash of their canonical JSON), the caller (the principal and the client, as the face
names them: `Relay.caller`) and an expiry. A later call runs the tool on the strength of it only
with the same tool, arguments and caller, before it expires, and only once. So `confirm: true`
cannot stand in for the round it refers to: a prompt-injected agent that sends it on a first call
gets `confirmation_required`, as any call whose id does not fit.

The id is signed (HMAC-SHA256), not stored: a replica checks another's id without a lookup, and
tells from the id itself what does not fit (another tool, other arguments, another caller, too
late). The key and the record of spent ids belong to the `SharedConfirmations` ledger: the Redis
registry, for replicas, or this process's memory (`LocalConfirmations`).

An id is `cf1_` and 64 URL-safe characters: a random nonce (12 bytes), the expiry (8), a 4-byte
prefix of the tool's, the arguments' and the caller's hashes (said what differs), and the first 16
bytes of the HMAC over the nonce, the expiry and the three whole hashes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import secrets
import struct
import time
from collections.abc import Callable, Mapping
from typing import Any

from toolscout.registry.base import SharedConfirmations
from toolscout.schemas import canonical_json

PREFIX = "cf1_"
DEFAULT_TTL = 300.0
"""Seconds a proposed confirmation can be used: long enough for the agent to ask its user and wait."""
_NONCE, _EXPIRY, _HINT, _MAC = 12, 8, 4, 16
_SIZE = _NONCE + _EXPIRY + 3 * _HINT + _MAC
_DOMAIN = b"toolscout smart confirmation v1\0"


def _digests(tool: str, arguments: Mapping[str, Any], caller: str) -> tuple[bytes, bytes, bytes]:
    return (
        hashlib.sha256(tool.encode("utf-8", "surrogatepass")).digest(),
        hashlib.sha256(canonical_json(arguments)).digest(),
        hashlib.sha256(caller.encode("utf-8", "surrogatepass")).digest(),
    )


def _mac(key: bytes, nonce: bytes, expiry: bytes, digests: tuple[bytes, bytes, bytes]) -> bytes:
    return hmac.new(key, _DOMAIN + nonce + expiry + b"".join(digests), hashlib.sha256).digest()[:_MAC]


class LocalConfirmations:
    """The ledger of one process: a key of its own, spent ids in memory until they expire."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._spent: dict[str, float] = {}
        self._clock = clock

    async def confirmation_key(self) -> bytes:
        return self._key

    async def spend_confirmation(self, nonce: str, ttl: float) -> bool:
        now = self._clock()
        # Spent ids are only worth keeping until they expire: then the expiry refuses them anyway.
        for gone in [n for n, until in self._spent.items() if until <= now]:
            del self._spent[gone]
        if nonce in self._spent:
            return False
        self._spent[nonce] = now + ttl
        return True


class Confirmations:
    """Proposes confirmation ids and redeems them (see the module's doc)."""

    def __init__(
        self,
        ledger: SharedConfirmations | None = None,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        """Wall-clock seconds: replicas compare expiries, so not a monotonic clock (tests move it)."""
        self.ledger: SharedConfirmations = ledger if ledger is not None else LocalConfirmations(lambda: self.clock())
        self.ttl = ttl

    async def propose(self, tool: str, arguments: Mapping[str, Any], caller: str) -> str:
        """A fresh id for running `tool` with `arguments`, by `caller` only, once, within `ttl` seconds."""
        digests = _digests(tool, arguments, caller)
        nonce = secrets.token_bytes(_NONCE)
        expiry = struct.pack(">Q", math.ceil(self.clock() + self.ttl))
        mac = _mac(await self.ledger.confirmation_key(), nonce, expiry, digests)
        raw = nonce + expiry + b"".join(d[:_HINT] for d in digests) + mac
        return PREFIX + base64.urlsafe_b64encode(raw).decode("ascii")

    async def redeem(self, confirmation_id: str, tool: str, arguments: Mapping[str, Any], caller: str) -> str | None:
        """None when `confirmation_id` lets `caller` run `tool` with `arguments` now (it is spent then);
        else why not, as a sentence's end ("was proposed for another tool")."""
        raw = _decoded(confirmation_id)
        if raw is None:
            return "is not a confirmation id this gateway proposed"
        nonce, expiry = raw[:_NONCE], raw[_NONCE : _NONCE + _EXPIRY]
        hints = raw[_NONCE + _EXPIRY : _NONCE + _EXPIRY + 3 * _HINT]
        mac = raw[-_MAC:]
        digests = _digests(tool, arguments, caller)
        for index, what in enumerate(("for another tool", "with other arguments", "to another caller")):
            if not hmac.compare_digest(hints[index * _HINT : (index + 1) * _HINT], digests[index][:_HINT]):
                return f"was proposed {what}"
        if not hmac.compare_digest(mac, _mac(await self.ledger.confirmation_key(), nonce, expiry, digests)):
            return "was not signed by this gateway (forged, altered, or from before its key changed)"
        expires = struct.unpack(">Q", expiry)[0]
        now = self.clock()
        if now >= expires:
            return f"expired {now - expires:.0f}s ago (a confirmation lasts {self.ttl:g}s)"
        if not await self.ledger.spend_confirmation(nonce.hex(), expires - now + 1):
            return "was used already (each confirmation runs its call once)"
        return None


def _decoded(confirmation_id: str) -> bytes | None:
    if not confirmation_id.startswith(PREFIX) or len(confirmation_id) > len(PREFIX) + 2 * _SIZE:
        return None
    try:
        raw = base64.urlsafe_b64decode(confirmation_id[len(PREFIX) :].encode("ascii"))
    except (ValueError, binascii.Error):  # not ASCII, not base64
        return None
    return raw if len(raw) == _SIZE else None
