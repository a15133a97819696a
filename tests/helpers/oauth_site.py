"""A real OAuth-protected MCP server for the tests, built on the SDK's own authorization-server routes.

It registers clients dynamically, requires PKCE and the `resource` indicator, issues short-lived
access tokens (JWT-shaped, so the gateway can say whom it signed in as) with rotating refresh tokens,
revokes tokens, and approves every authorization at once, as a user clicking "allow" would. The
test controls it through `OAuthSite`: how long access tokens live, revoking everything on the
server side, and serving missing or malformed metadata.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
import zlib
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.helpers.web_site import serving
from toolscout.serve.http import bind
from toolscout.upstream.oauth import request_name

SUBJECT = "ada@example.com"
"""Whom every authorization is granted to (the user who clicked "allow")."""

Metadata = Literal["ok", "missing", "malformed", "endless", "compressed"]
"""What the site answers at its metadata paths: the real documents, 404, a body that is not metadata,
a body that goes on and on (`endless`), or one that does so gzip-compressed although the request asked
for no compression (`compressed`)."""

ENDLESS_BYTES = 256 * 1024 * 1024
"""Where an "endless" answer stops after all, so that a client that never stops reading cannot hang a test."""


def _segment(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@dataclass
class Provider:
    """The authorization server's state, in memory: clients, codes, and tokens."""

    access_ttl: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict[str, OAuthClientInformationFull])
    codes: dict[str, AuthorizationCode] = field(default_factory=dict[str, AuthorizationCode])
    access: dict[str, AccessToken] = field(default_factory=dict[str, AccessToken])
    refresh: dict[str, RefreshToken] = field(default_factory=dict[str, RefreshToken])
    refreshed: int = 0
    """How many refresh grants were answered."""
    authorized: int = 0
    """How many authorizations were approved (a user's clicks)."""
    revoked: list[str] = field(default_factory=list[str])
    """The tokens a client revoked at the revocation endpoint."""
    issued: list[str] = field(default_factory=list[str])
    """Every access and refresh token ever issued, in order."""
    issued_with: dict[str, str] = field(default_factory=dict[str, str])
    """The access token issued with each refresh token."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["read"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        self.authorized += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        now = int(time.time())
        claims = {"sub": SUBJECT, "iat": now, "exp": now + self.access_ttl, "jti": secrets.token_hex(8)}
        token = f"{_segment({'alg': 'none', 'typ': 'at+jwt'})}.{_segment(claims)}.{secrets.token_urlsafe(16)}"
        self.access[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=now + self.access_ttl,
            resource=resource,
            subject=SUBJECT,
        )
        refresh = f"rt-{secrets.token_urlsafe(24)}"
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, expires_at=None, resource=resource, subject=SUBJECT
        )
        self.issued += [token, refresh]
        self.issued_with[refresh] = token
        return OAuthToken(access_token=token, expires_in=self.access_ttl, scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, code: AuthorizationCode) -> Any:
        self.codes.pop(code.code, None)
        return self._issue(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:  # rotated: each refresh token works once
            raise TokenError("invalid_grant", "refresh token already used")
        self.refreshed += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        """Revoke one token; a refresh token takes the access token issued with it along (RFC 7009 allows it)."""
        self.revoked.append(token.token)
        self.access.pop(token.token, None)
        self.access.pop(self.issued_with.get(token.token, ""), None)
        self.refresh.pop(token.token, None)

    def revoke_all(self) -> None:
        """Forget every token, as a user revoking the app's access on the provider's site."""
        self.access.clear()
        self.refresh.clear()

    def expire_access_tokens(self) -> None:
        """End every access token's life now (its refresh token stays good)."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1


@dataclass
class OAuthSite:
    """The running server: where it answers, and its authorization server's state."""

    base: str
    provider: Provider
    metadata: Metadata = "ok"
    path: str = "/mcp"
    """The MCP endpoint's path: `/mcp` (streamable HTTP) or `/sse` (the legacy HTTP+SSE transport)."""
    token_failure: int | None = None
    """When set, the token endpoint answers this HTTP status (an authorization server in trouble)."""
    token_endless: bool = False
    """When set, the token endpoint answers 200 with a body that goes on and on (a hostile server)."""
    revocation_hangs: bool = False
    """When set, the revocation endpoint takes each request and never answers."""
    revocation_held: anyio.Event = field(default_factory=anyio.Event)
    """Set once a revocation request is being held unanswered (`revocation_hangs`)."""
    closing: anyio.Event = field(default_factory=anyio.Event)
    """Set as the site stops: a held request is answered then, so that the server can stop."""
    write_requests: frozenset[str] = frozenset()
    """Requests that need the `write` scope, as `request_name` names them (`tools/call add`): without it
    the server answers 403 `insufficient_scope` naming `read write`, as a server asking for a step-up does."""

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"{self.base}{self.path}"


