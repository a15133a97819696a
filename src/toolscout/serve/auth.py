"""Who an HTTP request is from: the principal decided at the HTTP edge, bearer credentials, issued
tokens, per-principal rate limits, and the OAuth discovery paths answered before any of them.

The principal is decided once per HTTP request, before the SDK's session manager sees it, by
`PrincipalAdmission`, ASGI middleware that asks a `PrincipalResolver` and keeps the answer in the
request's ASGI scope. The rest of the server reads it back with `principal_of`. Where there are no
sessions (at 2026-07-28, and on stateless HTTP) sessions.py tells clients apart by it: a client is
then its principal and its program's name.

A gateway that authenticates no one has `AnonymousPrincipals`: every request is anonymous and
carries only its client address, which is kept for logs and is not an identity. A gateway with keys
or issued tokens has `BearerPrincipals`, which reads the `Authorization: Bearer` credential of each
request. A credential is one of three kinds:

* an admin key (`auth.adminKeys`), which may do everything, the HTTP API included;
* a client key (`auth.keys`), which may use `/mcp` within the key's scope, at its `requestsPerMinute`;
* a token issued into the registry (`POST /api/v1/tokens`, `toolscout token create`), which may use
  `/mcp` within its scope until it expires or is revoked.

Keys are kept as hashes (`secret_hash`) and compared with `hmac.compare_digest`, every key each time;
a token is looked up by the hash of what was presented. A missing, unknown, expired or revoked
credential is answered 401 with `WWW-Authenticate: Bearer`, with `error="invalid_token"` when one was
presented, as RFC 6750 has it. On /mcp the body has the SDK's own shape (`{"error",
"error_description"}`, as its `RequireAuthMiddleware` answers), elsewhere the API's. A principal over
its rate gets 429 with `Retry-After`. No answer ever names or echoes a credential.

Authentication is on when any key is configured, or once the registry holds an issued token, found at
start or later (while it is off, the registry is asked at most once a second): a gateway whose
operator issued tokens serves no one without one. Once on, it stays on until the gateway restarts.
While it is off, every request is anonymous and may do everything.

`IssuedTokens` refuses a forged token without a registry query, reads a token's record again at
most once a second, and honours a token read valid recently while the registry cannot be read
(`auth.registryOutageGrace`); any other token is then answered 503. `RateLimiter` holds the rate
buckets, and `NotOAuth` answers the paths where an OAuth-aware client looks for how to authenticate.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import NoReturn, Protocol, TypeVar, cast

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from toolscout.config.http import AuthConfig
from toolscout.config.scopes import UNSCOPED, Scope
from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import Registry, SharedRates, TokenRecord, secret_hash, shape, tag_verifies

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Principal:
    """Who a request is from, as far as the gateway can tell."""

    subject: str | None = None
    """The authenticated identity; None for an anonymous request (it could be anyone)."""
    address: str | None = None
    """The client's address (`unix` on a Unix socket), for logs: not part of who the client is."""
    scope: Scope = UNSCOPED
    """What the principal may see and do (`toolscout.config.scopes`); the server serves each of its
    requests under it (`scoped`)."""
    admin: bool = False
    """Whether it may use the HTTP API (`/api/v1/...`): an admin key, or anyone when the gateway
    authenticates no one (loopback, or `--insecure-no-auth`)."""
    registers_in: str | None = None
    """The namespace it may register servers and callback tools into, and issue tokens for (a token
    issued with `canRegister`); None: none, unless it is an admin."""
    expires_at: float | None = None
    """When its credential expires (seconds since the epoch; None: never): a token it issues lives no longer."""


ANONYMOUS = Principal()
"""The principal of a request no resolver has seen (the SDK's own HTTP app, which tests use)."""


class PrincipalRefused(Exception):
    """A resolver's refusal of a request: `response` (an ASGI app, a Starlette `Response`) is sent
    instead of serving it."""

    def __init__(self, response: ASGIApp) -> None:
        super().__init__("refused")
        self.response = response


class PrincipalResolver(Protocol):
    """Decides who an HTTP request is from, from its headers and connection (its body is not readable)."""

    async def resolve(self, request: Request) -> Principal:
        """The principal of `request`.

        Raises:
            PrincipalRefused: the request is not served (no valid credential, too many requests).
        """
        ...


