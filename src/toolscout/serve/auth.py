"""Authentication at the HTTP edge: who an `Authorization: Bearer` credential is, and refusing a
request without a valid one or over its rate.

`BearerPrincipals` is the `PrincipalResolver` of `serve --transport http`. A credential is

* an admin key (`auth.adminKeys`): everything, the HTTP API included (`Principal.admin`, `UNSCOPED`);
* a client key (`auth.keys`): `/mcp` within the key's scope, at its `requestsPerMinute`;
* a token issued into the registry (`POST /api/v1/tokens`, `toolscout token create`): `/mcp` within
  its scope, until it expires or is revoked.

Keys are kept as hashes (`secret_hash`) and compared with `hmac.compare_digest`, every key each
time; a token is looked up by the hash of what was presented. A missing, unknown, expired or
revoked credential is answered 401 with `WWW-Authenticate: Bearer` (`error="invalid_token"` when one
was presented, RFC 6750), in the SDK's own shape on /mcp (`{"error", "error_description"}`, as its
`RequireAuthMiddleware`) and the API's elsewhere; a principal over its rate gets 429 with
`Retry-After`. No answer ever names or echoes a credential.

Authentication is on when any key is configured, or once the registry holds an issued token (at
start, or issued later: checked at most once a second while off): a gateway whose operator issued
tokens serves no one without one. Once on it stays on until the gateway restarts. Off, every
request is anonymous and may do everything (`AnonymousPrincipals`' principal).

Issued tokens are serve/issued_tokens.py's: a forged one refused without a registry query, a record
read again at most once a second, a token read valid recently honoured while the registry cannot be
read (`auth.registryOutageGrace`), any other then answered 503.
"""

from __future__ import annotations

import hmac
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NoReturn

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from toolscout.config.auth import AuthConfig
from toolscout.config.scopes import UNSCOPED, Scope
from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import Registry, SharedRates, secret_hash
from toolscout.serve.api_common import error_response
from toolscout.serve.http_sessions import peer_of
from toolscout.serve.issued_tokens import IssuedTokens, TokensUnreadable
from toolscout.serve.principals import Principal, PrincipalRefused
from toolscout.serve.rate_limit import RateLimiter

logger = logging.getLogger(__name__)

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
                return await self._registry.admit(subject, per_minute)
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


def _is_mcp(request: Request) -> bool:
    path = request.url.path
    return path == MCP_PATH_PREFIX or path.startswith(MCP_PATH_PREFIX + "/")


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
