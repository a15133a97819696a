"""Signing in to remote upstreams protected by OAuth 2.1, as the MCP authorization spec defines it.

A remote server that answers 401 with `WWW-Authenticate: Bearer` wants an access token. The gateway
gets one the way the spec says, through the official SDK's OAuth client (`OAuthClientProvider`):
the protected-resource metadata (RFC 9728) names the authorization server, whose metadata
(RFC 8414) names its endpoints; the client registers dynamically (RFC 7591) unless the config names a
`clientId`; the user approves in a browser (the authorization-code grant with PKCE and the `resource`
indicator of RFC 8707), and the redirect comes back to a loopback port (`LoopbackCallback`).

Signing in is what `toolscout auth login` does (`sign_in`); it is the only place a person is asked.
Everything else that reaches the server (`serve`, `execute`, `list --refresh`, `doctor`) uses the
stored sign-in without asking (`UpstreamOAuth` with no `Interaction`): it sends the access token,
refreshes it shortly before it expires and again when the server answers 401, and when a refresh
is refused raises `SignInRequired`, which makes the server "needs login" with the command to run
while the other servers carry on.

A sign-in is kept per server and URL (`SignInFile`: a URL that changes never receives another
server's token) in the user's state directory, readable by the user only, written whole or not at
all. Tokens never reach a log, an error, the audit log or `config show`: only the subject, expiry and
scopes are shown.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolscout.config.locations import user_log_dir
from toolscout.errors import ServerUnavailable

if TYPE_CHECKING:
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthToken,
    )

    from toolscout.config.oauth import OAuthSettings

logger = logging.getLogger(__name__)

SIGN_IN_DIR = "sign-ins"
"""The directory, under the user's state directory, where sign-ins are kept."""
REFRESH_MARGIN = 60.0
"""Seconds before its expiry an access token is refreshed (at most a tenth of its lifetime)."""
CALLBACK_PATH = "/callback"
LOCK_WAIT = 30.0
"""The longest a refresh waits for another process's refresh of the same sign-in."""
LOCK_POLL = 0.05
"""Seconds between two tries of a sign-in's lock held by another process."""


# ---------------------------------------------------------------------------------------------
# What is kept for one server


class SignIn(BaseModel):
    """Everything kept for one server's sign-in: tokens, the registered client, the discovered metadata."""

    model_config = ConfigDict(extra="ignore")

    server: str
    url: str
    tokens: dict[str, Any] | None = None
    """The token response (`OAuthToken`), kept as JSON so this module imports the SDK only when used."""
    expires_at: float | None = None
    """When the access token expires (epoch seconds); None: the server did not say."""
    client: dict[str, Any] | None = None
    """The registered (or configured) client (`OAuthClientInformationFull`)."""
    authorization_server: dict[str, Any] | None = None
    """The authorization server's metadata (`OAuthMetadata`): its token and revocation endpoints."""
    resource_metadata: dict[str, Any] | None = None
    """The server's protected-resource metadata (`ProtectedResourceMetadata`)."""
    subject: str | None = None
    """Whom the tokens were issued to, when the server says (an ID token's or a JWT access token's claims)."""
    signed_in_at: float | None = None
    ended: str | None = None
    """Why the sign-in ended (a refresh was refused): the server needs a new login."""
    wanted_scopes: list[str] = Field(default_factory=list[str])
    """Scopes the server asked for since this sign-in (a 403 `insufficient_scope` to some request): the
    next `auth login` asks for them as well as those granted, so that widening one tool keeps the others."""

    def check(self) -> None:
        """Raise `ValidationError` unless the tokens, client and metadata kept are what the SDK can read."""
        from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

        kept: list[tuple[Any, dict[str, Any] | None]] = [
            (OAuthToken, self.tokens),
            (OAuthClientInformationFull, self.client),
            (OAuthMetadata, self.authorization_server),
            (ProtectedResourceMetadata, self.resource_metadata),
        ]
        for model, value in kept:
            if value is not None:
                model.model_validate(value)

    @property
    def token(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        return OAuthToken.model_validate(self.tokens) if self.tokens else None

    @property
    def scopes(self) -> list[str]:
        scope = (self.tokens or {}).get("scope")
        return str(scope).split() if scope else []

    @property
    def refreshable(self) -> bool:
        return bool((self.tokens or {}).get("refresh_token")) and self.client is not None


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60] or "server"