class _MetadataOverride:
    """ASGI middleware that answers the metadata paths as the site's `metadata` says, and the token
    endpoint with the site's `token_failure` when set."""

    def __init__(self, app: ASGIApp, site: OAuthSite) -> None:
        self._app = app
        self._site = site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        metadata = self._site.metadata
        if scope["type"] == "http" and path.startswith("/.well-known/") and metadata in ("endless", "compressed"):
            await _endless(send, compressed=metadata == "compressed")
            return
        if scope["type"] == "http" and path == "/revoke" and self._site.revocation_hangs:
            self._site.revocation_held.set()
            await self._site.closing.wait()
        if scope["type"] == "http" and path == "/token" and self._site.token_endless:
            await _endless(send, compressed=False)
            return
        if scope["type"] == "http" and path == self._site.path and self._site.write_requests:
            replayed = await self._step_up(scope, receive, send)
            if replayed is None:
                return
            receive = replayed
        if scope["type"] == "http" and path.startswith("/.well-known/") and metadata != "ok":
            status, body = (404, b"not found") if self._site.metadata == "missing" else (200, b"{'issuer': nope")
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and path == "/token" and self._site.token_failure is not None:
            body = b"<html>upstream trouble</html>"
            headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": self._site.token_failure, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._app(scope, receive, send)

    async def _step_up(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer 403 `insufficient_scope` to a `write_requests` request without the `write` scope (None);
        otherwise hand back a `receive` that replays the request's body to the app."""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        name = request_name(body)
        headers: dict[bytes, bytes] = dict(scope.get("headers", []))
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        granted = self._site.provider.access.get(token)
        if name in self._site.write_requests and granted is not None and "write" not in granted.scopes:
            challenge = (
                f'Bearer error="insufficient_scope", scope="read write", '
                f'resource_metadata="{self._site.base}/.well-known/oauth-protected-resource{self._site.path}", '
                'error_description="writing needs the write scope"'
            )
            answer = b'{"error": "insufficient_scope"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [
                        (b"www-authenticate", challenge.encode()),
                        (b"content-length", str(len(answer)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": answer})
            return None
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


async def _endless(send: Send, *, compressed: bool) -> None:
    """Answer 200 with JSON-looking text that goes on (up to `ENDLESS_BYTES`, unread or not), without a length."""
    headers = [(b"content-type", b"application/json")]
    if compressed:
        headers.append((b"content-encoding", b"gzip"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    chunk = b"a" * (1024 * 1024)
    parts = [b'{"issuer": "', *[chunk] * (ENDLESS_BYTES // len(chunk)), b'"}']
    for part in parts:
        body = packer.compress(part) if compressed else part
        await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": packer.flush() if compressed else b""})


@asynccontextmanager
async def oauth_site(
    *,
    access_ttl: int = 3600,
    metadata: Metadata = "ok",
    protected: bool = True,
    sse: bool = False,
    revocation: bool = True,
) -> AsyncGenerator[OAuthSite]:
    """Serve an OAuth-protected MCP server (tools `whoami` and `add`, resource `notes://today`, prompt
    `summary`) on a free loopback port
    (`protected=False`: the same server open to anyone, asking for no sign-in; `sse`: over the legacy
    HTTP+SSE transport at `/sse` instead of streamable HTTP at `/mcp`; `revocation=False`: its authorization
    server offers no revocation endpoint, as many do not)."""
    sock = bind("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider(access_ttl=access_ttl)
    site = OAuthSite(base, provider, metadata, path="/sse" if sse else "/mcp")
    server = (
        MCPServer("oauth-notes")
        if not protected
        else MCPServer(
            "oauth-notes",
            auth_server_provider=provider,  # pyright: ignore[reportArgumentType] - the protocol's generics
            auth=AuthSettings(
                issuer_url=base,  # pyright: ignore[reportArgumentType]
                resource_server_url=site.url,  # pyright: ignore[reportArgumentType]
                validate_token_resource=True,
                required_scopes=["read"],
                client_registration_options=ClientRegistrationOptions(
                    enabled=True, valid_scopes=["read", "write"], default_scopes=["read"]
                ),
                revocation_options=RevocationOptions(enabled=revocation),
            ),
        )
    )

    @server.tool()
    def whoami() -> str:
        """Say whom the caller's access token was issued to."""
        return f"signed in as {SUBJECT}"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.resource("notes://today")
    def today() -> str:
        """Today's notes."""
        return "water the plants"

    @server.prompt()
    def summary() -> str:
        """Ask for a summary of today's notes."""
        return "Summarise today's notes."

    app = server.sse_app() if sse else server.streamable_http_app()
    async with serving(_MetadataOverride(app, site), sock, lifespan="off" if sse else "on"):
        try:
            yield site
        finally:
            site.closing.set()
