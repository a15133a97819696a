"""Who is looking at the dashboard: the login form, sessions, and the checks every POST passes.

The dashboard takes the same credentials as the HTTP API and `/mcp` (an admin key, a client key,
an issued token), decided by the gateway's own `PrincipalResolver`, so a revoked token or a key over
its rate is refused here as there. A person logs in once with a form; the credential is then kept
in this process's memory under a random session id, and the cookie carries only that id
(`HttpOnly`, `SameSite=Strict`, `Secure` over https, path `/dashboard`). Each request resolves the
stored credential again, so a token revoked meanwhile ends the session. A session ends at logout,
after `IDLE_SECONDS` unused, and `SESSION_SECONDS` after login whatever happens.

A script may send `Authorization: Bearer <credential>` instead, with no session. A gateway that
authenticates no one (loopback, no keys) lets everyone in: each browser still gets a session, whose
CSRF token its forms carry.

Every POST is checked before any page sees it (`DashboardGate`): an `Origin` header naming another
site is refused, and without a bearer header the body's `csrf_token` field (or the `X-CSRF-Token`
header, for script calls) must be the session's. A browser sends neither a bearer header nor the
`SameSite=Strict` cookie with another site's form, and cannot read the token from another origin.
"""

from __future__ import annotations

import hmac
import logging
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolscout.config.scopes import scoped
from toolscout.serve.auth import ANONYMOUS, Principal, PrincipalRefused, PrincipalResolver, admit_principal
from toolscout.serve.dashboard.sessions import (
    COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    MAX_FORM_BYTES,
    SESSION_KEY,
    SESSION_SECONDS,
    Session,
    Sessions,
    session_of,
)

logger = logging.getLogger(__name__)

_OPEN_PATHS = ("/dashboard/login", "/dashboard/static/")
"""Answered without a principal (the login form, the stylesheet and script it uses)."""


@runtime_checkable
class _Switchable(Protocol):
    """A resolver that can say authentication is on (`BearerPrincipals`): then no credential, no entry."""

    @property
    def on(self) -> bool: ...


def with_credential(scope: Scope, credential: str | None) -> Request:
    """A request like the one of `scope` that carries `credential` as its bearer header (or none)."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"authorization"]
    if credential is not None:
        headers.append((b"authorization", f"Bearer {credential}".encode("latin-1", "replace")))
    return Request({**scope, "headers": headers})


async def resolve(resolver: PrincipalResolver, scope: Scope, credential: str | None) -> Principal | Response:
    """The principal `credential` (None: no credential) is, or the refusal the resolver answered."""
    try:
        return await resolver.resolve(with_credential(scope, credential))
    except PrincipalRefused as refused:
        response = refused.response
        return response if isinstance(response, Response) else Response(status_code=401)


def same_origin(scope: Scope) -> bool:
    """Whether the request's `Origin` (if it has one) is the site it was sent to."""
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    headers = {k.lower(): v for k, v in raw}
    origin = headers.get(b"origin")
    if origin is None:
        return True
    host = headers.get(b"host", b"").decode("latin-1").lower()
    parts = urlsplit(origin.decode("latin-1").lower())
    scheme: str = parts.scheme
    netloc: str = parts.netloc
    return scheme in ("http", "https") and netloc == host and bool(host)


class DashboardGate:
    """ASGI middleware in front of the dashboard's pages: decides the principal (session cookie,
    bearer header, or nobody when the gateway authenticates no one), checks every POST (origin,
    CSRF token), and serves the pages under the principal's scope."""

    def __init__(self, app: ASGIApp, resolver: PrincipalResolver, sessions: Sessions) -> None:
        self.app = app
        self.resolver = resolver
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path: str = scope["path"]
        post = scope["method"] not in ("GET", "HEAD", "OPTIONS")
        if post and not same_origin(scope):
            message = "This form was sent from another site, so it was refused. Use the dashboard's own pages."
            await _refusal(403, message)(scope, receive, send)
            return
        if path.startswith(_OPEN_PATHS):
            session = self.sessions.get(request.cookies.get(COOKIE))
            if session is not None:
                scope[SESSION_KEY] = session
            admit_principal(scope, ANONYMOUS)
            await self.app(scope, receive, send)
            return
        new_session: Session | None = None
        bearer = "authorization" in request.headers
        if bearer:  # a script: the header as it came, no session
            outcome = await resolve(self.resolver, scope, _bearer_of(request))
            if isinstance(outcome, Response):
                await outcome(scope, receive, send)
                return
            principal = outcome
        else:
            session = self.sessions.get(request.cookies.get(COOKIE))
            if session is not None:
                outcome = await resolve(self.resolver, scope, session.credential)
                if isinstance(outcome, Response):  # revoked, expired, or auth turned on since
                    self.sessions.end(session.id)
                    await _to_login(request, "Your session ended: its key is no longer accepted. Log in again.")(
                        scope, receive, send
                    )
                    return
                principal = outcome
            else:
                if isinstance(self.resolver, _Switchable) and self.resolver.on:
                    outcome: Principal | Response = Response(status_code=401)
                else:
                    outcome = await resolve(self.resolver, scope, None)
                if isinstance(outcome, Response) or post:
                    # Not logged in (a POST without a session is a form from elsewhere, or from before a restart).
                    await _to_login(request, None)(scope, receive, send)
                    return
                principal = outcome
                session = new_session = self.sessions.create(None)
            scope[SESSION_KEY] = session
            if post:
                body = await _read_body(receive)
                if body is None:
                    await _refusal(413, f"The form is over {MAX_FORM_BYTES} bytes.")(scope, receive, send)
                    return
                if not _csrf_ok(request, body, session.csrf):
                    await _refusal(
                        403,
                        "This form's security token is missing or out of date, so it was refused. "
                        "Reload the page and send it again.",
                    )(scope, receive, send)
                    return
                receive = _replay(body)
        admit_principal(scope, principal)
        if new_session is not None:
            send = _setting_cookie(send, new_session, secure=scope.get("scheme") == "https")
        with scoped(principal.scope):
            await self.app(scope, receive, send)


