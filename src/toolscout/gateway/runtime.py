"""The gateway's upstreams while it runs: when each one starts, and how the set changes.

`Startup` is the start-up policy: when each upstream starts (a warm start waits for the search
index), and what a catalog question asked at start waits for (`settle`), decided by the servers'
own states.

While the gateway runs, each upstream runs alone (so that one can be stopped, its child reaped,
without touching the others), and `ServerSet.apply` makes the servers of one owner exactly a given
list of specs, starting, stopping and restarting only what changed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from toolscout.catalog import Catalog
from toolscout.config.scopes import current_scope
from toolscout.errors import ConfigurationError, ServerNameTaken
from toolscout.gateway.snapshots import Snapshots
from toolscout.gateway.upstreams import CONFIG_OWNER, REGISTRY_OWNER, UpstreamRegistry
from toolscout.gateway.visibility import narrows, sees_upstream
from toolscout.resources.core import Mirror
from toolscout.upstream import Upstream, UpstreamSpec

logger = logging.getLogger(__name__)

WARM_INDEX_FIRST_SECONDS = 1.0
"""With a stored catalog, how long its servers wait at start for its search index to be built first."""
STOP_MARGIN_SECONDS = 5.0
"""Beyond a server's connect timeout, how long a catalog question at start waits for its first attempt
to end: the attempt itself gives up at the timeout, and tearing a hung stdio child down takes about a second."""


class Startup:
    """Starts `upstreams` and says what a catalog question at start waits for; `stored(name)` says
    whether a server's catalog is answered from the persistent store until it is connected."""

    def __init__(self, upstreams: UpstreamRegistry, stored: Callable[[str], bool]) -> None:
        self._upstreams = upstreams
        self._stored = stored
        self._started_at = 0.0
        self._launched_at: dict[Upstream, float] = {}
        """When each upstream added while the gateway runs was started (`launch`)."""
        self._run: Callable[[Upstream], None] | None = None
        self._stopping = False

    def start(self, task_group: anyio.abc.TaskGroup, run: Callable[[Upstream], None], index_built: anyio.Event) -> None:
        """Have `run(upstream)` start every upstream (from a task of `task_group`); those the store
        answers for once `index_built` is set."""
        self._started_at = anyio.current_time()
        self._run = run
        task_group.start_soon(self._start_upstreams, index_built, name="upstreams")

    def launch(self, upstream: Upstream) -> None:
        """Start an upstream added while the gateway runs: at once, waited for by `settle` as if it had
        been there at start (its first attempt, bounded by its connect timeout)."""
        assert self._run is not None, "the gateway is not running"
        self._launched_at[upstream] = anyio.current_time()
        self._run(upstream)

    def forget(self, upstream: Upstream) -> None:
        """Forget `upstream`, which left the gateway."""
        self._launched_at.pop(upstream, None)

    def stop(self) -> None:
        """Upstreams not started yet never start (the gateway is stopping)."""
        self._stopping = True

    async def _start_upstreams(self, index_built: anyio.Event) -> None:
        # Servers with nothing stored start at once: the first catalog question waits for them
        # (`settle`). Those the stored catalog answers for start once its index is built,
        # since it is what the first search needs (on few cores, a hundred connections starting
        # with it slowed it threefold), then one per event-loop turn, so that the first search,
        # woken by the same index, is not queued behind a hundred connections' first steps.
        run = self._run
        assert run is not None
        stored = [u for u in self._upstreams if self._stored(u.name)]
        for upstream in self._upstreams:
            if not self._stored(upstream.name):
                run(upstream)
        if not stored:
            return
        with anyio.move_on_after(WARM_INDEX_FIRST_SECONDS):
            await index_built.wait()
        for upstream in stored:
            if self._stopping:
                return
            run(upstream)  # (one removed meanwhile is stopped: it does not start)
            await anyio.lowlevel.checkpoint()

    async def settle(self) -> None:
        """Before a catalog question (a search, the server list, a mode's tools), wait for the
        servers whose tools would otherwise be missing from the answer.

        Decided by each server's own state, never by a clock: a configured server that is on its
        first attempt to connect is waited for until that attempt ends (connected, failed, or gone
        idle on purpose), which its connect timeout bounds, unless the persistent catalog already
        answers for it. So on a loaded machine a server that takes a few seconds to import is still
        in the first answer, a hanging one costs at most its connect timeout, once, and a server
        that failed is not waited for again while it retries. Servers still connecting when an
        answer is given are named in it (`connecting` in search_tools, their status in list_mcp_servers).
        Only servers the request's scope sees are waited for: one namespace's hanging endpoint never
        delays another namespace's answer.
        """
        scope = current_scope()
        for upstream in self._upstreams:
            if self._stored(upstream.name) or upstream.first_attempt_over:
                continue
            if narrows(scope) and not sees_upstream(scope, upstream):
                continue
            # The attempt bounds itself (these servers start at once); this bound only guards against
            # a task that never got to run.
            started = self._launched_at.get(upstream, self._started_at)
            deadline = started + upstream.spec.connect_timeout + STOP_MARGIN_SECONDS
            with anyio.move_on_after(deadline - anyio.current_time()):
                await upstream.wait_first_attempt()


