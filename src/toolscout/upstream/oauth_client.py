"""The SDK's OAuth client as the gateway uses it for one remote upstream (`UpstreamOAuth`).

Kept apart from oauth.py because it imports the SDK: only a connection to a remote server, or
`toolscout auth`, imports this module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_field_from_www_auth, extract_scope_from_www_auth
from mcp.shared.auth import OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import ValidationError

from toolscout.errors import ServerUnavailable, SignInFailed, SignInRequired
from toolscout.masking import mask_text
from toolscout.upstream.oauth import (
    CALLBACK_PATH,
    REFRESH_MARGIN,
    Interaction,
    ScopeChallenge,
    SignIn,
    SignInFile,
    Storage,
    client_metadata,
    request_name,
    scope_union,
    subject_of,
)

if TYPE_CHECKING:
    from toolscout.config.oauth import OAuthSettings

logger = logging.getLogger("toolscout.upstream.oauth")
"""The sign-ins' logger (oauth.py's): the one whose errors the command line shows."""


MAX_OAUTH_ANSWER_BYTES = 1024 * 1024
"""The most of an OAuth answer (metadata, registration, token, refusal) read off the wire.

Real ones are a few kilobytes; the cap keeps a hostile or broken server from filling memory.
"""

FILE_LOOK = 1.0
"""Seconds between two looks (a `stat`) at a sign-in's file from the requests of a connection."""

OAUTH_REQUEST_TIMEOUT = 30.0
"""Seconds each step of an OAuth request (connect, send, each read) may take: the authorization server's
endpoints answer in moments, and the MCP requests' own read timeout is minutes long (for SSE)."""

MAX_ENCODED_ANSWER_BYTES = 16 * 1024
"""The cap for an answer sent compressed although the request asked for none: decompressed, it may
be about a thousand times larger, so its compressed size is held to a smaller bound."""


class _BoundedStream(httpx2.AsyncByteStream):
    """A response body that raises `error` once more than `limit` bytes have come off the wire."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, error: Callable[[], Exception]) -> None:
        self.inner = inner
        self.limit = limit
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            if read > self.limit:
                raise self.error()
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class _Looked:
    """A metadata document the sign-in looked for, and what it found there."""

    what: str
    url: str
    problem: str | None


class _Context(OAuthContext):
    """The SDK's context, with a token counted as expired a little before it is."""

    def is_token_valid(self) -> bool:
        tokens = self.current_tokens
        if not (tokens and tokens.access_token):
            return False
        if self.token_expiry_time is None:
            return True
        margin = min(REFRESH_MARGIN, (tokens.expires_in or 0) / 10)
        return time.time() <= self.token_expiry_time - margin


