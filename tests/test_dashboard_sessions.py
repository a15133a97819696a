"""The dashboard's sessions: a random id unrelated to the credential, ended after an idle hour and
after twelve hours whatever happens, and bounded in number; and where a login may send the browser."""

from __future__ import annotations

from toolscout.serve.dashboard.auth import safe_next, same_origin
from toolscout.serve.dashboard.sessions import IDLE_SECONDS, MAX_SESSIONS, SESSION_SECONDS, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_is_a_random_id_that_ends_when_idle_or_old() -> None:
    clock = Clock()
    sessions = Sessions(clock)
    session = sessions.create("the-key-of-someone-0123456789")
    assert "the-key" not in session.id and session.id != session.csrf and len(session.id) >= 40
    assert sessions.get(session.id) is session
    clock.now += IDLE_SECONDS - 1
    assert sessions.get(session.id) is session  # used: the idle hour starts again
    clock.now += IDLE_SECONDS
    assert sessions.get(session.id) is None
    busy = sessions.create(None)
    for _ in range(int(SESSION_SECONDS // (IDLE_SECONDS / 2)) + 1):
        clock.now += IDLE_SECONDS / 2
        sessions.get(busy.id)
    assert sessions.get(busy.id) is None  # however busy, it ends 12 hours after login
    assert sessions.get("made-up") is None and sessions.get(None) is None


def test_sessions_are_bounded_and_the_least_recently_used_goes() -> None:
    clock = Clock()
    sessions = Sessions(clock)
    first = sessions.create(None)
    for _ in range(MAX_SESSIONS):
        clock.now += 0.001
        sessions.create(None)
    assert len(sessions) == MAX_SESSIONS
    assert sessions.get(first.id) is None


def test_a_login_sends_the_browser_only_to_a_dashboard_page() -> None:
    assert safe_next("/dashboard/tools?q=x") == "/dashboard/tools?q=x"
    for elsewhere in ("https://evil.example/", "//evil.example/dashboard", "/dashboard\\@evil", "/api/v1/tokens", None):
        assert safe_next(elsewhere) == "/dashboard/"


def test_an_origin_is_the_same_site_only_with_the_same_scheme_host_and_port() -> None:
    def scope(origin: bytes | None) -> dict[str, object]:
        headers = [(b"host", b"127.0.0.1:8765")] + ([(b"origin", origin)] if origin is not None else [])
        return {"type": "http", "headers": headers}

    assert same_origin(scope(None))
    assert same_origin(scope(b"http://127.0.0.1:8765"))
    for other in (b"http://127.0.0.1:8766", b"http://evil.example", b"null", b"file://127.0.0.1:8765"):
        assert not same_origin(scope(other))
