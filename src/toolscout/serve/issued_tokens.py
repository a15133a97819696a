"""Issued tokens at the HTTP edge: a presented `ts_...` credential to its record, a forged one refused
without a registry query, a known one honoured through a registry outage.

* Shape and tag first (registry/base.py): a credential of no issued token's shape, a tagged one whose
  tag does not verify under the registry's key, or one of the shape issued before tags that was not
  in the registry when the gateway started (none are issued any more), is refused with no query.
* Then its record: kept for `TOKEN_RECHECK_SECONDS`, then read again, so expiry is checked on every
  request and a revocation by another process or replica is seen within that time (through this
  gateway's API or the registry's change feed at once: `revoked`).
* When the registry cannot be read (Redis away, a file that cannot be opened): a token whose record
  was read within `auth.registryOutageGrace` seconds keeps working (within its own expiry), and is
  read again on its next request, so a revocation made meanwhile applies as soon as the registry
  answers. Any other token is `TokensUnreadable` (503). Said once an outage in the log, not once a
  request; while one request is asking the registry, the others are not queued behind it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import Registry, TokenRecord, shape, tag_verifies
from toolscout.serve.principals import Principal

logger = logging.getLogger(__name__)
T = TypeVar("T")

TOKEN_RECHECK_SECONDS = 1.0
"""How long a token's record is used before it is read from the registry again."""
MAX_CACHED_TOKENS = 10_000


class TokensUnreadable(Exception):
    """The registry cannot be read, and the token was not read valid recently enough to go without it."""


@dataclass(frozen=True)
class IssuedToken:
    record: TokenRecord
    principal: Principal
    read_at: float
    """When its record was last read from the registry (monotonic)."""


class IssuedTokens:
    """What a gateway knows of the registry's issued tokens (see the module)."""

    def __init__(
        self,
        registry: Registry | None,
        grace: float,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._registry = registry
        self._grace = grace
        self._clock = clock
        self._monotonic = monotonic
        self._cache: dict[str, IssuedToken] = {}
        self._key: bytes | None = None
        self._legacy: set[str] | None = None
        """Hashes of the tokens issued before tags, as the registry held them (None: not read yet)."""
        self._unreadable_since: float | None = None
        self._probing = False

    @property
    def loaded(self) -> bool:
        """Whether the registry's key and its tokens issued before tags have been read."""
        return self._key is not None and self._legacy is not None

    async def load(self) -> list[TokenRecord]:
        """Every token the registry holds now; the ones issued before tags and the key are remembered."""
        assert self._registry is not None
        records = await self._registry.tokens()
        self._legacy = {record.secret_hash for record in records if not record.tagged}
        if self._key is None:
            self._key = await self._registry.token_key()
        return records

    def revoked(self, token_id: str) -> None:
        """A token was revoked (through this gateway, or another as its change feed says): refused from now on."""
        gone = {h for h, cached in self._cache.items() if cached.record.id == token_id}
        self._cache = {h: c for h, c in self._cache.items() if h not in gone}
        if self._legacy is not None:
            self._legacy -= gone

    async def find(self, credential: str, hashed: str) -> IssuedToken | None:
        """The token `credential` (whose `secret_hash` is `hashed`) if it is valid now, None if not.

        Raises:
            TokensUnreadable: the registry cannot be read and the token was not read valid recently.
        """
        if self._registry is None or not await self._may_exist(credential, hashed):
            return None
        now = self._monotonic()
        cached = self._cache.get(hashed)
        if cached is None or now - cached.read_at >= TOKEN_RECHECK_SECONDS:
            cached = await self._read(hashed, cached, now)
        if cached is None or cached.record.expired(self._clock()):
            return None
        return cached

    async def _may_exist(self, credential: str, hashed: str) -> bool:
        """Whether the registry could hold `credential`, decided without a query whenever possible."""
        kind = shape(credential)
        if kind == "tagged":
            if self._key is None:
                assert self._registry is not None
                self._key = await self._ask(self._registry.token_key)  # (the registry keeps it: asked once)
            return tag_verifies(credential, self._key)
        if kind == "legacy":
            if self._legacy is None:
                try:
                    await self._ask(self.load)
                except TokensUnreadable:
                    return True  # cannot tell: its lookup decides (a token read before is honoured meanwhile)
            return self._legacy is None or hashed in self._legacy
        return False

    async def _ask(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work`'s answer; the registry failing is said once an outage, and is `TokensUnreadable`."""
        try:
            answer = await work()
        except Exception as exc:
            self._unreadable(exc)
            raise TokensUnreadable from None
        self._readable()
        return answer

    async def _read(self, hashed: str, cached: IssuedToken | None, now: float) -> IssuedToken | None:
        """The token's record read again (None: no such token any more), or the one read last while the
        registry cannot be read and that was within the grace period."""
        assert self._registry is not None
        registry = self._registry
        recent = cached is not None and now - cached.read_at < self._grace
        probing = False
        if recent and self._unreadable_since is not None:
            if self._probing:  # another request is finding out whether the registry is back: not waited for
                return cached
            self._probing = probing = True
        try:
            record = await self._ask(lambda: registry.token_by_hash(hashed))
        except TokensUnreadable:
            if not recent:
                self._cache.pop(hashed, None)
                raise
            return cached
        finally:
            if probing:
                self._probing = False
        if record is None:  # revoked or swept
            self._cache.pop(hashed, None)
            if self._legacy is not None:
                self._legacy.discard(hashed)
            return None
        fresh = IssuedToken(record, Principal(subject=f"token:{record.id}", scope=record.scope()), now)
        if len(self._cache) >= MAX_CACHED_TOKENS:
            self._cache.clear()
        self._cache[hashed] = fresh
        return fresh

    def _unreadable(self, exc: Exception) -> None:
        if self._unreadable_since is not None:
            return
        self._unreadable_since = self._monotonic()
        honoured = (
            f"tokens read valid in the last {self._grace:g} s keep working until it answers "
            "(auth.registryOutageGrace), others get 503"
        )
        if isinstance(exc, RegistryUnavailable):  # Redis away: said in one line, not a traceback
            logger.warning("cannot read the token registry: %s; %s (said once an outage)", exc.message, honoured)
        else:
            logger.warning("cannot read the token registry; %s (said once an outage)", honoured, exc_info=exc)

    def _readable(self) -> None:
        if self._unreadable_since is not None:
            away = self._monotonic() - self._unreadable_since
            self._unreadable_since = None
            logger.warning("the token registry answers again (after %.1f s): every token is checked against it", away)