STOP_WAIT_SECONDS = 10.0
"""How long a stopped upstream's task may take to tear its connection down (a stdio child's own
shutdown is bounded below this) before it is cancelled outright."""
REMOVED = "removed from the gateway"
RESTARTED = "restarted with its new configuration"
"""What calls in flight on a stopped upstream are told (`Server 'x' was ...`)."""


@dataclass(frozen=True)
class ServerChanges:
    """What one `set_servers` changed, each a tuple of names in the gateway's order."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.restarted)

    def describe(self) -> str:
        """Describe the change for the log: `added a, b; removed c` (or `no change`)."""
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (("added", self.added), ("removed", self.removed), ("restarted", self.restarted))
            if names
        ]
        return "; ".join(parts) or "no change"


def spec_key(spec: UpstreamSpec) -> tuple[Any, ...]:
    """What decides whether a spec's upstream must be restarted to follow it: everything in the spec.
    With a `cache_key` (the hash of its config entry, which says how it is reached) the transport is
    known by its label; without one, the transport object itself is all there is to compare."""
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.name != "transport"}
    transport = spec.transport.label if spec.cache_key is not None else id(spec.transport)
    return (type(spec.transport).__name__, transport, tuple(sorted(fields.items())))


@dataclass(eq=False)
class _Run:
    scope: anyio.CancelScope
    done: anyio.Event


class UpstreamRunner:
    """Runs each upstream as a task of the gateway's task group, inside a cancel scope of its own."""

    def __init__(self) -> None:
        self._task_group: anyio.abc.TaskGroup | None = None
        self._runs: dict[Upstream, _Run] = {}

    def attach(self, task_group: anyio.abc.TaskGroup) -> None:
        """Run upstreams in `task_group` from now on (the gateway's, while it runs)."""
        self._task_group = task_group

    def start(self, upstream: Upstream) -> None:
        """Run `upstream` until it is stopped (once: a second start, or one after it stopped, does nothing)."""
        if self._task_group is None:
            raise RuntimeError("the gateway is not running")
        if upstream in self._runs or upstream.stopped:
            return
        run = self._runs[upstream] = _Run(anyio.CancelScope(), anyio.Event())
        self._task_group.start_soon(self._run, upstream, run, name=f"upstream {upstream.name}")

    async def _run(self, upstream: Upstream, run: _Run) -> None:
        try:
            with run.scope:
                await upstream.run()
        finally:
            run.done.set()

    async def stop(self, upstream: Upstream, reason: str) -> None:
        """Stop `upstream` alone and wait until its connection is torn down (its child reaped);
        cancelled outright if that takes over `STOP_WAIT_SECONDS`. Calls still in flight on it end
        with `SERVER_UNAVAILABLE` saying `reason`."""
        upstream.stop(reason)
        run = self._runs.pop(upstream, None)
        if run is None:
            return  # never started
        with anyio.move_on_after(STOP_WAIT_SECONDS):
            await run.done.wait()
        if not run.done.is_set():
            logger.warning("%s: not stopped within %gs; cancelling it", upstream.name, STOP_WAIT_SECONDS)
            run.scope.cancel()
            with anyio.move_on_after(STOP_WAIT_SECONDS):
                await run.done.wait()


