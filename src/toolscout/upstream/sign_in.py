"""Signing in to, and out of, an OAuth-protected upstream, and where each server's sign-in stands:
what `toolscout auth login`, `auth logout` and `auth status` do.

`sign_in` connects to the server as an MCP client whose OAuth client (oauth.py's `UpstreamOAuth`)
may ask a person: the server's 401 starts the SDK's flow, which shows the authorization URL
(`show_url`: printed, and opened in a browser when asked), waits for the browser's redirect on a
loopback port (`LoopbackCallback`), and exchanges the code for tokens. Only once the MCP handshake
succeeds with them is the sign-in written, whole, over the old one: a failed login loses nothing.

`sign_out` revokes the tokens where the authorization server offers revocation (RFC 7009) and
forgets them. `sign_in_states` reads every remote server's kept sign-in and, for a server without
one, asks the server (one unauthenticated request) whether it wants one.
"""

from __future__ import annotations

import contextlib
import html
import math
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from anyio.streams.stapled import MultiListener

from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.config.oauth import OAuthSettings
from toolscout.errors import ServerUnavailable, SignInFailed, ToolscoutError
from toolscout.masking import mask_text
from toolscout.upstream.calls import innermost
from toolscout.upstream.oauth import (
    CALLBACK_PATH,
    Interaction,
    SignIn,
    SignInFile,
    configured_client,
    scope_union,
    sends_own_authorization,
)

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult

RemoteConfig = HttpServerConfig | SseServerConfig
_REQUEST_HEAD_BYTES = 16 * 1024
"""The most of a request to the loopback callback that is read: a redirect is one short GET."""
_REQUEST_HEAD_WITHIN = 10.0
"""Seconds a browser has to send its request once connected to the loopback callback."""
PROBE_TIMEOUT = 10.0
"""Seconds `auth status` waits for a server's answer when asking whether it wants a sign-in."""

_DONE_PAGE = (
    "<!doctype html><meta charset=utf-8><title>toolscout</title>"
    "<body style='font-family:sans-serif;margin:3em'><h1>{title}</h1><p>{text}</p></body>"
)