class AnonymousPrincipals:
    """The resolver of a gateway that authenticates no one: every request is anonymous, sees everything
    and may use the API; a principal only says where the request came from."""

    async def resolve(self, request: Request) -> Principal:
        """An anonymous principal with the request's client address."""
        return Principal(address=peer_of(request.scope), admin=True)


_SCOPE_KEY = "toolscout.principal"


class PrincipalAdmission:
    """ASGI middleware that has `resolver` decide each HTTP request's principal (read by `principal_of`)."""

    def __init__(self, app: ASGIApp, resolver: PrincipalResolver) -> None:
        self.app = app
        self.resolver = resolver

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                # Without `receive`: a resolver decides from headers and connection, never by reading the body.
                principal = await self.resolver.resolve(Request(scope))
            except PrincipalRefused as refused:
                await refused.response(scope, receive, send)
                return
            scope[_SCOPE_KEY] = principal
            if principal.subject is not None:
                # The SDK's session manager binds a session to the user that opened it: a session ID
                # presented with another principal's credential answers 404, as an unknown one.
                scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=principal.subject, scopes=[]))
        await self.app(scope, receive, send)


def admit_principal(scope: ASGIScope, principal: Principal) -> None:
    """Keep `principal` as the one decided for the request of `scope` (what `principal_of` reads back),
    for a part of the server that decides it itself (the dashboard's login sessions)."""
    scope[_SCOPE_KEY] = principal


def principal_of(request: object) -> Principal:
    """The principal decided for an HTTP request (a Starlette `Request`), `ANONYMOUS` if none was."""
    scope: object = getattr(request, "scope", None)
    principal = cast(dict[str, object], scope).get(_SCOPE_KEY) if isinstance(scope, dict) else None
    return principal if isinstance(principal, Principal) else ANONYMOUS


def peer_of(scope: ASGIScope) -> str:
    """Return the client address of an ASGI request (`unix` on a Unix socket, which has none)."""
    client: tuple[str, int] | None = scope.get("client")
    if not client or not client[0]:
        return "unix"
    host = client[0]
    return host.removeprefix("::ffff:") if host.startswith("::ffff:") and "." in host else host


# Bearer credentials

TOKENS_CHECK_SECONDS = 1.0
"""While authentication is off: how often the registry is asked whether a token was issued."""
MAX_LOGGED_ADDRESSES = 10_000
REFUSALS_LOGGED_EVERY = 60.0
"""Seconds between two log lines about one client address's refused requests."""
MCP_PATH_PREFIX = "/mcp"
FAILURES_PER_MINUTE = 60
"""Refused credentials one client address may have a minute (after a burst of as many) before each
further refusal is answered `REFUSAL_DELAY` later: far more than a person or a misconfigured client
retrying makes, far fewer than a flood of forged tokens."""
REFUSAL_DELAY = 1.0

_MISSING = (
    "This gateway needs a bearer credential, not OAuth: send `Authorization: Bearer <credential>` with an admin or "
    "client key from its config (auth.adminKeys, auth.keys) or a token issued by `toolscout token create`."
)
_INVALID = (
    "The bearer credential is not valid: it is unknown, revoked or expired. This gateway takes "
    "`Authorization: Bearer <credential>` (a key from its config or a token), not OAuth: ask its operator for a "
    "new token (`toolscout token create`)."
)


@dataclass(frozen=True)
class _Key:
    hashed: bytes
    principal: Principal
    per_minute: int | None = None


