"""What an upstream is, and where its connection stands: its spec, what it said about itself, the key
of its configuration entry, its status, and the one place that status changes.

Nothing here holds a connection; `connection.py` runs one from an `UpstreamSpec`, and the persistent
catalog (gateway/store.py) files what a server listed under `config_hash` of its entry (config/models.py).

The status is what users see (`Status`); `ConnectionState.move` is the only way it changes, and it
sets or clears what belongs to the status entered:

    CONNECTING → CONNECTED   the handshake and the first tool list are done
    CONNECTING → ERROR       it failed, or did not finish within its connect timeout
    CONNECTING → IDLE        a lazy server whose catalog is known waits for its first call
    CONNECTED  → DISCONNECTED  the connection was lost (or ended by the server)
    CONNECTED  → IDLE        closed after `idleTimeout` without calls
    CONNECTED  → CONNECTED   connected again straight after an idle close that was asked to reconnect
    IDLE       → CONNECTING  a call needs it (`connect_if_idle()`)
    ERROR      → CONNECTING  the backoff is over
    CONNECTING → NEEDS_LOGIN the server asks for an OAuth sign-in there is not (or no longer)
    CONNECTED  → NEEDS_LOGIN likewise, found on a request (the sign-in was revoked)
    NEEDS_LOGIN → CONNECTING  the sign-in was written anew (`toolscout auth login`)
    DISCONNECTED → CONNECTING  likewise
    DISABLED                 never moves

Two conditions sit beside the status, because neither changes what users are shown at once:
`lost` (the transport of the current attempt went away: calls are refused at once, while the
attempt winds down to ERROR) and `stopping` (the gateway stops it: the status stays as it was).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

import anyio
import mcp_types as types

from toolscout.config.models import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    AnyServerConfig,
    StdioServerConfig,
    config_hash,
)
from toolscout.config.rules import Load
from toolscout.upstream.stdio_child import StdioUpstream
from toolscout.upstream.transport import RemoteUpstream, UpstreamTransport

if TYPE_CHECKING:
    from mcp import Client

logger = logging.getLogger(__name__)

ListKind = Literal["resources", "prompts"]
"""The lists besides tools whose changes an upstream announces (resources/ follows them)."""


def transport_for(name: str, config: AnyServerConfig) -> UpstreamTransport:
    """The transport a configured server asks for."""
    if isinstance(config, StdioServerConfig):
        return StdioUpstream(name, config)
    return RemoteUpstream(config, name)


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
    config: AnyServerConfig | None = None
    """Its configuration entry, when it has one (`server_status` shows it, secrets masked)."""
    namespace: str | None = None
    """The namespace it was registered in at run time (`name` is then `{namespace}.{registered}`,
    `toolscout.config.scopes.qualified_name`); None: the global namespace (the config file's servers)."""
    tool_prefix: str | None = None
    """What `toolNames: registered` puts before its tools' names (`{tool_prefix}__{tool}`): a registered
    server's `toolName`; None: `registered_name`."""
    load: Load | None = None
    """`eager` or `deferred` as its entry sets it (`load`, config/rules.py's `Load`): how a client that
    defers tool schemas treats its tools unless a tool rule says otherwise; None: unset (deferred, unless
    the server marks a tool `alwaysLoad` itself)."""
    bare_tools: bool = False
    """Whether `toolNames: registered` shows its tools under their own names (a callback tool: a run's component)."""

    @property
    def registered_name(self) -> str:
        """Its name in its namespace: what a scope's `servers` match (the node id of the registration API)."""
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
            config=config,
            load=config.load if "load" in config.model_fields_set else None,
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


class Status(StrEnum):
    """An upstream's status as users see it (`list_mcp_servers`, `toolscout list`)."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    IDLE = "idle"
    """Not connected on purpose (lazy, or closed after `idleTimeout`); connects on the next call."""
    ERROR = "error"
    """The last attempt to connect failed."""
    DISCONNECTED = "disconnected"
    """It was connected, and the connection was lost (or ended by the server); connecting again follows."""
    NEEDS_LOGIN = "needs-login"
    """It asks for an OAuth sign-in that is missing or ended: it connects again once `toolscout auth login` signs in."""
    DISABLED = "disabled"


_NEXT: dict[Status, frozenset[Status]] = {
    Status.CONNECTING: frozenset({Status.CONNECTED, Status.ERROR, Status.IDLE, Status.NEEDS_LOGIN}),
    Status.CONNECTED: frozenset({Status.CONNECTED, Status.DISCONNECTED, Status.IDLE, Status.NEEDS_LOGIN}),
    Status.IDLE: frozenset({Status.CONNECTING}),
    Status.ERROR: frozenset({Status.CONNECTING}),
    Status.DISCONNECTED: frozenset({Status.CONNECTING}),
    Status.NEEDS_LOGIN: frozenset({Status.CONNECTING}),
    Status.DISABLED: frozenset(),
}
"""The transitions of the status: from each, the statuses it may move to."""


class ConnectionState:
    """One upstream's status, error and live session, and the events that tell others of them."""

    def __init__(self, name: str, *, disabled: bool) -> None:
        self._name = name
        self.status = Status.DISABLED if disabled else Status.CONNECTING
        self.error: str | None = None
        """Why the last attempt failed (masked); kept while connecting again, cleared once connected."""
        self.retry_at: float | None = None
        """When the next connection attempt is due (epoch seconds), while waiting for it."""
        self.session: Client | None = None
        """The session of the current attempt once it is handshaken (None between attempts)."""
        self.lost = False
        """The current attempt's transport went away (or the server forgot our session)."""
        self.stopping = False
        """`stop()` was called: no attempt starts any more."""
        self.stop_reason: str | None = None
        """Why it was stopped, when not because the gateway stops (e.g. removed from the gateway)."""
        self._settled = anyio.Event()
        self._first_attempt = anyio.Event()
        """Set once the first attempt to connect has ended; never cleared."""
        self._changed = anyio.Event()
        if disabled:
            self._settle()

    @property
    def live_session(self) -> Client | None:
        """The session calls may be sent on: handshaken and not lost."""
        return None if self.lost else self.session

    def move(self, status: Status, *, error: str | None = None) -> None:
        """Enter `status`, with what goes with it:

        - CONNECTING: no retry is due any more; waiters of `wait_settled` wait again.
        - CONNECTED: the error is cleared; settled.
        - IDLE: settled.
        - ERROR, DISCONNECTED, NEEDS_LOGIN: `error` is kept; settled.
        Every move tells `wait_changed` waiters.
        """
        if status not in _NEXT[self.status]:
            # A bug of this module's callers; logged rather than raised, since an upstream's task must never fail.
            logger.error(
                "%s: status %s -> %s is not a transition of the state machine", self._name, self.status, status
            )
        self.status = status
        if status is Status.CONNECTING:
            self.retry_at = None
            if self._settled.is_set():  # nobody waits on a set event: safe to replace
                self._settled = anyio.Event()
        elif status is Status.CONNECTED:
            self.error = None
            self._settle()
        elif status in (Status.ERROR, Status.DISCONNECTED, Status.NEEDS_LOGIN):
            self.error = error
            self._settle()
        else:
            self._settle()
        self.notify_changed()

    def begin_attempt(self) -> None:
        """A connection attempt starts: nothing of the last one's loss is left."""
        self.lost = False

    def attach(self, session: Client) -> None:
        """The attempt's session is handshaken and its tools listed: calls may use it."""
        self.session = session

    def end_attempt(self) -> None:
        """The attempt's session is closed: nothing is sent on it any more."""
        self.session = None

    def stop(self, reason: str | None = None) -> None:
        """Stopped for good: nobody is to wait for a server that will not connect (`reason`: why, when
        not because the gateway stops; waiters of `wait_settled` are then woken too)."""
        self.stopping = True
        if reason is not None:
            self.stop_reason = reason
            self._settled.set()
            self.notify_changed()
        self._first_attempt.set()

    def _settle(self) -> None:
        self._settled.set()
        self._first_attempt.set()

    async def wait_settled(self) -> None:
        """Wait until connected, failed, idle or disabled."""
        await self._settled.wait()

    @property
    def first_attempt_over(self) -> bool:
        """Whether the first attempt to connect has ended, however (or never comes)."""
        return self._first_attempt.is_set()

    async def wait_first_attempt(self) -> None:
        """Wait until the first attempt to connect has ended."""
        await self._first_attempt.wait()

    async def wait_changed(self) -> None:
        """Wait for the next move, or the next `notify_changed`."""
        await self._changed.wait()

    def notify_changed(self) -> None:
        """Tell `wait_changed` waiters (a move, or a new tool list)."""
        self._changed.set()
        self._changed = anyio.Event()