class LoopbackCallback:
    """The redirect URI of a sign-in: an HTTP listener on 127.0.0.1 that takes the browser's one redirect.

    It answers the browser with a short page and hands the authorization response (`code`, `state`,
    `iss`, or the `error` the authorization server sent) to `wait`, only when its `state` is the one of
    the authorization URL shown (`expect`): another page cannot end or spoil the wait. Any other path
    is answered 404 and ignored, so a browser's extra requests (a favicon) do not end the wait.
    """

    def __init__(self, port: int, host: str = "127.0.0.1", path: str = CALLBACK_PATH) -> None:
        self._port = port
        self._host = host
        self._path = path
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self._result: dict[str, str] | None = None
        self._arrived = anyio.Event()
        self._state: str | None = None

    def expect(self, authorization_url: str) -> None:
        """Take only the answer to `authorization_url` (the one whose `state` it carries)."""
        self._state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]

    @property
    def port(self) -> int:
        assert self._listener is not None
        return self._port

    @property
    def redirect_uri(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}{self._path}"

    @classmethod
    async def bind(cls, port: int, redirect_uri: str | None = None) -> LoopbackCallback:
        """A callback listening on 127.0.0.1:`port` (0: a free one), or where `redirect_uri` says (a loopback
        URL with its port, checked by the config); `OSError` when the port is taken.

        `localhost` listens on 127.0.0.1 and, where the machine has it, on ::1: a browser may try either.
        """
        host, path = "127.0.0.1", CALLBACK_PATH
        if redirect_uri is not None:
            parts = urlsplit(redirect_uri)
            host, port, path = parts.hostname or host, parts.port or port, parts.path or "/"
        first = await anyio.create_tcp_listener(local_host="::1" if host == "::1" else "127.0.0.1", local_port=port)
        port = int(first.extra(anyio.abc.SocketAttribute.local_port))
        listeners = [first]
        if host == "localhost":
            with contextlib.suppress(OSError):  # no IPv6 loopback here: 127.0.0.1 is what localhost is
                listeners.append(await anyio.create_tcp_listener(local_host="::1", local_port=port))
        callback = cls(port, host, path)
        callback._listener = listeners[0] if len(listeners) == 1 else MultiListener(listeners)
        return callback

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncGenerator[LoopbackCallback]:
        """Answer the browser for the block, then stop listening."""
        listener = self._listener
        assert listener is not None, "bind() first"
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, self._answer)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await listener.aclose()

    async def _answer(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(_REQUEST_HEAD_WITHIN):
                while b"\r\n\r\n" not in head and len(head) < _REQUEST_HEAD_BYTES:
                    try:
                        head += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            target = urlsplit(line[1]) if len(line) >= 2 and line[0] == "GET" else None
            if target is None or target.path != self._path or self._result is not None:
                await self._reply(stream, 404, "Not here", "This is toolscout's sign-in callback.")
                return
            query = {key: values[0] for key, values in parse_qs(target.query).items()}
            state = query.get("state")
            if self._state is None or state is None or not secrets.compare_digest(state, self._state):
                # Not the answer to the authorization asked for (another page can send a browser here):
                # it neither ends nor spoils the wait.
                text = "This answer is not for the sign-in in progress; it was ignored."
                await self._reply(stream, 400, "Not this sign-in", text)
                return
            self._result = query
            self._arrived.set()
            if "error" in query:
                text = f"The sign-in was refused: {query.get('error_description') or query['error']}."
                await self._reply(stream, 200, "Sign-in refused", text)
            else:
                await self._reply(stream, 200, "Signed in", "toolscout has the sign-in; you can close this tab.")

    @staticmethod
    async def _reply(stream: anyio.abc.SocketStream, status: int, title: str, text: str) -> None:
        body = _DONE_PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
        reason = {200: "OK", 400: "Bad Request"}.get(status, "Not Found")
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
        )
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(head.encode() + body)

    async def wait(self, within: float, server: str) -> AuthorizationCodeResult:
        """The authorization response, once the browser brings it (`SignInFailed` after `within` seconds)."""
        from mcp.shared.auth import AuthorizationCodeResult

        with anyio.move_on_after(within):
            await self._arrived.wait()
        result = self._result
        if result is None:
            raise SignInFailed(
                f"No answer from the browser within {within:g}s. Open the URL printed above, approve, and let it "
                f"redirect back; or run `toolscout auth login {server}` again with a longer --timeout.",
                server=server,
            )
        if "error" in result:
            said = result.get("error_description") or result["error"]
            raise SignInFailed(f"The authorization server refused the sign-in: {mask_text(said)}.")
        return AuthorizationCodeResult(code=result.get("code", ""), state=result.get("state"), iss=result.get("iss"))


@dataclass(frozen=True)
class SignedIn:
    """What a completed sign-in tells the user."""

    server: str
    subject: str | None
    expires_at: float | None
    scopes: list[str]
    refreshable: bool
    tools: int
    replaced: SignIn | None = field(default=None, repr=False)
    """The sign-in this one replaced, with only its tokens the new one does not use, for
    `revoke_replaced` (None: there were none). Never shown."""


def _callback_port(settings: OAuthSettings | None, kept: SignIn | None) -> int:
    """The loopback port: the config's, else the one the kept registration names, else any free one."""
    if settings is not None and settings.redirect_uri is not None:
        return urlsplit(settings.redirect_uri).port or 0
    if settings is not None and settings.callback_port is not None:
        return settings.callback_port
    client = (kept.client if kept is not None else None) or {}
    for uri in client.get("redirect_uris", []):
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return 0