class SignInFile:
    """One server's sign-in on disk: JSON readable by the user only, replaced whole on every write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.damaged: str | None = None
        """Why the file could not be read as a sign-in, when the last `load` found one it could not."""
        self._told_exposed = False

    @classmethod
    def of(cls, server: str, url: str, directory: Path | None = None) -> SignInFile:
        """The file of `server` at `url` (another URL is another file: a token never follows a changed URL)."""
        digest = hashlib.sha256(url.encode()).hexdigest()[:12]
        return cls((directory or sign_in_dir()) / f"{_slug(server)}-{digest}.json")

    def earlier(self, server: str) -> list[SignInFile]:
        """The sign-ins kept for `server` at other URLs than this file's (the server moved since)."""
        directory = self.path.parent
        stem = self.path.name.rsplit("-", 1)[0]
        found: list[SignInFile] = []
        for path in sorted(directory.glob(f"{stem}-*.json")) if directory.is_dir() else []:
            # Only its `server` is read: a damaged file of this server is found as well, and forgotten.
            with contextlib.suppress(OSError, ValueError, AttributeError):  # (not a JSON object)
                named: object = json.loads(path.read_text(encoding="utf-8")).get("server")
                if path != self.path and named == server:  # another name with the same slug is not this one
                    found.append(SignInFile(path))
        return found

    def check_writable(self) -> None:
        """Raise `OSError` unless a sign-in can be written here (its directory made, a file created in it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        probe = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.probe")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()

    def exposed(self) -> str | None:
        """What to do when others than the user may read or write the file (its mode loosened by hand,
        or copied with another); None when it is the user's only, absent, or on a system without modes."""
        if os.name != "posix":
            return None
        try:
            mode = self.path.stat().st_mode
        except OSError:
            return None
        if not mode & 0o077:
            return None
        can = " or ".join(verb for verb, bits in (("read", 0o044), ("changed", 0o022), ("run", 0o011)) if mode & bits)
        return (
            f"{self.path} can be {can} by others than you (mode {mode & 0o777:04o}), and it holds this server's "
            f"tokens: run `chmod 600 {self.path}`"
        )

    def stamp(self) -> tuple[int, int, int] | None:
        """What changes whenever the file is written (None: there is no file)."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def load(self) -> SignIn | None:
        """The kept sign-in, or None when there is none (or it cannot be read: the user signs in again)."""
        self.damaged = None
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.damaged = f"cannot read {self.path}: {exc.strerror or exc}"
            logger.warning("the sign-in kept for a server: %s", self.damaged)
            return None
        try:
            record = SignIn.model_validate_json(text)
            record.check()
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            self.damaged = f"{self.path} is damaged ({first['msg']}{f' at {where}' if where else ''})"
            logger.warning("the sign-in kept for a server: %s; sign in again", self.damaged)
            return None
        exposed = None if self._told_exposed else self.exposed()
        if exposed is not None:
            # Said once by each connection's reader of the file (a new one on every reconnection), not at
            # every change the file goes through while the connection lasts.
            self._told_exposed = True
            logger.warning("the sign-in kept for %s: %s", record.server, exposed)
        return record

    def save(self, record: SignIn) -> None:
        """Write `record`: to a new file readable by the user only, then renamed over the old one."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = record.model_dump_json(indent=2).encode()
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise

    def delete(self) -> bool:
        """Forget the sign-in; False when there was none."""
        with contextlib.suppress(FileNotFoundError):
            self._lock_path.unlink()
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    @property
    def _lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    @contextlib.asynccontextmanager
    async def locked(self, within: float = LOCK_WAIT) -> AsyncGenerator[None]:
        """Hold the sign-in's lock across processes for the block: one refresh at a time, so that a refresh
        token the server rotates is never sent twice (a second use ends the sign-in on many servers).

        Waits at most `within` seconds (`TimeoutError`); without `fcntl` (Windows) there is no lock.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            # Refreshing without the lock could spend a rotated refresh token twice: not refreshed at all.
            raise ServerUnavailable(
                f"The sign-in kept at {self.path} cannot be refreshed: its lock {self._lock_path.name} cannot be "
                f"opened ({exc.strerror or exc}). Make {self.path.parent} writable; the gateway tries again shortly."
            ) from None
        try:
            with anyio.fail_after(within):
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await anyio.sleep(LOCK_POLL)  # held by another process's refresh, which is an HTTP round trip
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def sign_in_dir() -> Path:
    """Where sign-ins are kept: `sign-ins/` in the user's state directory (`$TOOLSCOUT_STATE_DIR` replaces it)."""
    return user_log_dir() / SIGN_IN_DIR


def subject_of(*tokens: str | None) -> str | None:
    """Whom a token was issued to, read from the claims of the first JWT among `tokens`, for showing only.

    Nothing is verified: the user is told whom the server says they are; the server checks the token.
    """
    for token in tokens:
        parts = (token or "").split(".")
        if len(parts) != 3:
            continue
        try:
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(claims, dict):
            for key in ("email", "preferred_username", "upn", "name", "sub"):
                value = claims.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(value, str) and value:
                    return value
    return None


