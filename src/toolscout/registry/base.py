"""The `Registry` seam: issued tokens, servers registered at run time, and callback tools, each in a
namespace (a run's id), each until it expires; and how each is kept as JSON.

Tokens are stored by a hash of their secret only (`secret_hash`): the secret is shown once, when it is
issued, and a lookup hashes what a request presents. The embedded default keeps everything in SQLite
(sqlite.py); a shared one (Redis) lets the replicas of a gateway share it. Every method is async so
that either fits, and none raises for an unknown name: it answers None or False.

An issued token is `ts_` and the URL-safe base64 of 32 random bytes followed by a 16-byte tag: the
HMAC-SHA256 of those random bytes under the registry's own key (`Registry.token_key`, made on first
use and read back, so that every replica and the command line share one). A gateway that has read
the key checks the tag first: a credential whose tag does not verify was not issued by this registry
and is refused with no query. The tag is a filter, not the credential: a token whose tag verifies is
still looked up (its expiry and revocation decide), so someone who could read the key from the
registry's store gains nothing but the lookup a forged token used to cost. Tokens issued before tags
(`ts_` and 43 characters, 32 random bytes) are `legacy`: no new ones are issued, and a gateway knows
which of them exist from the registry when it starts.

The module reads top to bottom: the token's secret and its tag, the records, the `Registry` protocol
and the optional abilities a shared registry adds, and last the stored JSON bodies every backend keeps.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

from toolscout.config.scopes import Scope

TOKEN_PREFIX = "ts_"
KEY_BYTES = 32
RANDOM_BYTES = 32
TAG_BYTES = 16
TAGGED_CHARS = (RANDOM_BYTES + TAG_BYTES) * 4 // 3
"""64: the base64 of 48 bytes has no padding."""
LEGACY_CHARS = 43
"""`secrets.token_urlsafe(32)`: what tokens issued before tags carry after `ts_`."""

Shape = Literal["tagged", "legacy"]


def new_key() -> str:
    """Return a fresh tagging key, as stored (hex)."""
    return secrets.token_hex(KEY_BYTES)


def _tag(key: bytes, random: bytes) -> bytes:
    return hmac.new(key, random, hashlib.sha256).digest()[:TAG_BYTES]


def shape(credential: str) -> Shape | None:
    """Return which kind of issued token `credential` could be by its shape alone (None: none)."""
    if not credential.startswith(TOKEN_PREFIX):
        return None
    length = len(credential) - len(TOKEN_PREFIX)
    return "tagged" if length == TAGGED_CHARS else "legacy" if length == LEGACY_CHARS else None


def tag_verifies(credential: str, key: bytes) -> bool:
    """Whether a tagged-shape `credential` carries the tag `key` gives its random part."""
    try:
        raw = base64.urlsafe_b64decode(credential.removeprefix(TOKEN_PREFIX).encode())
    except (binascii.Error, ValueError):
        return False
    if len(raw) != RANDOM_BYTES + TAG_BYTES:
        return False
    return hmac.compare_digest(_tag(key, raw[:RANDOM_BYTES]), raw[RANDOM_BYTES:])


DEFAULT_REGISTRATION_TTL = 3600.0
"""A registration's life unless it says otherwise: one hour."""


def new_secret(key: bytes) -> str:
    """Return a fresh token secret: `ts_`, 256 random bits and their tag under the registry's `key`."""
    random = secrets.token_bytes(RANDOM_BYTES)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(random + _tag(key, random)).decode()


def secret_hash(secret: str) -> str:
    """Return what is stored of a secret. The secret is 256 random bits (or an operator's key), so one round
    of SHA-256 is as good as a slow hash here, and keeps a request's lookup cheap."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class TokenRecord:
    """An issued token, as stored: never its secret."""

    id: str
    namespace: str
    servers: tuple[str, ...]
    tools: tuple[Any, ...] = ()
    """Tool rules narrowing `servers` (pattern strings or toolRules entries, as given)."""
    pinned_tools: tuple[str, ...] = ()
    label: str | None = None
    expires_at: float | None = None
    """Seconds since the epoch; None: never."""
    created_at: float = 0.0
    requests_per_minute: int | None = None
    secret_hash: str = field(default="", repr=False)
    tagged: bool = False
    """Whether its secret carries a tag (every token issued since tags; False: issued before them)."""
    can_register: bool = False
    """Whether its holder may register servers and callback tools into its own namespace, and issue
    tokens for it (the registering side of a run's pipeline); never into another, nor the global one."""

    def scope(self) -> Scope:
        """Return what the holder may see and do."""
        return Scope.of(
            namespace=self.namespace,
            servers=self.servers,
            tools=self.tools,
            pinned_tools=self.pinned_tools,
            label=self.label,
        )

    def expired(self, now: float) -> bool:
        """Whether it has expired by `now` (seconds since the epoch)."""
        return self.expires_at is not None and now >= self.expires_at

    def public(self) -> dict[str, Any]:
        """The API's view (`GET /api/v1/tokens`): everything but the secret and its hash."""
        out: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "namespace": self.namespace,
            "servers": list(self.servers),
            "expiresAt": self.expires_at,
        }
        if self.tools:
            out["tools"] = list(self.tools)
        if self.pinned_tools:
            out["pinnedTools"] = list(self.pinned_tools)
        if self.requests_per_minute is not None:
            out["requestsPerMinute"] = self.requests_per_minute
        if self.can_register:
            out["canRegister"] = True
        return out


