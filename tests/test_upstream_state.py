"""The pieces of an upstream's connection that are plain code: its status machine, and following a listing's pages."""

from __future__ import annotations

import logging

import anyio
import pytest

from toolscout.upstream.calls import paginate
from toolscout.upstream.spec import ConnectionState, Status

pytestmark = pytest.mark.anyio


def test_every_status_has_its_transitions() -> None:
    from toolscout.upstream import spec

    assert set(spec._NEXT) == set(Status)  # pyright: ignore[reportPrivateUsage]


def test_a_move_sets_and_clears_what_goes_with_the_status() -> None:
    state = ConnectionState("s", disabled=False)
    assert state.status is Status.CONNECTING and not state.first_attempt_over
    state.move(Status.ERROR, error="boom")
    assert (state.status, state.error, state.first_attempt_over) == (Status.ERROR, "boom", True)
    state.retry_at = 123.0
    state.move(Status.CONNECTING)
    assert state.retry_at is None
    assert state.error == "boom"  # shown while connecting again, until connected
    state.move(Status.CONNECTED)
    assert state.error is None


async def test_waiters_of_a_settled_state_wait_again_once_it_connects_again() -> None:
    state = ConnectionState("s", disabled=False)
    state.move(Status.ERROR, error="boom")
    with anyio.fail_after(5):
        await state.wait_settled()  # settled: returns at once
    state.move(Status.CONNECTING)
    woken: list[bool] = []

    async def waiter() -> None:
        await state.wait_settled()
        woken.append(True)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not woken  # connecting again: not settled until it connects or fails
            state.move(Status.CONNECTED)
    assert woken


def test_a_move_outside_the_machine_is_logged_as_a_bug(caplog: pytest.LogCaptureFixture) -> None:
    state = ConnectionState("s", disabled=True)
    with caplog.at_level(logging.ERROR, logger="toolscout.upstream.spec"):
        state.move(Status.CONNECTED)
    assert "s: status disabled -> connected is not a transition of the state machine" in caplog.text


async def test_paginate_follows_cursors_and_says_when_it_stopped_short() -> None:
    pages = {None: ([1, 2], "a"), "a": ([3], "b"), "b": ([4], None)}

    async def page(cursor: str | None) -> tuple[list[int], str | None]:
        return pages[cursor]

    assert await paginate(page) == ([1, 2, 3, 4], True)
    assert await paginate(page, max_pages=2) == ([1, 2, 3], False)