# ---------------------------------------------------------------------------------------------
# The SDK's OAuth client, with the gateway's storage and without a person unless signing in


class Storage:
    """The SDK's `TokenStorage` over one `SignIn`; written to its file on every change when it has one."""

    def __init__(self, record: SignIn, file: SignInFile | None) -> None:
        self.record = record
        self.file = file

    async def get_tokens(self) -> OAuthToken | None:
        return self.record.token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = self.record
        record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        record.expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        record.ended = None
        if self.file is None:
            return
        try:
            await anyio.to_thread.run_sync(self.file.save, record)
        except OSError as exc:
            # The refresh token it replaces is spent: dropping the new one too would end the sign-in for
            # everyone. Kept in memory, it serves this process; the log says what to fix.
            logger.error(
                "%s: its refreshed sign-in cannot be kept at %s (%s); it serves this process until it expires. "
                "Make that directory writable, or other processes will need `toolscout auth login %s`.",
                record.server,
                self.file.path,
                exc.strerror or exc,
                record.server,
            )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        return OAuthClientInformationFull.model_validate(self.record.client) if self.record.client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.record.client = client_info.model_dump(mode="json", exclude_none=True)
        if self.file is not None:
            await anyio.to_thread.run_sync(self.file.save, self.record)


@dataclass
class Interaction:
    """How `auth login` reaches the person signing in: where to send the browser, and how its answer comes back."""

    redirect_uri: str
    show_url: Callable[[str], Awaitable[None]]
    wait_for_callback: Callable[[], Awaitable[AuthorizationCodeResult]]


@dataclass(frozen=True)
class ScopeChallenge:
    """A server's 403 `insufficient_scope` to one request: which request it was, and what the server asked."""

    request: str | None
    """The request as `request_name` names it (None: a body that is not one JSON-RPC request)."""
    scopes: list[str]
    description: str | None


_NAMED_BY = {
    "tools/call": (("name",),),
    "prompts/get": (("name",),),
    "resources/read": (("uri",),),
    # The prompt or resource template, then the argument completed.
    "completion/complete": (("ref", "name|uri"), ("argument", "name")),
}
"""Where in its params each request that is about one item names it: one path of keys per word
(`a|b`: whichever of the two the params have)."""


def request_name(body: bytes) -> str | None:
    """A JSON-RPC request body's method and, for a request about one item, that item.

    `tools/call add`, `prompts/get summary`, `resources/read notes://today`, `completion/complete
    summary city`; `resources/list` for a request about no one item. These are the words
    `Upstream.call_tool` and `Upstream.request` name their requests with. None when the body is not
    one JSON-RPC request.
    """
    try:
        sent: object = json.loads(body) if body else None
    except ValueError:
        return None
    if not isinstance(sent, dict):
        return None
    request = cast("dict[str, Any]", sent)
    method = request.get("method")
    if not isinstance(method, str) or method not in _NAMED_BY:
        return method if isinstance(method, str) else None
    words: list[str] = []
    for path in _NAMED_BY[method]:
        found: object = request.get("params")
        for key in path:
            found = _first(found, key.split("|"))
        if not isinstance(found, str):
            return method
        words.append(found)
    return " ".join([method, *words])


def _first(params: object, keys: list[str]) -> object:
    """The value of the first of `keys` that `params` (a JSON object, or not) has; None when none."""
    if not isinstance(params, dict):
        return None
    values = cast("dict[str, Any]", params)
    return next((values[key] for key in keys if key in values), None)


def scope_union(*scopes: Iterable[str] | None) -> list[str]:
    """The scopes of every argument, each once, in the order first named."""
    return list(dict.fromkeys(scope for group in scopes if group for scope in group))


def sends_own_authorization(headers: Mapping[str, str]) -> bool:
    """Whether a server entry's `headers` carry an `Authorization` of their own, sent instead of any sign-in."""
    return any(key.lower() == "authorization" for key in headers)


def client_metadata(settings: OAuthSettings | None, redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    scope = " ".join(settings.scopes) if settings is not None and settings.scopes else None
    return OAuthClientMetadata(
        client_name="toolscout",
        redirect_uris=[redirect_uri],  # pyright: ignore[reportArgumentType]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
    )


def configured_client(settings: OAuthSettings, redirect_uri: str) -> dict[str, Any] | None:
    """The client a config names (`clientId`, `clientSecret`), as stored; None when it names none."""
    if not settings.client_id:
        return None
    method = "client_secret_post" if settings.client_secret else "none"
    client: dict[str, Any] = {
        "client_id": settings.client_id,
        "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": method,
        "grant_types": ["authorization_code", "refresh_token"],
    }
    if settings.client_secret:
        client["client_secret"] = settings.client_secret
    return client