async def sign_in(
    name: str,
    config: RemoteConfig,
    *,
    show_url: Callable[[str], Awaitable[None]],
    within: float,
) -> SignedIn:
    """Sign in to the server `name` (its entry `config`), asking the person through `show_url` and a browser.

    Raises:
        SignInFailed: the server publishes no OAuth metadata, the sign-in was refused or not finished
            within `within` seconds, or the callback port is taken.
    """
    file = SignInFile.of(name, config.url)
    try:
        # Found out now rather than after the person has been through the browser.
        await anyio.to_thread.run_sync(file.check_writable)
    except OSError as exc:
        raise SignInFailed(
            f"A sign-in to {name} could not be kept at {file.path.parent} ({exc.strerror or exc}): make that "
            "directory writable (or set $TOOLSCOUT_STATE_DIR), then sign in.",
            server=name,
        ) from None
    kept = await anyio.to_thread.run_sync(file.load)
    settings = config.oauth
    port = _callback_port(settings, kept)
    fixed = settings.redirect_uri if settings is not None else None
    try:
        callback = await LoopbackCallback.bind(port, fixed)
    except OSError as exc:
        if fixed is not None:
            raise SignInFailed(
                f"Cannot listen on port {port} for the sign-in's redirect to {fixed} ({exc.strerror}): close what "
                f"uses it, or change `oauth.redirectUri` of {name} (and the client's redirect URI at its provider)."
            ) from None
        if settings is not None and settings.callback_port is not None:
            raise SignInFailed(
                f"Cannot listen on 127.0.0.1:{port} for the sign-in's redirect ({exc.strerror}): close what "
                f"uses it, or change `oauth.callbackPort` of {name} (and the client's redirect URI at its provider)."
            ) from None
        if port == 0:
            raise SignInFailed(f"Cannot listen on 127.0.0.1 for the sign-in's redirect: {exc.strerror}.") from None
        # The kept registration's port is taken: register anew on a free one.
        callback, kept = await LoopbackCallback.bind(0), None
    try:
        async with callback.serving():
            return await _signing_in(name, config, file, kept, callback, show_url, within)
    except Exception as exc:
        raise _failure(name, config, exc) from None


