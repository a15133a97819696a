"""The start-up policy: when each upstream starts (a warm start waits for the search index), and
what a catalog question asked at start waits for (`settle`), decided by the servers' own states."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.abc
import anyio.lowlevel

from toolscout.config.scopes import current_scope
from toolscout.gateway.upstreams import UpstreamRegistry
from toolscout.gateway.visibility import narrows, sees_upstream
from toolscout.upstream import Upstream

WARM_INDEX_FIRST_SECONDS = 1.0
"""With a stored catalog, how long its servers wait at start for its search index to be built first."""
STOP_MARGIN_SECONDS = 5.0
"""Beyond a server's connect timeout, how long a catalog question at start waits for its first attempt
to end: the attempt itself gives up at the timeout, and tearing a hung stdio child down takes ~1 s."""


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
        """`upstream` left the gateway."""
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
        """Before a catalog question (a search, the server list, a surface's tools), wait for the
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
