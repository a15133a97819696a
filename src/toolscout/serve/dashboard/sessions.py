"""The dashboard's sessions: one per browser, kept in this process's memory, found by the random id
its cookie carries (see auth.py for how they are made and checked)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

COOKIE = "toolscout_dashboard"
SESSION_SECONDS = 12 * 3600
"""A session ends this long after login, however busy."""
IDLE_SECONDS = 3600
"""A session unused this long ends."""
MAX_SESSIONS = 10_000
"""Sessions kept at once; past it the least recently used goes (a flood of anonymous visits cannot
grow the memory without bound)."""
MAX_FORM_BYTES = 1_000_000
"""The largest POST body the dashboard reads: a tool's arguments fit many times over."""
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SESSION_KEY = "toolscout.dashboard.session"


@dataclass
class Session:
    """One browser's login, kept in memory only."""

    id: str
    csrf: str
    credential: str | None
    """The credential logged in with (None: the gateway authenticates no one)."""
    created: float
    seen: float


@dataclass
class Sessions:
    """The live sessions by id (in this process: a restart logs everyone out)."""

    clock: Callable[[], float] = time.monotonic
    _by_id: dict[str, Session] = field(default_factory=dict[str, Session])

    def create(self, credential: str | None) -> Session:
        """A new session for `credential`, with a new id and CSRF token."""
        now = self.clock()
        if len(self._by_id) >= MAX_SESSIONS:
            self._sweep(now)
        while len(self._by_id) >= MAX_SESSIONS:
            oldest = min(self._by_id.values(), key=lambda s: s.seen)
            del self._by_id[oldest.id]
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), credential, now, now)
        self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of `session_id` (marked used now), or None if there is none or it expired."""
        if not session_id:
            return None
        session = self._by_id.get(session_id)
        if session is None:
            return None
        now = self.clock()
        if now - session.created >= SESSION_SECONDS or now - session.seen >= IDLE_SECONDS:
            del self._by_id[session_id]
            return None
        session.seen = now
        return session

    def end(self, session_id: str) -> None:
        """End a session (logout, or its credential is no longer valid)."""
        self._by_id.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._by_id)

    def _sweep(self, now: float) -> None:
        self._by_id = {
            k: s for k, s in self._by_id.items() if now - s.created < SESSION_SECONDS and now - s.seen < IDLE_SECONDS
        }


def session_of(request: Request) -> Session | None:
    """The session of a dashboard request (None: a bearer request, or not logged in)."""
    found = request.scope.get(SESSION_KEY)
    return found if isinstance(found, Session) else None


def csrf_token_of(request: Request) -> str:
    """The CSRF token the request's forms carry ("" without a session)."""
    session = session_of(request)
    return session.csrf if session is not None else ""