def _failure(name: str, config: RemoteConfig, exc: BaseException) -> BaseException:
    """What a failed sign-in tells the user: `exc` (out of its task groups) in words, with what to do."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    from toolscout.upstream.calls import describe_exception

    found = innermost(exc)
    if isinstance(found, ToolscoutError):
        return found
    where = mask_text(config.url)
    if isinstance(found, httpx2.HTTPError):
        with contextlib.suppress(RuntimeError):  # (an error raised before any request was made)
            where = mask_text(str(found.request.url.copy_with(query=None)))
    if isinstance(found, TimeoutError | httpx2.TimeoutException):
        return SignInFailed(f"{name} did not answer in time at {where}; check the URL and try again.", server=name)
    if isinstance(found, httpx2.HTTPError | OSError):
        said = describe_exception(found)
        return SignInFailed(f"Cannot reach {name} at {where} ({said}); check the URL and the network.", server=name)
    if isinstance(found, MCPError):
        return SignInFailed(
            f"{name} refused the MCP connection after the sign-in: {describe_exception(found)}.", server=name
        )
    return found


async def _signing_in(
    name: str,
    config: RemoteConfig,
    file: SignInFile,
    kept: SignIn | None,
    callback: LoopbackCallback,
    show_url: Callable[[str], Awaitable[None]],
    within: float,
) -> SignedIn:
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    redirect = callback.redirect_uri
    settings = config.oauth
    # A fresh sign-in: no tokens; the kept registration only when it names this redirect URI.
    record = SignIn(server=name, url=config.url)
    # Scopes the server asked for since the last sign-in, with those granted then (so that widening one
    # tool keeps the others' grants, as the MCP authorization spec's step-up asks).
    also = scope_union(kept.scopes, kept.wanted_scopes) if kept is not None and kept.wanted_scopes else []
    configured = configured_client(settings, redirect) if settings is not None else None
    if configured is not None:
        record.client = configured
    elif kept is not None and kept.client is not None and redirect in kept.client.get("redirect_uris", []):
        # A registration names the scopes it may ask for: one that lacks some now wanted is made anew.
        registered = str(kept.client.get("scope") or "").split()
        wanted = scope_union(settings.scopes if settings is not None else None, also)
        if not registered or set(wanted) <= set(registered):
            record.client = kept.client

    # Each step without a person (discovery, registration, the token, the first listing) has the server's
    # `connectTimeout`; the wait for the browser has `within` of its own.
    step = config.connect_timeout
    bound = anyio.CancelScope(deadline=anyio.current_time() + step)

    async def wait_for_callback() -> AuthorizationCodeResult:
        bound.deadline = math.inf
        try:
            return await callback.wait(within, name)
        finally:
            bound.deadline = anyio.current_time() + step

    from toolscout.upstream.oauth_client import UpstreamOAuth

    async def shown(url: str) -> None:
        callback.expect(url)
        await show_url(url)

    provider = UpstreamOAuth(
        name,
        config.url,
        settings,
        None,
        interaction=Interaction(redirect, shown, wait_for_callback),
        record=record,
        also_scopes=also,
    )
    tools: int | None = None
    try:
        with bound:
            tools = await _connect(name, config, provider)
    except* SignInFailed as group:
        raise group.exceptions[0] from None
    except* (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as group:
        said = mask_text(str(group.exceptions[0]))
        hint = ""
        if "invalid_client" in said and settings is not None and settings.client_id and not settings.client_secret:
            hint = " The configured client may be a confidential one: add its secret as `oauth.clientSecret`."
        raise SignInFailed(f"Signing in to {name} failed: {said}{hint}", server=name) from None
    if tools is None:
        raise SignInFailed(
            f"{name} did not answer within {step:g}s (its `connectTimeout`) at {mask_text(config.url)} or at its "
            "authorization server; check the URL and the network, or raise `connectTimeout`.",
            server=name,
        )
    signed = provider.signed_in_record()
    if not signed.tokens:
        raise SignInFailed(
            f"{name} answered without asking for a sign-in: it does not use OAuth, or lets anyone in. "
            "Nothing was stored.",
            server=name,
        )
    if configured is not None and signed.client is not None:
        # The config's client secret stays in the config (a ${VAR} there stays out of every file).
        signed.client = {key: value for key, value in signed.client.items() if key != "client_secret"}
    try:
        previous = await _replace(file, signed)
    except OSError as exc:
        raise SignInFailed(
            f"Signed in to {name}, but the sign-in cannot be kept at {file.path} ({exc.strerror}): make that "
            "directory writable (or set $TOOLSCOUT_STATE_DIR) and sign in again.",
            server=name,
        ) from None
    # The replaced tokens would stay valid at the provider until they expire (a refresh token, for
    # months): `revoke_replaced` revokes them, as `auth logout` does, except any the new sign-in uses.
    replaced = None
    if previous is not None:
        new, old = signed.tokens or {}, previous.tokens or {}
        unused = {kind: old[kind] for kind in _REVOKED if old.get(kind) and old[kind] != new.get(kind)}
        if unused:
            replaced = _with_configured_secret(previous.model_copy(update={"tokens": unused}), settings)
    return SignedIn(name, signed.subject, signed.expires_at, signed.scopes, signed.refreshable, tools, replaced)


async def revoke_replaced(done: SignedIn) -> str | None:
    """Revoke the tokens of the sign-in `done` replaced: what became of them, as `SignedOut.revocation`
    says it (None: there were none). Bounded by `REVOKE_WITHIN` seconds."""
    return await _revoke(done.replaced) if done.replaced is not None else None


async def _replace(file: SignInFile, signed: SignIn) -> SignIn | None:
    """Keep `signed` in place of the sign-in kept in `file`, and return that one (None: none, or not known).

    Under the lock refreshes take: a refresh of the old sign-in in another process then neither writes
    its rotated tokens over this one nor leaves them out of what is returned to be revoked.
    """
    try:
        async with file.locked():
            previous = await anyio.to_thread.run_sync(file.load)
            await anyio.to_thread.run_sync(file.save, signed)
            return previous
    except (TimeoutError, ServerUnavailable):
        # The lock is held for longer than a refresh takes, or cannot be opened: the new sign-in is kept
        # all the same, as the person has just been through the browser for it; nothing is revoked.
        await anyio.to_thread.run_sync(file.save, signed)
        return None


async def _connect(name: str, config: RemoteConfig, auth: Any) -> int:
    """Connect to the server as an MCP client with `auth`, list its tools, and return how many."""
    from mcp import Client

    from toolscout.upstream.connection import CLIENT_INFO
    from toolscout.upstream.transport import RemoteUpstream

    target = RemoteUpstream(config, name, auth=auth).target(lambda: None)
    async with Client(target, client_info=CLIENT_INFO, mode="legacy") as client:
        return len((await client.list_tools()).tools)


@dataclass(frozen=True)
class SignedOut:
    """What `sign_out` did: whether anything was kept, and what the authorization server said."""

    server: str
    forgotten: bool
    revocation: str
    """`revoked`, `not offered` (the server has no revocation endpoint), `nothing to revoke` (no tokens),
    or why revoking failed."""
    earlier: int = 0
    """How many sign-ins kept for the server's earlier URLs were forgotten as well (not revoked)."""
    ended: str | None = None
    """Why the sign-in had already ended, when it had. Its tokens are revoked all the same: an end for
    another reason than a spent refresh token (a rotated client secret, say) may leave that token valid."""


