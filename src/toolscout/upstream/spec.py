"""What an upstream is, before and apart from its connection: its spec, its status, what it said
about itself, and the key of its configuration entry.

Nothing here holds a connection; `connection.py` runs one from an `UpstreamSpec`, the persistent
catalog (gateway/store.py) files what a server listed under `config_hash` of its entry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import mcp_types as types
from mcp import Client

from toolscout.config.models import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    AnyServerConfig,
    StdioServerConfig,
)
from toolscout.upstream.remote import RemoteUpstream
from toolscout.upstream.stdio_child import StdioUpstream
from toolscout.upstream.transport import UpstreamTransport

ListKind = Literal["resources", "prompts"]
"""The lists besides tools whose changes an upstream announces (the mirror follows them)."""


class Status(StrEnum):
    """An upstream's status as users see it (`list_mcp_servers`, `toolscout list`)."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    IDLE = "idle"
    """Not connected on purpose (lazy, or closed after `idleTimeout`); connects on the next call."""
    ERROR = "error"
    DISABLED = "disabled"


def config_hash(config: AnyServerConfig) -> str:
    """A stable key for one server's configuration entry: sha256 of its canonical JSON.

    Defaults are left out, so a toolscout upgrade that adds a key with a default keeps the key
    of every existing entry; the transport kind is always in, so an HTTP and an SSE entry for
    one URL differ.
    """
    data = config.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["kind"] = config.kind
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def transport_for(name: str, config: AnyServerConfig) -> UpstreamTransport:
    """The transport a configured server asks for."""
    if isinstance(config, StdioServerConfig):
        return StdioUpstream(name, config)
    return RemoteUpstream(config)


@dataclass(frozen=True)
class UpstreamSpec:
    """Everything needed to run one upstream: its name, how to reach it, and its limits."""

    name: str
    transport: UpstreamTransport
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    description: str | None = None
    disabled: bool = False
    protocol: str = "auto"
    """`auto`: probe `server/discover` (2026-07-28), else `initialize`; `legacy`: `initialize` only;
    `legacy-first`: `initialize`, and `auto` if the server refuses it, kept for as long as the server is
    then reached at 2026-07-28 (what a configured server gets unless its entry says otherwise)."""
    reconnect: bool = True
    """Connect again (with backoff) after a failure or a lost connection."""
    backoff_max: float = 60.0
    """The longest wait between two connection attempts (the wait doubles from 1 s up to it)."""
    relist_empty: bool = False
    """List tools again, a few times with backoff, while a server that offers tools lists none right after
    connecting (a server registered at run time often answers before it has loaded its tools)."""
    ping_seconds: float | None = None
    """Ping the connected server this often, and connect again when it does not answer (None: never;
    a connection that ends is noticed anyway, but an HTTP server that died is silent until a call)."""
    lazy: bool = False
    """Connect on first use when a catalog is known without connecting (cached or declared)."""
    idle_timeout: float | None = None
    """Close the connection after this many seconds without calls (lazy servers: 300 unless set)."""
    static_tools: tuple[types.Tool, ...] = ()
    """Declared in the config: listed until the server's own list replaces them."""
    cache_key: str | None = None
    """Its key in the persistent catalog (a hash of its config entry); None: never kept there."""
    namespace: str | None = None
    """The namespace it was registered in at run time (`name` is then `{namespace}.{registered}`,
    `toolscout.config.scopes.qualified_name`); None: the global namespace (the config file's servers)."""

    @property
    def registered_name(self) -> str:
        """Its name in its namespace: what a scope's `servers` match (spec 002's node id)."""
        if self.namespace is None:
            return self.name
        return self.name.removeprefix(f"{self.namespace}.")

    @classmethod
    def from_config(cls, name: str, config: AnyServerConfig) -> UpstreamSpec:
        """The spec of a configured server."""
        return cls(
            name=name,
            transport=transport_for(name, config),
            call_timeout=config.timeout,
            connect_timeout=config.connect_timeout,
            description=config.description,
            disabled=config.disabled,
            # The handshake era unless configured, whatever the transport: a server that speaks both eras
            # keeps its requests to the client (sampling, elicitation) and resources/subscribe there,
            # which a server written for the handshake era has no way to offer at 2026-07-28.
            protocol=config.protocol or "legacy-first",
            reconnect=config.reconnect,
            lazy=config.connect == "lazy",
            idle_timeout=config.idle_timeout,
            static_tools=tuple(
                types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema)
                for t in config.tools
            ),
            cache_key=config_hash(config),
        )


@dataclass(frozen=True)
class ServerIdentity:
    """What the upstream said about itself when connecting."""

    name: str | None
    version: str | None
    title: str | None
    description: str | None
    instructions: str | None
    protocol_version: str

    @classmethod
    def of(cls, client: Client) -> ServerIdentity:
        """What the server of a live session said about itself."""
        info = client.server_info
        return cls(
            name=info.name if info else None,
            version=(info.version or None) if info else None,
            title=info.title if info else None,
            description=info.description if info else None,
            instructions=client.instructions,
            protocol_version=client.protocol_version,
        )

    @property
    def server_info(self) -> dict[str, str]:
        """Its name and version as `list_mcp_servers` shows them (`serverInfo`), the empty ones left out."""
        return {k: v for k, v in (("name", self.name), ("version", self.version)) if v}