class ServerSet:
    """Changes the gateway's upstreams, one owner's at a time (`apply`), one change at a time.

    `build(spec)`: a new upstream wired to the gateway; what the gateway knows of a server that left
    is dropped from `catalog`, `mirror` and `snapshots`, and a server that joins starts from its
    snapshot if the store has one; `state()`: the gateway's state ("new": changes only edit the set
    its start will run; "stopped": they are refused).
    """

    def __init__(
        self,
        upstreams: UpstreamRegistry,
        startup: Startup,
        catalog: Catalog,
        mirror: Mirror,
        snapshots: Snapshots,
        *,
        build: Callable[[UpstreamSpec], Upstream],
    ) -> None:
        self._upstreams = upstreams
        self._startup = startup
        self._mirror = mirror
        self._snapshots = snapshots
        self.runner = UpstreamRunner()
        """Runs each upstream (the gateway attaches it to its task group when it starts)."""
        self._catalog = catalog
        self._build = build
        self.state: Callable[[], str] = lambda: "new"
        """The gateway's state: "new", "running" or "stopped" (set by the gateway)."""
        self._lock: anyio.Lock | None = None

    async def apply(self, specs: Sequence[UpstreamSpec], *, owner: str) -> ServerChanges:
        """Make the upstreams `owner` owns exactly `specs`; what changed (also logged).

        New names start at once (in the gateway's task group); names no longer there stop (their
        child processes reaped) and leave the catalog, the search index, the mirror and the snapshots;
        a spec that changed (`spec_key`) restarts its upstream; the others are left alone, their
        connections untouched. Calls in flight on a stopped upstream end with `SERVER_UNAVAILABLE`;
        clients whose lists changed are told as for any catalog change. A name twice in `specs`
        (`ConfigurationError`) or another owner's (`ServerNameTaken`) refuses the whole change. Before
        the gateway is entered this only edits the set it will start; after it stopped, `RuntimeError`.
        Once begun, a change is finished even if the caller is cancelled.
        """
        return await self._locked(specs, owner, lambda: self._apply(specs, owner))

    async def change(self, put: Sequence[UpstreamSpec], remove: Sequence[str], *, owner: str) -> ServerChanges:
        """Among the upstreams `owner` owns, add or restart (when its spec changed) each of `put` and stop
        each name of `remove`, leaving every other alone, unlooked at: a change costs what it changes,
        whatever the number of upstreams (`apply` compares them all). Otherwise as `apply`."""
        return await self._locked(put, owner, lambda: self._change(put, remove, owner))

    async def _locked(
        self, specs: Sequence[UpstreamSpec], owner: str, work: Callable[[], Awaitable[ServerChanges]]
    ) -> ServerChanges:
        if self.state() == "stopped":
            raise RuntimeError("the gateway has stopped: its servers cannot change any more")
        self._check(specs, owner)
        if self._lock is None:
            self._lock = anyio.Lock()
        changes = ServerChanges()
        async with self._lock:
            self._check(specs, owner)  # again: another change may have taken a name while this one waited
            # Made whole even if the caller is cancelled meanwhile (a change half made would leave
            # servers out of the registry yet running); every wait in it is bounded.
            with anyio.CancelScope(shield=True):
                changes = await work()
        return changes

    def _check(self, specs: Sequence[UpstreamSpec], owner: str) -> None:
        """Refuse the whole change, before any of it, when a name is twice in `specs` or is another owner's."""
        names = Counter(spec.name for spec in specs)
        twice = sorted(name for name, count in names.items() if count > 1)
        if twice:
            raise ConfigurationError(f"Server names must be unique; given more than once: {', '.join(twice)}.")
        for name in names:
            other = self._upstreams.owner(name)
            if other is not None and other != owner:
                raise ServerNameTaken(
                    f"A server called {name!r} is already there ({_owner_words(other)}); choose another name.",
                    server=name,
                    owner=other,
                )

    async def _apply(self, specs: Sequence[UpstreamSpec], owner: str) -> ServerChanges:
        wanted = {spec.name: spec for spec in specs}
        current = {upstream.name: upstream for upstream in self._upstreams.owned_by(owner)}
        removed = [name for name in current if name not in wanted]
        restarted = [n for n in current if n in wanted and spec_key(current[n].spec) != spec_key(wanted[n])]
        unchanged = [n for n in current if n in wanted and n not in restarted]
        added = [name for name in wanted if name not in current]
        order = [spec.name for spec in specs] if owner == CONFIG_OWNER else ()
        return await self._make(wanted, current, added, removed, restarted, unchanged, owner, order)

    async def _change(self, put: Sequence[UpstreamSpec], remove: Sequence[str], owner: str) -> ServerChanges:
        wanted = {spec.name: spec for spec in put}
        current: dict[str, Upstream] = {}
        for name in [*wanted, *remove]:
            upstream = self._upstreams.get(name)
            if upstream is not None and self._upstreams.owner(name) == owner:
                current[name] = upstream
        removed = [name for name in remove if name in current and name not in wanted]
        restarted = [n for n in wanted if n in current and spec_key(current[n].spec) != spec_key(wanted[n])]
        unchanged = [n for n in wanted if n in current and n not in restarted]
        added = [name for name in wanted if name not in current]
        return await self._make(wanted, current, added, removed, restarted, unchanged, owner, ())

    async def _make(
        self,
        wanted: dict[str, UpstreamSpec],
        current: dict[str, Upstream],
        added: list[str],
        removed: list[str],
        restarted: list[str],
        unchanged: list[str],
        owner: str,
        order: Sequence[str],
    ) -> ServerChanges:
        # Out of the registry first: from now on the name is SERVER_NOT_FOUND, whatever its teardown takes.
        gone = [upstream for name in removed if (upstream := self._upstreams.remove(name)) is not None]
        for upstream in gone:
            self._forget_upstream(upstream)
        async with anyio.create_task_group() as tg:
            for upstream in gone:
                tg.start_soon(self.runner.stop, upstream, REMOVED)
            for name in restarted:
                tg.start_soon(self.runner.stop, current[name], RESTARTED)
        for upstream in gone:
            self._forget_upstream(upstream)  # again: its teardown lists its last known tools once more
            self._startup.forget(upstream)
        fresh: list[Upstream] = []
        for name in restarted:
            self._forget_upstream(current[name])
            self._startup.forget(current[name])
            upstream = self._build(wanted[name])
            upstream.resource_subscriptions.adopt(current[name].resource_subscriptions)  # clients' stay
            self._upstreams.replace(upstream)
            fresh.append(upstream)
        for name in added:
            upstream = self._build(wanted[name])
            self._upstreams.add(upstream, owner)
            fresh.append(upstream)
        if order:
            self._upstreams.reorder(order)
        if added or order:
            self._catalog.order_servers(self._upstreams.names)
        if fresh and self.state() == "running":
            # Each as it was last listed, if the store has it (at start, the gateway loads them all).
            for name, snapshot in (await self._snapshots.load(fresh)).items():
                self._mirror.use_stored(self._upstreams.named(name), snapshot.content())
        if self.state() == "running":  # (not if the gateway stopped meanwhile: its task group is gone)
            for upstream in fresh:
                self._startup.launch(upstream)
        changes = ServerChanges(
            added=self._ordered(added),
            removed=tuple(sorted(removed)),
            restarted=self._ordered(restarted),
            unchanged=self._ordered(unchanged),
        )
        if changes:
            logger.info("servers (%s): %s", owner, changes.describe())
        return changes

    def _ordered(self, names: list[str]) -> tuple[str, ...]:
        """Return `names` in the gateway's order (looked up one by one when they are few)."""
        if len(names) <= 1:
            return tuple(names)
        position = {name: i for i, name in enumerate(self._upstreams.names)}
        return tuple(sorted(names, key=lambda n: position.get(n, len(position))))

    def _forget_upstream(self, upstream: Upstream) -> None:
        """Forget `upstream` (stopping or stopped), which left the gateway: nothing of it is listed,
        searched or kept."""
        if self._upstreams.get(upstream.name) not in (None, upstream):
            return  # (its name is another upstream's now)
        self._catalog.drop_server(upstream.name)  # the index is rebuilt on the next search; clients told
        self._mirror.forget(upstream.name)
        self._snapshots.forget(upstream.name)


def _owner_words(owner: str) -> str:
    if owner == CONFIG_OWNER:
        return "from the config file"
    if owner == REGISTRY_OWNER:
        return "registered at run time"
    return f"owned by {owner!r}"