def _bearer_of(request: Request) -> str | None:
    scheme, _, credential = request.headers.get("authorization", "").strip().partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else None


def cookie_header(session: Session | None, *, secure: bool) -> str:
    """The `Set-Cookie` value that keeps `session` (None: that forgets it)."""
    value, age = (session.id, SESSION_SECONDS) if session is not None else ("", 0)
    flags = "; Secure" if secure else ""
    return f"{COOKIE}={value}; Path=/dashboard; Max-Age={age}; HttpOnly; SameSite=Strict{flags}"


def _setting_cookie(send: Send, session: Session, *, secure: bool) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"set-cookie", cookie_header(session, secure=secure).encode())]
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def _read_body(receive: Receive) -> bytes | None:
    body = bytearray()
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES:
            return None
        more = message.get("more_body", False)
    return bytes(body)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _csrf_ok(request: Request, body: bytes, expected: str) -> bool:
    presented = request.headers.get(CSRF_HEADER)
    if presented is None and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        values = parse_qs(body.decode("utf-8", "replace")).get(CSRF_FIELD)
        presented = values[0] if values else None
    return presented is not None and hmac.compare_digest(presented.encode(), expected.encode())


def safe_next(target: str | None) -> str:
    """Where to go after login: a dashboard path, never another site."""
    if target and target.startswith("/dashboard") and not target.startswith("//") and "\\" not in target:
        return target
    return "/dashboard/"


def _to_login(request: Request, message: str | None) -> Response:
    from urllib.parse import urlencode

    query = {"next": request.url.path if request.method == "GET" else "/dashboard/"}
    if message:
        query["message"] = message
    response = RedirectResponse(f"/dashboard/login?{urlencode(query)}", status_code=303)
    response.headers["set-cookie"] = cookie_header(None, secure=request.url.scheme == "https")
    return response


def _refusal(status: int, message: str) -> Response:
    from toolscout.serve.dashboard.render import SECURITY_HEADERS, render

    return HTMLResponse(render("refused.html", status=status, message=message), status, headers=SECURITY_HEADERS)


# The login form

_REFUSED_KEY = (
    "That key was not accepted: it is not an admin key, client key or token of this gateway, or it was "
    "revoked or has expired. Check it (no spaces around it) and try again, or ask the gateway's operator "
    "for a token (`toolscout token create`)."
)


def login_routes(resolver: PrincipalResolver, sessions: Sessions) -> list[Route]:
    """`/login` (the form, and its POST) and `/logout`."""
    from toolscout.serve.dashboard.render import page

    async def form(request: Request) -> Response:
        return page(
            request,
            "login.html",
            title="Log in",
            next=safe_next(request.query_params.get("next")),
            message=request.query_params.get("message"),
            error=None,
        )

    async def login(request: Request) -> Response:
        if request.headers.get("origin") is None:  # the gate checked it is ours when present
            return _refusal(403, "A login must come from the dashboard's own form (the request had no Origin).")
        fields = await request.form()
        key = str(fields.get("key") or "").strip()
        target = safe_next(str(fields.get("next") or ""))
        outcome: Principal | Response | None = None
        if key:
            outcome = await resolve(resolver, request.scope, key)
        if isinstance(outcome, Principal):
            session = sessions.create(key)
            response = RedirectResponse(target, status_code=303)
            response.headers["set-cookie"] = cookie_header(session, secure=request.url.scheme == "https")
            logger.info("dashboard: %s logged in", outcome.subject or "someone")
            return response
        if outcome is None:
            error, status = "Enter a key: an admin key, a client key or a token.", 400
        elif outcome.status_code == 429:
            error, status = "Too many tries from this address. Wait a minute and try again.", 429
        elif outcome.status_code == 503:
            error, status = (
                "The gateway cannot check tokens right now (its registry cannot be read). Try again shortly.",
                503,
            )
        else:
            error, status = _REFUSED_KEY, 401
        return page(request, "login.html", title="Log in", next=target, message=None, error=error, status=status)

    async def logout(request: Request) -> Response:
        session = session_of(request)
        if session is not None:
            sessions.end(session.id)
        response = RedirectResponse("/dashboard/login?message=Logged+out.", status_code=303)
        response.headers["set-cookie"] = cookie_header(None, secure=request.url.scheme == "https")
        return response

    return [
        Route("/login", form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]