class BearerPrincipals:
    """The `PrincipalResolver` of a gateway with keys or issued tokens (see the module)."""

    def __init__(
        self,
        auth: AuthConfig,
        registry: Registry | None = None,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._registry = registry
        self._monotonic = monotonic
        self._keys = [
            _Key(secret_hash(key).encode(), Principal(subject=f"admin:{index}", admin=True, scope=UNSCOPED))
            for index, key in enumerate(auth.admin_keys)
        ]
        self._keys += [
            _Key(
                secret_hash(entry.key).encode(),
                Principal(
                    subject=f"key:{index}:{entry.label}",
                    scope=Scope.of(
                        namespace=entry.namespace,
                        servers=entry.servers,
                        tools=entry.tools,
                        pinned_tools=entry.pinned_tools,
                        label=entry.label,
                    ),
                ),
                entry.requests_per_minute,
            )
            for index, entry in enumerate(auth.keys)
        ]
        self._on = auth.configured
        self._tokens_checked = -math.inf
        self._tokens = IssuedTokens(registry, auth.registry_outage_grace, clock=clock, monotonic=monotonic)
        self._limits = RateLimiter(monotonic)
        self._failures = RateLimiter(monotonic)
        """Refused credentials by client address (`_refuse`)."""
        self._rates_warned = -math.inf
        self._last_logged: dict[str, float] = {}

    @property
    def on(self) -> bool:
        """Whether requests need a credential."""
        return self._on

    async def check_tokens(self) -> bool:
        """Turn authentication on if the registry holds an issued token; whether it is on."""
        self._tokens_checked = self._monotonic()
        reading = self._registry is not None and (not self._on or not self._tokens.loaded)
        if reading and await self._tokens.load() and not self._on:
            logger.info("the registry holds issued tokens: every HTTP request needs a credential from now on")
            self._on = True
        return self._on

    def token_issued(self) -> None:
        """A token was issued through this gateway: authentication is on from the next request."""
        self._on = True

    def token_revoked(self, token_id: str) -> None:
        """A token was revoked through this gateway: refused from the next request."""
        self._tokens.revoked(token_id)

    async def resolve(self, request: Request) -> Principal:
        """The principal of `request`, or `PrincipalRefused` (401, 429)."""
        address = peer_of(request.scope)
        if not self._on and self._monotonic() - self._tokens_checked >= TOKENS_CHECK_SECONDS:
            try:
                await self.check_tokens()
            except RegistryUnavailable as exc:  # Redis away (a replica may start before it): said once a minute
                if self._monotonic() - self._rates_warned >= 60.0:
                    self._rates_warned = self._monotonic()
                    logger.warning(
                        "cannot read the token registry; checking again in %gs: %s", TOKENS_CHECK_SECONDS, exc.message
                    )
            except Exception:  # it could not be read at start either, or `serve` would not have started
                logger.exception("cannot read the token registry; checking again in %g s", TOKENS_CHECK_SECONDS)
        if not self._on:
            return Principal(address=address, admin=True)
        credential = _bearer(request)
        if credential is None:
            await self._refuse(request, address, "without a credential", None, _MISSING)
        hashed = secret_hash(credential)
        key = self._key(hashed.encode())
        if key is not None:
            principal, per_minute = key.principal, key.per_minute
        else:
            try:
                cached = await self._tokens.find(credential, hashed)
            except TokensUnreadable:
                raise PrincipalRefused(_unavailable(request)) from None
            if cached is None:
                await self._refuse(request, address, "with an unknown, revoked or expired credential", "invalid_token")
            principal, per_minute = cached.principal, cached.record.requests_per_minute
        if per_minute is not None and principal.subject is not None:
            wait = await self._take(principal.subject, per_minute)
            if wait is not None:
                self._log_refusal(address, f"over the rate of {principal.scope.label or principal.subject}")
                raise PrincipalRefused(_too_many(request, principal, per_minute, wait))
        return replace(principal, address=address)

    async def _take(self, subject: str, per_minute: int) -> int | None:
        """Take one request from `subject`'s rate bucket: None if it may go ahead, else the seconds to wait.

        The bucket is the shared registry's when it counts for every replica (Redis), else this
        process's. While Redis cannot be reached the request is counted here, so each replica then
        lets the whole rate through on its own."""
        if isinstance(self._registry, SharedRates):
            try:
                return await self._registry.take(subject, per_minute)
            except RegistryUnavailable as exc:
                if self._monotonic() - self._rates_warned >= 60.0:  # once a minute, not once a request
                    self._rates_warned = self._monotonic()
                    logger.warning("rates counted on this replica alone meanwhile: %s", exc.message)
        return self._limits.take(subject, per_minute)

    async def _refuse(
        self, request: Request, address: str | None, why: str, error: str | None, message: str = _INVALID
    ) -> NoReturn:
        """Answer 401; past `FAILURES_PER_MINUTE` refusals from one client address, a second later and
        saying so (`Retry-After`): a client guessing or flooding credentials then takes one request's
        worth of the gateway's time a second per connection, not as many as it can send. A valid
        credential from that address is never slowed."""
        self._log_refusal(address, why)
        slowed = self._failures.take(address or "unknown", FAILURES_PER_MINUTE) is not None
        if slowed:
            await anyio.sleep(REFUSAL_DELAY)
        raise PrincipalRefused(_unauthorized(request, error, message, slowed=slowed))

    def _log_refusal(self, address: str | None, why: str) -> None:
        # Once a minute per client address: a client refused in a loop must not flood the log. The
        # credential itself is never logged (nor masked: it is simply not part of the line).
        where, now = address or "unknown", self._monotonic()
        if now - self._last_logged.get(where, -math.inf) >= REFUSALS_LOGGED_EVERY:
            if len(self._last_logged) > MAX_LOGGED_ADDRESSES:
                self._last_logged = {a: t for a, t in self._last_logged.items() if now - t < REFUSALS_LOGGED_EVERY}
            self._last_logged[where] = now
            logger.warning("refused HTTP requests from %s %s (logged once a minute per client)", where, why)

    def _key(self, hashed: bytes) -> _Key | None:
        found: _Key | None = None
        for key in self._keys:  # every key, every time: how long it takes says nothing about which matched
            if hmac.compare_digest(key.hashed, hashed):
                found = key
        return found


def _bearer(request: Request) -> str | None:
    """The credential of an `Authorization: Bearer ...` header (None: no such header)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credential.strip()


PIPELINE_MCP_PATH = "/api/v1/mcp/gateway"
"""The MCP endpoint at the multi-tenant pipeline's path, beside /mcp (serve/pipeline_api.py)."""


def _is_mcp(request: Request) -> bool:
    path = request.url.path
    return path in (MCP_PATH_PREFIX, PIPELINE_MCP_PATH) or path.startswith(MCP_PATH_PREFIX + "/")


def _unauthorized(request: Request, error: str | None, message: str, *, slowed: bool = False) -> Response:
    # `error_description` even without `error` (RFC 6750 would leave it out when no credential came):
    # it is what an OAuth-aware client (the MCP Inspector) shows its user instead of starting OAuth.
    error_part = "" if error is None else f', error="{error}"'
    headers = {"WWW-Authenticate": f'Bearer realm="toolscout"{error_part}, error_description="{message}"'}
    if slowed:
        headers["Retry-After"] = str(int(REFUSAL_DELAY))
    if _is_mcp(request):
        # The SDK's RequireAuthMiddleware answers so (its `error` is always invalid_token).
        body = {"error": error or "invalid_token", "error_description": message}
        return JSONResponse(body, status_code=401, headers=headers)
    return error_response(401, "UNAUTHORIZED", message, headers)


def _unavailable(request: Request) -> Response:
    message = "The gateway cannot check tokens right now (its registry cannot be read); try again shortly."
    headers = {"Retry-After": "1"}
    if _is_mcp(request):
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
        return JSONResponse(body, status_code=503, headers=headers)
    return error_response(503, "UNAVAILABLE", message, headers)


def _too_many(request: Request, principal: Principal, per_minute: int, wait: int) -> Response:
    label = principal.scope.label or "this credential"
    message = f"Too many requests: {label} may make {per_minute} a minute (requestsPerMinute). Try again in {wait} s."
    headers = {"Retry-After": str(wait)}
    if _is_mcp(request):
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
        return JSONResponse(body, status_code=429, headers=headers)
    return error_response(429, "RATE_LIMITED", message, headers)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Return the HTTP API's error answer, `{"error": {"code": ..., "message": ...}}` with `status`.

    Authentication refuses a request outside /mcp in the same shape, so it lives here and the API
    (api.py) uses it from here."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


# Issued tokens

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
    """What a gateway knows of the registry's issued tokens: a presented `ts_...` credential to its
    record, a forged one refused without a registry query, a known one honoured through an outage.

    * Shape and tag come first (registry/base.py). A credential of no issued token's shape, a
      tagged one whose tag does not verify under the registry's key, or one of the shape issued
      before tags that was not in the registry when the gateway started (none are issued any more)
      is refused with no query.
    * Then its record is read, and kept for `TOKEN_RECHECK_SECONDS` before it is read again. Expiry
      is so checked on every request, and a revocation by another process or replica is seen within
      that time; one made through this gateway's API or the registry's change feed is seen at once
      (`revoked`).
    * When the registry cannot be read (Redis away, a file that cannot be opened), a token whose
      record was read within `auth.registryOutageGrace` seconds keeps working within its own expiry.
      It is read again on its next request, so a revocation made meanwhile applies as soon as the
      registry answers. Any other token is `TokensUnreadable` (503). The outage is logged once, not
      once a request, and while one request is asking the registry the others are not queued behind it.
    """

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
        """Return `work`'s answer; a registry failure is logged once an outage and raised as `TokensUnreadable`."""
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
        principal = Principal(
            subject=f"token:{record.id}",
            scope=record.scope(),
            registers_in=record.namespace if record.can_register else None,
            expires_at=record.expires_at,
        )
        fresh = IssuedToken(record, principal, now)
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


# Rate limits

MAX_BUCKETS = 100_000
"""Buckets kept at most; beyond, the full ones (idle for a minute or more) are forgotten."""


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """The request rates of principals, a token bucket for each, kept in memory.

    A bucket holds up to a minute's worth of requests and refills continuously, so a principal may
    make `requestsPerMinute` requests at once after a quiet minute, and that many a minute from then
    on. A request over the rate is told how many whole seconds until one more would be let through
    (its `Retry-After`). A restart starts every bucket full. `BearerPrincipals` keeps one for each
    client key and issued token that has a `requestsPerMinute`, and one for refused credentials by
    client address.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, subject: str, per_minute: int) -> int | None:
        """Take one request from `subject`'s bucket: None if it may go ahead, else the seconds
        (at least 1) to wait before it would be let through."""
        now = self._clock()
        rate = per_minute / 60.0
        bucket = self._buckets.get(subject)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._forget_full(now)
            bucket = self._buckets[subject] = _Bucket(float(per_minute), now)
        else:
            bucket.tokens = min(float(per_minute), bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return max(1, math.ceil((1.0 - bucket.tokens) / rate))

    def _forget_full(self, now: float) -> None:
        # A bucket untouched for a minute is full again: forgetting it changes nothing.
        self._buckets = {s: b for s, b in self._buckets.items() if now - b.updated < 60.0}


# The OAuth discovery paths

NOT_OAUTH = (
    "This MCP gateway (toolscout) does not use OAuth: send `Authorization: Bearer <credential>` with an admin or "
    "client key from its config (auth.adminKeys, auth.keys) or a token issued by `toolscout token create`."
)
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
)
OAUTH_ENDPOINTS = frozenset({"/register", "/authorize", "/token"})
"""Where an OAuth client falls back to when no metadata names its endpoints."""


def is_oauth_path(path: str) -> bool:
    """Return whether `path` is one an OAuth client asks on discovering a server (see `NotOAuth`)."""
    return path in OAUTH_ENDPOINTS or any(path == p or path.startswith(p + "/") for p in OAUTH_PATHS)


class NotOAuth:
    """ASGI middleware that answers the OAuth discovery paths itself and passes the rest on.

    An MCP client shown a 401 (the MCP Inspector, the SDK's clients with an OAuth provider) looks for
    the protected resource's metadata (RFC 9728: `/.well-known/oauth-protected-resource`, also under
    the endpoint's path), then the authorization server's (RFC 8414, OpenID discovery), then
    registers itself at `/register`. Each of these is answered 404 with a JSON body whose
    `error_description` names what to send instead, which an OAuth client shows its user. A 401
    there would read as "authenticate to discover how to authenticate". It runs before
    authentication, so it needs no credential.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_oauth_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        content = json.dumps({"error": "invalid_request", "error_description": NOT_OAUTH}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": content})