async def sign_out(name: str, config: RemoteConfig) -> SignedOut:
    """Revoke `name`'s tokens where its authorization server allows, and forget its sign-in either way."""
    file = SignInFile.of(name, config.url)
    kept = await anyio.to_thread.run_sync(file.load)
    revocation = "nothing to revoke"
    if kept is not None and kept.tokens:
        revocation = await _revoke(_with_configured_secret(kept, config.oauth))

    def forget() -> tuple[bool, int]:
        # Signing out leaves no token of the server on disk, including those of a URL it had before.
        return file.delete(), sum(earlier.delete() for earlier in file.earlier(name))

    forgotten, earlier = await anyio.to_thread.run_sync(forget)
    return SignedOut(name, forgotten, revocation, earlier, kept.ended if kept is not None else None)


REVOKE_WITHIN = 15.0
"""Seconds revoking a sign-in's tokens may take in all, both requests together."""
_REVOKED = ("refresh_token", "access_token")
"""The tokens revoked, in this order: revoking the refresh token first ends the access tokens issued
from it on most servers."""


def _with_configured_secret(kept: SignIn, settings: OAuthSettings | None) -> SignIn:
    """A copy of `kept` with the config's client secret, when its client is the configured one (the secret
    is never kept on disk); `kept` itself when not."""
    client = kept.client or {}
    if settings is not None and settings.client_secret and client.get("client_id") == settings.client_id:
        return kept.model_copy(update={"client": {**client, "client_secret": settings.client_secret}})
    return kept


async def _revoke(kept: SignIn) -> str:
    """Revoke `kept`'s refresh and access tokens at its authorization server: `revoked`, `not offered`,
    or `failed (...)` with what went wrong for each."""
    import httpx2

    from toolscout.upstream.transport import shared_ssl_context

    endpoint = (kept.authorization_server or {}).get("revocation_endpoint")
    client = kept.client or {}
    tokens = kept.tokens or {}
    if not endpoint:
        return "not offered"
    basic: tuple[str, str] | None = None
    base: dict[str, str] = {"client_id": str(client.get("client_id", ""))}
    secret = client.get("client_secret")
    if secret and client.get("token_endpoint_auth_method") == "client_secret_basic":
        basic = (base.pop("client_id"), str(secret))
    elif secret:
        base["client_secret"] = str(secret)
    said: list[str] = []
    # One bound for the whole: httpx's timeout is per read, and a server trickling its answer would
    # hold `auth login` (its sign-in already kept) or `auth logout` for as long as it liked.
    with anyio.move_on_after(REVOKE_WITHIN) as bound:
        async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT, verify=await shared_ssl_context()) as http:
            for hint in _REVOKED:
                token = tokens.get(hint)
                if not token:
                    continue
                form = {**base, "token": str(token), "token_type_hint": hint}
                request = http.build_request("POST", str(endpoint), data=form)
                try:
                    # Only the status is needed: the body is never read, however long a server makes it.
                    answer = await http.send(
                        request, auth=basic if basic is not None else httpx2.USE_CLIENT_DEFAULT, stream=True
                    )
                    await answer.aclose()
                except httpx2.HTTPError as exc:
                    said.append(f"{hint}: {mask_text(str(exc)) or type(exc).__name__}")
                    break  # the endpoint cannot be reached: the other token would only wait as long
                if answer.status_code != 200:
                    said.append(f"{hint}: HTTP {answer.status_code}")
    if bound.cancelled_caught:
        said.append(f"no answer within {REVOKE_WITHIN:g}s")
    return "revoked" if not said else "failed (" + "; ".join(said) + ")"


