"""The Registry's servers and callback tools kept running in a gateway: an MCP endpoint registered
at run time, and a single tool registered as a callback URL. Each registration becomes an upstream
(owner "registry") shown under `qualified_name(namespace, name)`.

`Registrations.sync` makes the gateway's registered upstreams exactly the registrations not yet
expired: at start (a restarted gateway keeps every registration) and whenever the registry's
`version()` changed (another process wrote it: the command line without `--url`), applying only the
difference; `run` polls that version and sweeps expired entries, so an expired registration's upstream
stops. A write through it (the HTTP API) applies its one registration, so that its cost does not grow
with the number of registrations, and is refused over `registry.maxRegistrations...` (registry/requests.py).
An unchanged registration keeps its upstream (and its connection); a changed one (another URL,
headers, schema) is restarted. `registered_spec`, at the end, builds each one's upstream (a server's
endpoint, or a callback tool's one-tool server) and says how long its connection waits and retries.

Registered endpoints are expected to come and go (a run's endpoint may start after it registered,
and stop before its registration expires): one that is down or slow is retried with a backoff of at
most `REGISTERED_BACKOFF_MAX` seconds until it answers or its registration expires, one that lists
no tools right after it starts is listed again (`UpstreamSpec.relist_empty`), and one that goes
away and comes back is connected again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc

from toolscout.config.models import (
    DEFAULT_MAX_REGISTRATIONS,
    DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE,
    HttpServerConfig,
    SseServerConfig,
)
from toolscout.config.scopes import qualified_name
from toolscout.errors import ServerNotFound
from toolscout.masking import remember_secrets
from toolscout.registry.base import ChangeFeed, Registry, ServerRegistration, ToolRegistration
from toolscout.registry.requests import NameClash, check_room, name_taken
from toolscout.upstream import Upstream, UpstreamSpec
from toolscout.upstream.transport import CallbackToolUpstream, callback_server

logger = logging.getLogger(__name__)
T = TypeVar("T")

Registration = ServerRegistration | ToolRegistration
"""What one registration is: a server's endpoint or a callback tool."""
OWNER = "registry"
"""The owner of registered upstreams in the gateway (`Gateway.set_servers`)."""
POLL_SECONDS = 1.0
"""How often the registry's version is checked for another process's changes."""
SWEEP_SECONDS = 60.0
"""How often expired entries are swept from the registry when none is known to be due."""


