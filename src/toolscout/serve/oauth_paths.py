"""The OAuth discovery paths, answered before authentication: this gateway takes a bearer credential,
not OAuth, and says so where an OAuth-aware client looks.

An MCP client shown a 401 (the MCP Inspector, the SDK's clients with an OAuth provider) looks for
the protected resource's metadata (RFC 9728: `/.well-known/oauth-protected-resource`, also under the
endpoint's path), then the authorization server's (RFC 8414, OpenID discovery), then registers
itself at `/register`. Each of these is answered 404 with a JSON body whose `error_description`
names what to send instead (an OAuth client shows it), rather than a 401 that would read as
"authenticate to discover how to authenticate".
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

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
    """Whether `path` is one an OAuth client asks on discovering a server (see the module)."""
    return path in OAUTH_ENDPOINTS or any(path == p or path.startswith(p + "/") for p in OAUTH_PATHS)


class NotOAuth:
    """ASGI middleware answering the OAuth paths itself (404, saying what to send), passing the rest on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_oauth_path(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        content = json.dumps({"error": "invalid_request", "error_description": NOT_OAUTH}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": content})