@dataclass(frozen=True)
class ServerRegistration:
    """An MCP endpoint registered at run time into a namespace, or the global one."""

    namespace: str | None
    """None: global (registered with an admin key), seen from every namespace."""
    name: str
    url: str
    transport: Literal["http", "sse"] = "http"
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    description: str | None = None
    expires_at: float | None = None
    created_at: float = 0.0
    tool_name: str | None = None
    """The name a run's pipeline gave it (`toolName`): its tools are `{tool_name}__{tool}` under
    `toolNames: registered`; None: its `name`."""
    server_id: str | None = None
    """Which server of a group it is (the pipeline's `serverId`), shown in the run's listing only."""

    def expired(self, now: float) -> bool:
        """Whether it has expired by `now` (seconds since the epoch)."""
        return self.expires_at is not None and now >= self.expires_at


@dataclass(frozen=True)
class ToolRegistration:
    """A single tool registered at run time: calling it POSTs its arguments to `callback_url`, which
    answers with an MCP tool result."""

    namespace: str | None
    name: str
    description: str
    input_schema: Mapping[str, Any]
    callback_url: str
    expires_at: float | None = None
    created_at: float = 0.0
    tool_name: str | None = None
    """The tool's name (a run's component registered as `toolName`); None: its `name`."""

    def expired(self, now: float) -> bool:
        """Whether it has expired by `now` (seconds since the epoch)."""
        return self.expires_at is not None and now >= self.expires_at


class Registry(Protocol):
    """Tokens, registered servers and registered tools, shared by whoever serves from it."""

    async def add_token(self, record: TokenRecord) -> None:
        """Store an issued token (its `secret_hash`, never the secret)."""
        ...

    async def token_key(self) -> bytes:
        """The key tagging this registry's tokens: made on first use, race-free (whoever stores one first
        wins and every caller reads that one back), then read once per instance."""
        ...

    async def token_by_hash(self, hashed: str) -> TokenRecord | None:
        """The token whose secret hashes to `hashed`, expired or not (the caller decides); None if none."""
        ...

    async def tokens(self) -> list[TokenRecord]:
        """Every token not yet swept, oldest first."""
        ...

    async def revoke_token(self, token_id: str) -> bool:
        """Forget a token; False if there was none by that id."""
        ...

    async def put_server(self, registration: ServerRegistration) -> None:
        """Register a server, replacing one of the same namespace and name."""
        ...

    async def remove_server(self, namespace: str | None, name: str) -> bool:
        """Forget a registered server; False if there was none by that name."""
        ...

    async def servers(self, namespace: str | None = None, *, every: bool = False) -> list[ServerRegistration]:
        """The servers of `namespace` (None: the global ones; `every`: all of them), by name."""
        ...

    async def put_tool(self, registration: ToolRegistration) -> None:
        """Register a callback tool, replacing one of the same namespace and name."""
        ...

    async def remove_tool(self, namespace: str | None, name: str) -> bool:
        """Forget a registered callback tool; False if there was none by that name."""
        ...

    async def tools(self, namespace: str | None = None, *, every: bool = False) -> list[ToolRegistration]:
        """The callback tools of `namespace` (None: the global ones; `every`: all of them), by name."""
        ...

    async def lookup(
        self, namespace: str | None, name: str
    ) -> tuple[ServerRegistration | None, ToolRegistration | None]:
        """The server and the callback tool registered as `name` in `namespace` (None where there is none):
        what a write checks its name against, without reading every registration."""
        ...

    async def counts(self, namespace: str | None, now: float) -> tuple[int, int]:
        """How many servers and tools together are registered in `namespace` (None: the global one), and
        in all namespaces, that have not expired by `now`: what the registration limits count (an expired
        one not swept yet takes no room, and a refusal costs no write)."""
        ...

    async def sweep(self, now: float) -> int:
        """Delete what expired before `now`; how many entries went."""
        ...

    async def version(self) -> int:
        """A number that changes whenever servers or tools are registered, removed or swept (a
        gateway polls it to learn that another process changed the registry)."""
        ...


@runtime_checkable
class ChangeFeed(Protocol):
    """A registry that tells its readers of each change as it happens (Redis's pub/sub), so that every
    replica acts on it at once rather than at its next poll of `version()`."""

    async def watch_changes(self, on_change: Callable[[str], None]) -> None:
        """Call `on_change(what)` for every change until cancelled (`what`: `servers`, `tools`, `sweep`,
        or `tokens:<id>` for a revoked token); reconnect by itself when the feed breaks."""
        ...


