"""Who a request over HTTP is from: the seam where the HTTP edge decides a request's principal.

The principal is decided once per HTTP request, before the SDK's session manager sees it, by
`PrincipalAdmission` (ASGI middleware, see `toolscout.serve.http.http_app`) asking a
`PrincipalResolver`, and kept in the request's ASGI scope. sessions.py reads it back
(`principal_of`) where it tells clients apart: at 2026-07-28 and on stateless HTTP, where there
are no sessions, a client is its principal and its program's name.

A gateway that authenticates no one has `AnonymousPrincipals`: every request is anonymous, and
carries only its client address (for logs; an address is not an identity). One with keys or issued
tokens has `toolscout.serve.auth.BearerPrincipals`, which refuses a request (`PrincipalRefused`: 401
without a valid credential, 429 over its rate) before anything behind the admission sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from toolscout.config.scopes import UNSCOPED, Scope
from toolscout.serve.http_sessions import peer_of


@dataclass(frozen=True)
class Principal:
    """Who a request is from, as far as the gateway can tell."""

    subject: str | None = None
    """The authenticated identity; None for an anonymous request (it could be anyone)."""
    address: str | None = None
    """The client's address (`unix` on a Unix socket), for logs: not part of who the client is."""
    scope: Scope = UNSCOPED
    """What the principal may see and do (`toolscout.config.scopes`); the face serves each of its
    requests under it (`scoped`)."""
    admin: bool = False
    """Whether it may use the HTTP API (`/api/v1/...`): an admin key, or anyone when the gateway
    authenticates no one (loopback, or `--insecure-no-auth`)."""


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


def principal_of(request: object) -> Principal:
    """The principal decided for an HTTP request (a Starlette `Request`), `ANONYMOUS` if none was."""
    scope: object = getattr(request, "scope", None)
    principal = cast(dict[str, object], scope).get(_SCOPE_KEY) if isinstance(scope, dict) else None
    return principal if isinstance(principal, Principal) else ANONYMOUS