class UpstreamOAuth(OAuthClientProvider):
    """The SDK's OAuth client for one upstream, as an `httpx2.Auth`.

    With an `Interaction` it runs the SDK's whole flow (discovery, registration, authorization,
    token) and notes which metadata it found. Without one it never asks anyone: it sends the kept
    token, refreshes it (early, and on a 401), and raises `SignInRequired` when the server still
    refuses.
    """

    def __init__(
        self,
        server: str,
        url: str,
        settings: OAuthSettings | None,
        file: SignInFile | None,
        *,
        interaction: Interaction | None = None,
        record: SignIn | None = None,
        static_authorization: bool = False,
        on_required: Callable[[SignInRequired], None] | None = None,
        on_step_up: Callable[[ScopeChallenge], None] | None = None,
        also_scopes: list[str] | None = None,
    ) -> None:
        redirect = interaction.redirect_uri if interaction is not None else f"http://127.0.0.1{CALLBACK_PATH}"
        self.server = server
        self.file = file
        self.settings = settings
        self.storage = Storage(record or SignIn(server=server, url=url), file if interaction is None else None)
        self.interaction = interaction
        self.static_authorization = static_authorization
        """The config sends its own `Authorization` header: a 401 is about it, not a sign-in."""
        self.on_required = on_required
        """Told of each `SignInRequired` before it is raised (the connection's calls report it)."""
        self.on_step_up = on_step_up
        """Told of each 403 `insufficient_scope`, which passes on as that request's answer."""
        self.also_scopes = also_scopes or []
        """Scopes a sign-in asks for beyond the configured (or the server's) ones: those the server asked
        for since the last sign-in, and those granted then."""
        self.looked: list[_Looked] = []
        self._stamp: tuple[int, int, int] | None = None
        self._looked_at = 0.0
        """When the sign-in's file was last looked at (`time.monotonic`), by `_file_changed`."""
        self._id_token: str | None = None
        super().__init__(
            url,
            client_metadata(settings, redirect),
            self.storage,
            redirect_handler=self._show if interaction is not None else None,
            callback_handler=interaction.wait_for_callback if interaction is not None else None,
        )
        # The SDK's context, every field carried over, with the early expiry of `_Context`.
        self.context = _Context(**{f.name: getattr(self.context, f.name) for f in fields(OAuthContext)})

    # -- what is read

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, with every answer it reads held to `MAX_OAUTH_ANSWER_BYTES`.

        That is each answer to a request of its own (metadata, registration, token, and the redirects
        on the way) and an answer refusing `request`. The answer that grants `request` is the MCP
        stream itself, left to the transport.
        """
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    outgoing.headers["accept-encoding"] = "identity"
                    # The SDK builds its requests bare: without this they would wait on the network forever.
                    outgoing.extensions.setdefault("timeout", httpx2.Timeout(OAUTH_REQUEST_TIMEOUT).as_dict())
                response = yield outgoing
                if outgoing is not request or response.status_code in (401, 403):
                    self._bound(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _bound(self, response: httpx2.Response) -> None:
        encoded = response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
        limit = MAX_ENCODED_ANSWER_BYTES if encoded else MAX_OAUTH_ANSWER_BYTES
        url = response.request.url.copy_with(query=None)

        def too_long() -> Exception:
            said = f"more than {limit} bytes{' compressed' if encoded else ''}"
            message = (
                f"{self.server}'s OAuth answer from {url} (HTTP {response.status_code}) is {said}, far "
                "more than any real one; the gateway stopped reading it."
            )
            if self.interaction is not None:
                return SignInFailed(
                    f"{message} Ask the server's operator to fix that endpoint; nothing was kept.",
                    server=self.server,
                )
            return ServerUnavailable(f"{message} It tries again shortly.", server=self.server)

        declared = response.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise too_long()
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _BoundedStream(stream, limit, too_long)

    # -- what is kept

    async def _initialize(self) -> None:
        if self.interaction is None and self.file is not None:
            self._stamp = self.file.stamp()
            self._looked_at = time.monotonic()
            # Without a person the file is the sign-in: gone (`auth logout`) or damaged, there is none.
            kept = await anyio.to_thread.run_sync(self.file.load)
            self.storage.record = kept or SignIn(server=self.server, url=self.storage.record.url)
        record = self.storage.record
        context = self.context
        context.current_tokens = record.token if record.ended is None else None
        context.token_expiry_time = record.expires_at
        context.client_info = await self.storage.get_client_info()
        settings = self.settings
        client = context.client_info
        # A configured client's secret is read from the config, never kept: rotating it there is enough.
        if (
            client is not None
            and settings is not None
            and settings.client_secret
            and settings.client_id == client.client_id
        ):
            client.client_secret = settings.client_secret
        if record.authorization_server:
            context.oauth_metadata = OAuthMetadata.model_validate(record.authorization_server)
        if record.resource_metadata:
            prm = ProtectedResourceMetadata.model_validate(record.resource_metadata)
            context.protected_resource_metadata = prm
            if prm.authorization_servers:
                context.auth_server_url = str(prm.authorization_servers[0])
        self._initialized = True

    def _changed_on_disk(self) -> bool:
        return self.file is not None and self.interaction is None and self.file.stamp() != self._stamp

    def _file_changed(self) -> bool:
        """Whether the sign-in's file changed since it was read, looked at no more than once a `FILE_LOOK`:
        a sign-out (or a sign-in) in another process then takes effect here within that time, for one
        `stat` a second rather than one a request."""
        if self.file is None or self.interaction is not None:
            return False
        now = time.monotonic()
        if now - self._looked_at < FILE_LOOK:
            return False
        self._looked_at = now
        return self.file.stamp() != self._stamp

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if response.status_code in (200, 201):
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                body = json.loads(await response.aread())
                if isinstance(body, dict) and isinstance(body.get("id_token"), str):  # pyright: ignore[reportUnknownMemberType]
                    self._id_token = str(body["id_token"])  # pyright: ignore[reportUnknownArgumentType]
        await super()._handle_token_response(response)

    def signed_in_record(self) -> SignIn:
        """What to keep after a sign-in completed: the tokens and what was discovered on the way."""
        record = self.storage.record
        context = self.context
        if context.oauth_metadata is not None:
            record.authorization_server = context.oauth_metadata.model_dump(mode="json", exclude_none=True)
        if context.protected_resource_metadata is not None:
            prm = context.protected_resource_metadata
            record.resource_metadata = prm.model_dump(mode="json", exclude_none=True)
        token = record.token
        record.subject = subject_of(self._id_token, token.access_token if token else None)
        record.signed_in_at = time.time()
        record.ended = None
        return record

    # -- signing in, with a person

    async def _show(self, url: str) -> None:
        self._require_metadata()
        assert self.interaction is not None
        await self.interaction.show_url(url)

    def _require_metadata(self) -> None:
        """Stop before registering or authorizing when the server published no OAuth metadata at all."""
        context = self.context
        if context.protected_resource_metadata is not None or context.oauth_metadata is not None:
            return
        lines = (f"\n  - {seen.what} at {seen.url}: {seen.problem or 'found'}" for seen in self.looked)
        looked = "".join(dict.fromkeys(lines))  # (the challenge's URL may also be a well-known one)
        raise SignInFailed(
            f"{self.server} asks for a sign-in (it answered 401) but publishes no usable OAuth metadata, so "
            f"there is no authorization server to sign in with. Looked for:{looked or ' nothing (no request made)'}"
            "\nAsk its operator to publish its protected-resource metadata (RFC 9728) and its authorization "
            "server's metadata (RFC 8414); if it takes an API key instead, put it in the server's `headers`.",
            server=self.server,
        )

    async def _note(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """Note what a metadata request found, for `_require_metadata`'s message."""
        path = request.url.path
        if "/.well-known/" not in path:
            return
        protected = "oauth-protected-resource" in path
        what = "protected-resource metadata (RFC 9728)" if protected else "authorization-server metadata (RFC 8414)"
        model = ProtectedResourceMetadata if protected else OAuthMetadata
        problem: str | None = None
        if response.status_code != 200:
            problem = f"HTTP {response.status_code}"
        else:
            body = await response.aread()
            try:
                model.model_validate_json(body)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                problem = f"not valid metadata ({first['msg']}{f' at {where}' if where else ''})"
        self.looked.append(_Looked(what, str(request.url), problem))

    def _chosen_scope(self, offered: str | None) -> str | None:
        """The scope a sign-in asks for: the configured scopes, else what the SDK chose from the server's
        challenge and metadata (`offered`); with `also_scopes` either way."""
        configured = self.settings.scopes if self.settings is not None else None
        chosen = scope_union(configured or (offered.split() if offered else None), self.also_scopes)
        return " ".join(chosen) or None

    def _with_chosen_scope(self, registration: httpx2.Request) -> httpx2.Request:
        """`registration` (the SDK's RFC 7591 request) asking for the chosen scope instead of the SDK's."""
        try:
            body: object = json.loads(registration.content)
        except (ValueError, httpx2.RequestNotRead):
            return registration
        if not isinstance(body, dict) or "redirect_uris" not in body:
            return registration  # not a registration: the token request is a form
        metadata = self.context.client_metadata
        metadata.scope = self._chosen_scope(metadata.scope)
        asked: dict[str, Any] = dict(cast("dict[str, Any]", body))
        if metadata.scope is None:
            asked.pop("scope", None)
        else:
            asked["scope"] = metadata.scope
        headers = [(k, v) for k, v in registration.headers.multi_items() if k.lower() != "content-length"]
        return httpx2.Request(
            registration.method, registration.url, headers=headers, json=asked, extensions=registration.extensions
        )

    async def _perform_authorization(self) -> httpx2.Request:
        metadata = self.context.client_metadata
        metadata.scope = self._chosen_scope(metadata.scope)
        return await super()._perform_authorization()

    async def _interactive_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        inner = super()._auth_flow(request)
        try:
            outgoing = await inner.__anext__()
            while True:
                if outgoing is not request and "/.well-known/" not in outgoing.url.path and self.looked:
                    self._require_metadata()  # about to register a client, or to ask for a token
                if outgoing is not request and outgoing.method == "POST":
                    outgoing = self._with_chosen_scope(outgoing)
                response = yield outgoing
                if outgoing is not request:
                    await self._note(outgoing, response)
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await inner.aclose()

    # -- using a sign-in, without a person

    def _refresh_due(self) -> bool:
        return not self.context.is_token_valid() and self.context.can_refresh_token()

    def _challenged(self, response: httpx2.Response) -> bool:
        # Only a 401 is about the sign-in. A 403 asking for more scope (`insufficient_scope`) is passed on
        # as the server's answer to that request: refreshing cannot widen the scope, and the rest works.
        return response.status_code == 401

    def _authorize(self, request: httpx2.Request) -> str | None:
        """Put the access token on `request` when one is held and valid; return it."""
        if self.static_authorization or not self.context.is_token_valid():
            return None
        tokens = self.context.current_tokens
        assert tokens is not None
        request.headers["Authorization"] = f"Bearer {tokens.access_token}"
        return tokens.access_token

    async def _refreshed(self, response: httpx2.Response) -> bool:
        """Take a refresh's answer: True with new tokens, False when the authorization server refused
        the sign-in (it is then ended); `ServerUnavailable` when the answer says nothing about the sign-in."""
        held = self.context.current_tokens
        refused = await _refusal(response)
        if refused is None and response.status_code != 200:
            # The authorization server's (or the network's) trouble, not the sign-in's: the tokens stay.
            raise ServerUnavailable(
                f"Server {self.server!r} could not refresh its sign-in: its authorization server answered "
                f"HTTP {response.status_code}; the gateway tries again shortly.",
                server=self.server,
            )
        if refused is None:
            if await self._handle_refresh_response(response):
                if self.file is not None:
                    self._stamp = self.file.stamp()  # written by this process: not a change to take in
                return True
            self.context.current_tokens = held  # (the SDK cleared them) an answer not a token: try again later
            raise ServerUnavailable(
                f"Server {self.server!r} could not refresh its sign-in: its authorization server's answer is "
                "not a bearer token; the gateway tries again shortly.",
                server=self.server,
            )
        await self._end(held, f"its authorization server refused to refresh the sign-in ({refused})")
        return False

    async def _asked_for_more(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """The server wants more scopes for `request`: note them for the next sign-in, and tell the connection.

        The 403 itself passes on as the request's answer: refreshing cannot widen a grant, only a person
        can, and the server's other requests still work.
        """
        if self.static_authorization:
            return
        scopes = (extract_scope_from_www_auth(response) or "").split()
        if self.file is not None and scopes:
            # Under the sign-in's lock and read again: a refresh's rotated tokens are never written over.
            with contextlib.suppress(TimeoutError, OSError):
                async with self.file.locked():
                    kept = await anyio.to_thread.run_sync(self.file.load)
                    if kept is not None and kept.ended is None:
                        missing = [scope for scope in scopes if scope not in kept.scopes]
                        wanted = scope_union(kept.wanted_scopes, missing)
                        if wanted != kept.wanted_scopes:
                            kept.wanted_scopes = wanted
                            await anyio.to_thread.run_sync(self.file.save, kept)
                            self._stamp = self.file.stamp()
                        self.storage.record.wanted_scopes = kept.wanted_scopes
        if self.on_step_up is not None:
            described = extract_field_from_www_auth(response, "error_description")
            description = mask_text(described) if described else None
            self.on_step_up(ScopeChallenge(_request_name(request), scopes, description))

    async def _end(self, held: OAuthToken | None, reason: str) -> None:
        """The sign-in no longer works: say so in its file (unless another process signed in anew meanwhile)."""
        self.context.clear_tokens()
        self.storage.record.ended = reason
        if self.file is None:
            return
        kept = await anyio.to_thread.run_sync(self.file.load)
        if kept is None or kept.ended is not None:
            return
        token = kept.token
        if held is not None and token is not None and token.access_token != held.access_token:
            return
        kept.ended = reason
        try:
            await anyio.to_thread.run_sync(self.file.save, kept)
        except OSError as exc:
            # Ended in memory all the same: this process asks for a new login either way.
            logger.error(
                "%s: that its sign-in ended cannot be written to %s (%s); make that directory writable.",
                self.server,
                self.file.path,
                exc.strerror or exc,
            )
            return
        self._stamp = self.file.stamp()

    def _sign_in_required(self, response: httpx2.Response, reason: str | None) -> Exception:
        if self.static_authorization:
            return ServerUnavailable(
                f"Server {self.server!r} answered HTTP {response.status_code} to the `Authorization` header in "
                "its `headers`: the credential there is wrong or expired. Replace it, or remove the header and "
                f"sign in with `toolscout auth login {self.server}` if the server uses OAuth.",
                server=self.server,
            )
        if reason is None and self.storage.record.ended is not None:
            reason = self.storage.record.ended
        if reason is None and not self.storage.record.tokens and self.file is not None and self.file.damaged:
            reason = f"its kept sign-in cannot be used: {self.file.damaged}"
        if reason is None and not self.storage.record.tokens:
            reason = f"no sign-in is kept for it; {_challenge_reason(response)}"
        error = SignInRequired.for_server(self.server, reason or _challenge_reason(response))
        if self.on_required is not None:
            self.on_required(error)
        return error

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self.interaction is not None:
            inner = self._interactive_flow(request)
            try:
                outgoing = await inner.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await inner.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await inner.aclose()
        reason: str | None = None
        if self._initialized and not self._refresh_due() and not self._file_changed():
            # Every request of a connection comes here: no lock, and the file looked at once a second at
            # most, unless a refresh is due.
            sent = self._authorize(request)
        else:
            async with self.context.lock:
                if not self._initialized or self._changed_on_disk():
                    await self._initialize()
                if self._refresh_due():
                    # One refresh at a time across processes, the file read again under the lock: a refresh
                    # another process made meanwhile is taken instead of sending a rotated refresh token twice.
                    assert self.file is not None
                    async with self.file.locked():
                        if self._changed_on_disk():
                            await self._initialize()
                        if self._refresh_due():
                            answer = yield await self._refresh_token()
                            await self._refreshed(answer)
                sent = self._authorize(request)
        response = yield request
        if response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope":
            await self._asked_for_more(request, response)
            return
        if not self._challenged(response):
            return
        retry = False
        async with self.context.lock:
            if self._changed_on_disk():
                await self._initialize()
            held = self.context.current_tokens
            if held is not None and held.access_token != sent and self.context.is_token_valid():
                retry = True  # signed in anew, or refreshed by another request, since it was sent
            elif self.context.can_refresh_token() and not self.static_authorization:
                assert self.file is not None
                async with self.file.locked():  # as above
                    if self._changed_on_disk():
                        await self._initialize()
                    current = self.context.current_tokens
                    if current is None or current.access_token == sent:
                        self.context.token_expiry_time = 0  # the server says it is spent, whatever its expiry said
                    if self._refresh_due():
                        answer = yield await self._refresh_token()
                        await self._refreshed(answer)
                current = self.context.current_tokens
                retry = current is not None and current.access_token != sent and self.context.is_token_valid()
            elif held is not None and not self.static_authorization:
                reason = "the server refused its access token, and there is no refresh token to get another"
                await self._end(held, reason)
        if retry:
            self._authorize(request)
            response = yield request
            if not self._challenged(response):
                return
        raise self._sign_in_required(response, reason)


_SIGN_IN_REFUSED = {"invalid_grant", "invalid_client", "unauthorized_client", "invalid_request", "invalid_scope"}
"""The token endpoint's errors (RFC 6749 5.2) that say the sign-in itself no longer works."""


async def _refusal(response: httpx2.Response) -> str | None:
    """How a refresh's answer refuses the sign-in (`invalid_grant, HTTP 400`), or None when it does not:
    a 400 or 401 naming one of RFC 6749's token errors, or saying nothing readable."""
    if response.status_code not in (400, 401):
        return None
    try:
        body = json.loads(await response.aread())
    except (ValueError, UnicodeDecodeError):
        return f"HTTP {response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(error, str):
        return f"HTTP {response.status_code}"
    return f"{error}, HTTP {response.status_code}" if error in _SIGN_IN_REFUSED else None


def _request_name(request: httpx2.Request) -> str | None:
    try:
        return request_name(request.content)
    except httpx2.RequestNotRead:
        return None


def _challenge_reason(response: httpx2.Response) -> str:
    described = extract_field_from_www_auth(response, "error_description")
    said = f": {described}" if described else ""
    return mask_text(f"the server answered HTTP {response.status_code}{said}")


def upstream_oauth(
    server: str,
    url: str,
    settings: OAuthSettings | None,
    *,
    static_authorization: bool = False,
    on_required: Callable[[SignInRequired], None] | None = None,
    on_step_up: Callable[[ScopeChallenge], None] | None = None,
    directory: Path | None = None,
) -> httpx2.Auth:
    """The auth of a remote upstream's connection: the kept sign-in, refreshed without asking anyone."""
    file = SignInFile.of(server, url, directory)
    return UpstreamOAuth(
        server,
        url,
        settings,
        file,
        static_authorization=static_authorization,
        on_required=on_required,
        on_step_up=on_step_up,
    )
