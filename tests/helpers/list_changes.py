"""Counting the `tools/list_changed` notices a client gets, in either protocol era."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client


class ListWatcher:
    """Counts the `tools/list_changed` notices a client gets, by notification or listen stream."""

    def __init__(self) -> None:
        self.count = 0
        self.listening = False  # at 2026-07-28 the SDK also hands listen-stream frames to message_handler
        self._changed = anyio.Event()

    def bump(self) -> None:
        self.count += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def message_handler(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and not self.listening:
            self.bump()

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(10):
            while self.count < count:
                await self._changed.wait()


@asynccontextmanager
async def watched_client(target: Any, era: str, watcher: ListWatcher) -> AsyncGenerator[Client]:
    """A client whose list-change notices `watcher` counts, in either era."""
    async with Client(target, mode=era, message_handler=watcher.message_handler) as client:
        if client.protocol_version != "2026-07-28":
            yield client
            return
        async with listening(client, watcher):
            yield client


@asynccontextmanager
async def listening(client: Client, watcher: ListWatcher) -> AsyncGenerator[None]:
    """At 2026-07-28 change notices only come on a `subscriptions/listen` stream: open one."""
    async with client.listen(tools_list_changed=True) as subscription, anyio.create_task_group() as tg:

        async def pump() -> None:
            async for _ in subscription:
                watcher.bump()

        watcher.listening = True
        tg.start_soon(pump)
        yield
        tg.cancel_scope.cancel()