@dataclass(frozen=True)
class SignInState:
    """Where one remote server's sign-in stands, for `auth status`."""

    server: str
    state: str
    """`signed-in`, `needs-login` (as a server's status says it), `not-needed` (the server answered without
    one, or sends its own `Authorization`), `not-signed-in` (not asked, `--offline`), or `unknown` (unreachable)."""
    subject: str | None = None
    expires_at: float | None = None
    scopes: tuple[str, ...] = ()
    refreshable: bool = False
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "state": self.state,
            "subject": self.subject,
            "expiresAt": self.expires_at,
            "scopes": list(self.scopes),
            "refreshable": self.refreshable,
            "detail": self.detail,
        }


def kept_state(name: str, kept: SignIn) -> SignInState | None:
    """The state a kept sign-in says, or None when there is none to say (no tokens)."""
    if kept.ended is not None:
        return SignInState(name, "needs-login", kept.subject, detail=kept.ended)
    if not kept.tokens:
        return None
    expired = kept.expires_at is not None and kept.expires_at <= time.time()
    if expired and not kept.refreshable:
        return SignInState(name, "needs-login", kept.subject, kept.expires_at, tuple(kept.scopes), False, "expired")
    details: list[str] = []
    if expired:
        details.append("the access token expired; it is refreshed on the next use")
    if kept.wanted_scopes:
        wanted = " ".join(kept.wanted_scopes)
        details.append(f"the server asks for more scopes ({wanted}): run `toolscout auth login {name}` to grant them")
    detail = "; ".join(details) or None
    return SignInState(name, "signed-in", kept.subject, kept.expires_at, tuple(kept.scopes), kept.refreshable, detail)


async def sign_in_states(servers: dict[str, RemoteConfig], *, ask: bool = True) -> list[SignInState]:
    """Every remote server's sign-in state; a server with none kept is asked (`ask`) whether it wants one."""
    states: dict[str, SignInState] = {}

    async def one(name: str, config: RemoteConfig) -> None:
        if sends_own_authorization(config.headers):
            own = "it sends the `Authorization` header in its `headers`"
            states[name] = SignInState(name, "not-needed", detail=own)
            return
        file = SignInFile.of(name, config.url)
        kept = await anyio.to_thread.run_sync(file.load)
        if kept is None and file.damaged is not None:
            states[name] = SignInState(name, "needs-login", detail=f"{file.damaged}; sign in again")
            return
        state = kept_state(name, kept) if kept is not None else None
        if state is None:
            state = await _ask(name, config) if ask else SignInState(name, "not-signed-in")
        exposed = file.exposed() if kept is not None else None
        if exposed is not None:
            state = replace(state, detail="; ".join(filter(None, (state.detail, exposed))))
        states[name] = state

    async with anyio.create_task_group() as tg:
        for name, config in servers.items():
            tg.start_soon(one, name, config)
    return [states[name] for name in servers]


async def _ask(name: str, config: RemoteConfig) -> SignInState:
    """Ask a server without a sign-in whether it wants one: one request without credentials."""
    import httpx2

    from toolscout.upstream.transport import shared_ssl_context

    headers = {"accept": "application/json, text/event-stream", **config.headers}
    try:
        within = min(PROBE_TIMEOUT, config.connect_timeout)
        async with httpx2.AsyncClient(timeout=within, verify=await shared_ssl_context()) as http:
            if isinstance(config, SseServerConfig):
                request = http.build_request("GET", config.url, headers={**headers, "accept": "text/event-stream"})
            else:
                body = {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "ping",
                }
                request = http.build_request("POST", config.url, headers=headers, json=body)
            answer = await http.send(request, stream=True)
            await answer.aclose()  # the headers say it all; an SSE stream is not read
    except httpx2.HTTPError as exc:
        return SignInState(name, "unknown", detail=mask_text(f"cannot reach it: {str(exc) or type(exc).__name__}"))
    bearer = answer.headers.get("www-authenticate", "").lower().startswith("bearer")
    if answer.status_code == 401 and bearer:
        return SignInState(name, "needs-login", detail=f"run `toolscout auth login {name}`")
    if answer.status_code == 401:
        return SignInState(name, "unknown", detail="it answered 401 without asking for a bearer token")
    return SignInState(name, "not-needed", detail=f"it answered HTTP {answer.status_code} without a sign-in")
