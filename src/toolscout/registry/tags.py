"""The tag an issued token carries, so that a forged one is refused without asking the registry.

An issued token is `ts_` and the URL-safe base64 of 32 random bytes followed by a 16-byte tag: the
HMAC-SHA256 of those random bytes under the registry's own key (`Registry.token_key`, made on
first use and read back, so that every replica and the command line share one). A gateway that has
read the key checks the tag first: a credential whose tag does not verify was not issued by this
registry and is refused with no query. The tag is a filter, not the credential: a token whose tag
verifies is still looked up (its expiry and revocation decide), so someone who could read the key
from the registry's store gains nothing but the lookup a forged token used to cost.

Tokens issued before tags (`ts_` and 43 characters, 32 random bytes) are `LEGACY`: no new ones are
issued, and a gateway knows which of them exist from the registry when it starts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Literal

TOKEN_PREFIX = "ts_"
KEY_BYTES = 32
RANDOM_BYTES = 32
TAG_BYTES = 16
TAGGED_CHARS = (RANDOM_BYTES + TAG_BYTES) * 4 // 3
"""64: the base64 of 48 bytes has no padding."""
LEGACY_CHARS = 43
"""`secrets.token_urlsafe(32)`: what tokens issued before tags carry after `ts_`."""

Shape = Literal["tagged", "legacy"]


def new_key() -> str:
    """A fresh tagging key, as stored (hex)."""
    return secrets.token_hex(KEY_BYTES)


def _tag(key: bytes, random: bytes) -> bytes:
    return hmac.new(key, random, hashlib.sha256).digest()[:TAG_BYTES]


def tagged_secret(key: bytes) -> str:
    """A fresh token secret: `ts_`, 256 random bits and their tag under `key`."""
    random = secrets.token_bytes(RANDOM_BYTES)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(random + _tag(key, random)).decode()


def shape(credential: str) -> Shape | None:
    """Which kind of issued token `credential` could be by its shape alone (None: none)."""
    if not credential.startswith(TOKEN_PREFIX):
        return None
    length = len(credential) - len(TOKEN_PREFIX)
    return "tagged" if length == TAGGED_CHARS else "legacy" if length == LEGACY_CHARS else None


def tag_verifies(credential: str, key: bytes) -> bool:
    """Whether a tagged-shape `credential` carries the tag `key` gives its random part."""
    try:
        raw = base64.urlsafe_b64decode(credential.removeprefix(TOKEN_PREFIX).encode())
    except (binascii.Error, ValueError):
        return False
    if len(raw) != RANDOM_BYTES + TAG_BYTES:
        return False
    return hmac.compare_digest(_tag(key, raw[:RANDOM_BYTES]), raw[RANDOM_BYTES:])