class RegisteredServers(Protocol):
    """What `Registrations` needs of the gateway (`toolscout.gateway.core.Gateway`)."""

    async def set_servers(
        self, specs: Sequence[UpstreamSpec], *, owner: str, remove: Sequence[str] | None = None
    ) -> object:
        """Make the upstreams `owner` owns exactly `specs`; given `remove`, change only those and `specs`."""
        ...

    def upstream(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound`."""
        ...

    def server_status(self, upstream: Upstream) -> dict[str, Any]:
        """One server as `list_mcp_servers` shows it."""
        ...


class Registrations:
    """Keeps `gateway`'s registered upstreams equal to `registry`'s live registrations, and writes
    registrations for the HTTP API (refusing a name that is taken, or one over a limit).

    A write through it applies its one change to the gateway (its cost does not depend on how many
    registrations there are); a change another process made is found by the registry's version and
    applied as the difference between what is registered and what is applied."""

    def __init__(
        self,
        registry: Registry,
        gateway: RegisteredServers,
        *,
        poll_seconds: float = POLL_SECONDS,
        shared_catalog: bool = False,
        per_namespace: int = DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE,
        total: int = DEFAULT_MAX_REGISTRATIONS,
    ) -> None:
        """Keep `registry`'s registrations running in `gateway`.

        `shared_catalog` says the gateway's catalog store is shared by replicas (`registered_spec`);
        `per_namespace` and `total` are the most registrations taken (`registry.maxRegistrations...`)."""
        self.registry = registry
        self._gateway = gateway
        self._poll = poll_seconds
        self._specs = Specs(shared=shared_catalog)
        self._limits = (per_namespace, total)
        self._live: dict[str, Registration] = {}
        """The registrations applied to the gateway, by the name they are shown under."""
        self._refused: dict[str, str] = {}
        """Registrations left out of the gateway at the last sync, and why (a name taken meanwhile)."""
        self._version: int | None = None
        """The registry's version the gateway is known to follow (None: not known, a sync is due)."""
        self._next_expiry: float | None = None
        self._lock: anyio.Lock | None = None
        self._last_trouble: str | None = None
        self._nudge: anyio.Event | None = None
        self._listeners: list[Callable[[str], None]] = []

    def _locked(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def _configured(self, shown: str) -> bool:
        """Whether a server the gateway runs besides registrations (the config file's) is called `shown`."""
        if shown in self._live:
            return False
        try:
            self._gateway.upstream(shown)
        except ServerNotFound:
            return False
        return True

    async def sync(self) -> None:
        """Make the gateway's registered upstreams the registry's live registrations, now.

        Raises what the registry or the gateway raised (`run` logs it and tries again)."""
        async with self._locked():
            await self._sync()

    async def _sync(self) -> None:
        version = await self.registry.version()
        now = time.time()
        read: list[Registration] = [*await self.registry.servers(every=True), *await self.registry.tools(every=True)]
        live = [registration for registration in read if not registration.expired(now)]
        if len(live) < len(read):  # swept as the gateway drops them: no expired entry outlives its upstream
            await self.registry.sweep(now)  # (its version bump makes the next poll look again: no change)
        wanted: dict[str, Registration] = {}
        refused: dict[str, str] = {}
        for registration in live:  # (servers first: of a server and a tool of one name, the server is served)
            shown = qualified_name(registration.namespace, registration.name)
            if self._configured(shown):
                refused[shown] = f"not served: {shown!r} is the name of a configured server"
            elif shown in wanted:
                # A server and a tool of one name (written past the API's check, by another process).
                refused[shown] = f"not served: {shown!r} is registered both as a server and as a callback tool"
            else:
                wanted[shown] = registration
        # Only the difference reaches the gateway: an unchanged registration is not looked at again.
        put = [self._specs.of(r) for shown, r in wanted.items() if self._live.get(shown) != r]
        remove = [shown for shown in self._live if shown not in wanted]
        changes = await self._gateway.set_servers(put, owner=OWNER, remove=remove)
        self._live = wanted
        self._specs.keep_only(set(wanted))
        for name, reason in refused.items():
            if self._refused.get(name) != reason:
                logger.warning("registered %s", reason)
        self._refused = refused
        self._version = version
        expiries = [r.expires_at for r in live if r.expires_at is not None]
        self._next_expiry = min(expiries, default=None)
        if changes:
            logger.info("registered servers: %s", getattr(changes, "describe", lambda: str(changes))())

    def listen(self, listener: Callable[[str], None]) -> None:
        """Also tell `listener` of each change the registry's feed reports (`ChangeFeed`: Redis), such
        as `tokens:<id>` for a token revoked through another replica."""
        self._listeners.append(listener)

    def _changed(self, what: str) -> None:
        if self._nudge is not None:
            self._nudge.set()  # the loop below looks at once, not at its next poll
        for listener in self._listeners:
            listener(what)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Sync now, then keep in sync until cancelled: poll the registry's version (and, from a registry
        with a change feed, look at once when it reports one), sweep what expired. Never raises for what
        the registry or the gateway does (logged, and tried again)."""
        self._nudge = anyio.Event()
        async with anyio.create_task_group() as feed:
            if isinstance(self.registry, ChangeFeed):
                feed.start_soon(self.registry.watch_changes, self._changed, name="registry change feed")
            await self._follow(task_status)

    async def _follow(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        await self._sync_logged()
        task_status.started()
        last_sweep = time.time()
        while True:
            wait = self._poll
            if self._next_expiry is not None:
                wait = min(wait, max(0.0, self._next_expiry - time.time()))
            assert self._nudge is not None
            with anyio.move_on_after(wait):
                await self._nudge.wait()
            self._nudge = anyio.Event()
            now = time.time()
            due = self._next_expiry is not None and self._next_expiry <= now
            try:
                if due or now - last_sweep >= SWEEP_SECONDS:
                    last_sweep = now
                    gone = await self.registry.sweep(now)
                    if gone:
                        logger.info("swept %d expired registration(s) and token(s)", gone)
                changed = due or await self.registry.version() != self._version
            except Exception as exc:  # a busy or broken registry file: try again at the next poll
                self._trouble(f"could not read the registry: {exc}")
                continue
            if changed:
                await self._sync_logged()

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Registrations]:
        """Keep in sync (`run`) while the block runs; the first sync is done when it starts."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.run)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    async def _sync_logged(self) -> None:
        try:
            await self.sync()
        except Exception as exc:  # the registry's file (sqlite3, OSError) or the gateway: tried again later
            self._trouble(f"could not apply the registry's registrations: {exc or type(exc).__name__}")
            return
        if self._last_trouble is not None:
            logger.info("the registry's registrations are applied again")
            self._last_trouble = None

    def _trouble(self, message: str) -> None:
        """Log a failure of the sync once, not at every poll while it lasts."""
        if message != self._last_trouble:
            logger.warning("%s (tried again every %gs)", message, self._poll)
            self._last_trouble = message

    # Writes (the HTTP API): each applies its own change, and nothing else

    async def _check(self, registration: Registration) -> int:
        """Refuse `registration` if its name is taken or it is over a limit; how many registrations
        were read from the registry to decide (the one of each kind under its name, at most)."""
        server, tool = await self.registry.lookup(registration.namespace, registration.name)
        shown = qualified_name(registration.namespace, registration.name)
        configured = {shown} if self._configured(shown) else set[str]()
        servers, tools = [server] if server else [], [tool] if tool else []
        reason = name_taken(registration, configured=configured, servers=servers, tools=tools)
        if reason is not None:
            raise NameClash(reason)
        same = server if isinstance(registration, ServerRegistration) else tool
        per_namespace, total = self._limits
        await check_room(
            self.registry, registration, replaces=same is not None, per_namespace=per_namespace, total=total
        )
        return len(servers) + len(tools)

    async def _written(self, write: Callable[[], Awaitable[T]]) -> tuple[T, int | None]:
        """Return `write`'s answer, and the registry's version after it if that write was the only change
        since the version the gateway follows (else None: another process wrote too, and a sync will follow)."""
        before = await self.registry.version()
        done = await write()
        after = await self.registry.version()
        return done, after if self._version == before and after <= before + 1 else None

    def _applied(self, shown: str, version: int | None, reads: int, changes: object) -> None:
        if version is not None:
            self._version = version
        described = getattr(changes, "describe", lambda: str(changes))()
        if changes:
            logger.info("registered servers: %s", described)
        logger.debug("registration %s applied: %d read from the registry; %s", shown, reads, described)

    async def put(self, registration: Registration) -> None:
        """Register (or re-register) `registration` and apply it at once; `NameClash` if its name is
        a configured server's or a registration of the other kind, `TooManyRegistrations` over a limit."""
        shown = qualified_name(registration.namespace, registration.name)
        async with self._locked():
            reads = await self._check(registration)
            if isinstance(registration, ServerRegistration):
                _, version = await self._written(lambda: self.registry.put_server(registration))
            else:
                _, version = await self._written(lambda: self.registry.put_tool(registration))
            changes = await self._gateway.set_servers([self._specs.of(registration)], owner=OWNER, remove=())
            self._live[shown] = registration
            self._refused.pop(shown, None)
            if registration.expires_at is not None:
                self._next_expiry = min(self._next_expiry or registration.expires_at, registration.expires_at)
            self._applied(shown, version, reads, changes)

    async def remove(self, kind: type[Registration], namespace: str | None, name: str) -> bool:
        """Unregister a server or tool and stop its upstream; False if there was none."""
        shown = qualified_name(namespace, name)
        async with self._locked():
            if kind is ServerRegistration:
                gone, version = await self._written(lambda: self.registry.remove_server(namespace, name))
            else:
                gone, version = await self._written(lambda: self.registry.remove_tool(namespace, name))
            if not gone:
                return False
            if shown in self._refused:
                await self._sync()  # the other kind of that name, left out, may be served now
                return True
            applied = self._live.get(shown)
            if applied is not None and isinstance(applied, kind):
                changes = await self._gateway.set_servers([], owner=OWNER, remove=[shown])
                del self._live[shown]
                self._specs.drop(shown)
                self._applied(shown, version, 0, changes)
            return True

    def status(self, registration: Registration) -> dict[str, Any]:
        """How the registration's upstream is doing, as `list_mcp_servers` says it (`status`, `error`,
        `toolCount`, `retryInSeconds`), or why it is not served."""
        shown = qualified_name(registration.namespace, registration.name)
        if shown in self._refused:
            return {"status": "refused", "error": self._refused[shown]}
        if shown not in self._live:
            return {"status": "pending"}
        try:
            entry = self._gateway.server_status(self._gateway.upstream(shown))
        except ServerNotFound:
            return {"status": "pending"}
        keys = ("status", "error", "toolCount", "retryInSeconds", "serverInfo")
        return {key: entry[key] for key in keys if key in entry}


REGISTERED_BACKOFF_MAX = 10.0
"""The longest wait between two attempts to reach a registered endpoint: a run's endpoint that starts
late is found within seconds, and a dead one costs an attempt every 10 s until it expires."""
REGISTERED_CONNECT_TIMEOUT = 10.0
"""How long one attempt to reach a registered endpoint may take: a hanging one is tried again rather
than waited for (an agent's first search waits for a new server's first attempt)."""
PING_SECONDS = 5.0
"""How often a registered server is pinged: one that died is seen to be down (and retried) within seconds."""
CALLBACK_SECONDS = 55.0
"""How long a callback tool's URL may take to answer; the call's own timeout is a little longer, so
that a slow callback is told as such."""


def _key(registration: Registration) -> Hashable:
    """What decides how a registration is reached: equal keys keep the same upstream running."""
    if isinstance(registration, ServerRegistration):
        headers = tuple(sorted(registration.headers.items()))
        reached = (registration.url, registration.transport, headers, registration.description)
        return ("server", *reached, registration.tool_name)
    schema = json.dumps(dict(registration.input_schema), sort_keys=True)
    return ("tool", registration.description, schema, registration.callback_url, registration.tool_name)


def registered_config(registration: ServerRegistration) -> HttpServerConfig | SseServerConfig:
    """A registered server as a config entry would name it: its endpoint, transport and headers.

    Its sign-in, if it has one (`toolscout auth login` of its qualified name), is kept and read as a
    configured server's is.
    """
    # A header's value (a bearer token, say) is masked wherever it could show: logs, errors, audit.
    remember_secrets(registration.headers.values())
    config_type = SseServerConfig if registration.transport == "sse" else HttpServerConfig
    return config_type(url=registration.url, headers=dict(registration.headers))


def registered_spec(registration: Registration, *, shared: bool = False) -> UpstreamSpec:
    """The upstream of one registration (a new transport each time: build once per change, see `_Specs`).

    `shared`: the catalog store is shared by replicas (Redis), so that a replica that starts later
    answers at once from what another one listed of this very registration, marked stale, while it
    connects (the registration's expiry bounds how long)."""
    shown = qualified_name(registration.namespace, registration.name)
    if isinstance(registration, ServerRegistration):
        spec = UpstreamSpec.from_config(shown, registered_config(registration))
        description = registration.description
    else:
        server = callback_server(
            registration.tool_name or registration.name,
            registration.description,
            registration.input_schema,
            registration.callback_url,
            timeout=CALLBACK_SECONDS,
        )
        spec = UpstreamSpec(shown, CallbackToolUpstream(server, registration.callback_url))
        description = registration.description
    return dataclasses.replace(
        spec,
        namespace=registration.namespace,
        description=description,
        call_timeout=max(spec.call_timeout, CALLBACK_SECONDS + 5),
        reconnect=True,  # whatever happens, until the registration expires
        connect_timeout=REGISTERED_CONNECT_TIMEOUT,
        backoff_max=REGISTERED_BACKOFF_MAX,
        relist_empty=isinstance(registration, ServerRegistration),
        tool_prefix=registration.tool_name if isinstance(registration, ServerRegistration) else None,
        bare_tools=isinstance(registration, ToolRegistration),
        ping_seconds=PING_SECONDS if isinstance(registration, ServerRegistration) else None,
        # This machine's own catalog never answers for a registration: an endpoint of a run that is gone
        # must not look as if its tools were there; a shared one does, for as long as it is registered.
        cache_key=_cache_key(registration) if shared else None,
    )


def _cache_key(registration: Registration) -> str:
    """The key of a registration's catalog: changes with how it is reached, as a server's config hash does."""
    return "registered:" + hashlib.sha256(repr(_key(registration)).encode()).hexdigest()[:32]


class Specs:
    """One spec per registration for as long as it is unchanged: the gateway restarts an upstream
    whose spec differs (its transport compared by identity), so an unchanged one must get the same."""

    def __init__(self, *, shared: bool = False) -> None:
        self._made: dict[str, tuple[Hashable, UpstreamSpec]] = {}
        self._shared = shared

    def of(self, registration: Registration) -> UpstreamSpec:
        shown = qualified_name(registration.namespace, registration.name)
        key = _key(registration)
        made = self._made.get(shown)
        if made is None or made[0] != key:
            made = self._made[shown] = (key, registered_spec(registration, shared=self._shared))
        return made[1]

    def keep_only(self, names: set[str]) -> None:
        for name in set(self._made) - names:
            del self._made[name]

    def drop(self, name: str) -> None:
        self._made.pop(name, None)
