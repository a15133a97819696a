"""Where one upstream's connection stands: its status and what goes with each, changed in one place.

The status is what users see (`Status`); `ConnectionState.move` is the only way it changes, and it
sets or clears what belongs to the status entered:

    CONNECTING → CONNECTED   the handshake and the first tool list are done
    CONNECTING → ERROR       it failed, or did not finish within its connect timeout
    CONNECTING → IDLE        a lazy server whose catalog is known waits for its first call
    CONNECTED  → ERROR       the connection was lost (or ended by the server)
    CONNECTED  → IDLE        closed after `idleTimeout` without calls
    CONNECTED  → CONNECTED   connected again straight after an idle close that was asked to reconnect
    IDLE       → CONNECTING  a call wants it (`want()`)
    ERROR      → CONNECTING  the backoff is over
    DISABLED                 never moves

Two conditions sit beside the status, because neither changes what users are shown at once:
`lost` (the transport of the current attempt went away: calls are refused at once, while the
attempt winds down to ERROR) and `stopping` (the gateway stops it: the status stays as it was).
"""

from __future__ import annotations

import logging

import anyio
from mcp import Client

from toolscout.upstream.spec import Status

logger = logging.getLogger(__name__)

_NEXT: dict[Status, frozenset[Status]] = {
    Status.CONNECTING: frozenset({Status.CONNECTED, Status.ERROR, Status.IDLE}),
    Status.CONNECTED: frozenset({Status.CONNECTED, Status.ERROR, Status.IDLE}),
    Status.IDLE: frozenset({Status.CONNECTING}),
    Status.ERROR: frozenset({Status.CONNECTING}),
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
        - ERROR: `error` is kept; settled.
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
        elif status is Status.ERROR:
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
