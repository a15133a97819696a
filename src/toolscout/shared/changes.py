"""A count of changes that can be awaited, for state that clients or derived data follow."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio


class Changes:
    """`version` grows with every change; `wait` returns at the next one; `bursts` groups them."""

    def __init__(self) -> None:
        self.version = 0
        self._event = anyio.Event()

    def bump(self) -> None:
        """Record one change and wake whoever waits for it."""
        self.version += 1
        self._event.set()
        self._event = anyio.Event()

    async def wait(self) -> None:
        """Wait for the next change."""
        await self._event.wait()

    async def bursts(self, quiet: float) -> AsyncIterator[None]:
        """Yield once per burst of changes, `quiet` seconds after its first change, forever.

        Changes made while the consumer works on a burst start the next one: none is missed.
        """
        seen = self.version
        while True:
            if self.version == seen:
                await self.wait()
            await anyio.sleep(quiet)
            seen = self.version
            yield