@runtime_checkable
class SharedRates(Protocol):
    """A registry that counts request rates for every replica at once (Redis): N replicas behind a
    balancer let a principal through at its `requestsPerMinute`, not N times that."""

    async def take(self, subject: str, per_minute: int) -> int | None:
        """Take one request from `subject`'s bucket (`requestsPerMinute`, a burst of as many): None if it
        may go ahead, else the seconds (at least 1) before one more would be let through."""
        ...


@runtime_checkable
class SharedClientState(Protocol):
    """A registry that keeps a client's state where every replica reads it (Redis): `dynamic` mode's
    loaded tools of an HTTP client that has no session (stateless serving, 2026-07-28)."""

    async def loaded_tools(self, client: str) -> list[tuple[str, str]] | None:
        """The `(server, tool)`s `client` loaded, in order; None when nothing is kept for it."""
        ...

    async def set_loaded_tools(self, client: str, tools: list[tuple[str, str]]) -> None:
        """Keep what `client` loaded (for a day after its last change)."""
        ...


@runtime_checkable
class SharedConfirmations(Protocol):
    """A registry through which the replicas of a gateway honour each other's confirmation ids (Redis):
    smart mode's key to sign them with, and the ids already spent (smart/confirmation.py)."""

    async def confirmation_key(self) -> bytes:
        """The key every replica signs confirmation ids with (made by the first that asks)."""
        ...

    async def spend_confirmation(self, nonce: str, ttl: float) -> bool:
        """Record confirmation `nonce` as spent for `ttl` seconds: True the first time, False after."""
        ...


def token_body(record: TokenRecord) -> dict[str, Any]:
    """Return a token's stored body: everything but its id, secret hash and expiry (kept beside it)."""
    return {
        "namespace": record.namespace,
        "servers": list(record.servers),
        "tools": list(record.tools),
        "pinnedTools": list(record.pinned_tools),
        "label": record.label,
        "createdAt": record.created_at,
        "requestsPerMinute": record.requests_per_minute,
        **({"tagged": True} if record.tagged else {}),
        **({"canRegister": True} if record.can_register else {}),
    }


def token_from(token_id: str, hashed: str, body: str, expires_at: float | None) -> TokenRecord:
    """Return the token a stored body holds, with what is kept beside it."""
    data = cast(dict[str, Any], json.loads(body))
    return TokenRecord(
        id=token_id,
        namespace=data["namespace"],
        servers=tuple(data["servers"]),
        tools=tuple(data.get("tools") or ()),
        pinned_tools=tuple(data.get("pinnedTools") or ()),
        label=data.get("label"),
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
        requests_per_minute=data.get("requestsPerMinute"),
        secret_hash=hashed,
        tagged=data.get("tagged") is True,
        can_register=data.get("canRegister") is True,
    )


def server_body(registration: ServerRegistration) -> dict[str, Any]:
    """Return a registered server's stored body: everything but its namespace, name and expiry."""
    return {
        "url": registration.url,
        "transport": registration.transport,
        "headers": dict(registration.headers),
        "description": registration.description,
        "createdAt": registration.created_at,
        **({"toolName": registration.tool_name} if registration.tool_name else {}),
        **({"serverId": registration.server_id} if registration.server_id else {}),
    }


def server_from(namespace: str, name: str, body: str, expires_at: float | None) -> ServerRegistration:
    """Return the registered server a stored body holds (the global namespace stored as "")."""
    data = cast(dict[str, Any], json.loads(body))
    return ServerRegistration(
        namespace=namespace or None,
        name=name,
        url=data["url"],
        transport=data.get("transport") or "http",
        headers=dict(data.get("headers") or {}),
        description=data.get("description"),
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
        tool_name=data.get("toolName"),
        server_id=data.get("serverId"),
    )


def tool_body(registration: ToolRegistration) -> dict[str, Any]:
    """Return a callback tool's stored body: everything but its namespace, name and expiry."""
    return {
        "description": registration.description,
        "inputSchema": dict(registration.input_schema),
        "callbackUrl": registration.callback_url,
        "createdAt": registration.created_at,
        **({"toolName": registration.tool_name} if registration.tool_name else {}),
    }


def tool_from(namespace: str, name: str, body: str, expires_at: float | None) -> ToolRegistration:
    """Return the callback tool a stored body holds (the global namespace stored as "")."""
    data = cast(dict[str, Any], json.loads(body))
    return ToolRegistration(
        namespace=namespace or None,
        name=name,
        description=data.get("description") or "",
        input_schema=data.get("inputSchema") or {"type": "object"},
        callback_url=data["callbackUrl"],
        expires_at=expires_at,
        created_at=data.get("createdAt") or 0.0,
        tool_name=data.get("toolName"),
    )
