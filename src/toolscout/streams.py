"""The base classes of the session streams toolscout writes itself: `async with` closes one, and
iterating it receives up to its end of stream, as the SDK's stream protocols expect.

They import nothing of the SDK, so that a module defining a stream (a connection's watched read
stream, built before anything connects) does not load it with them.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage


class AsyncClosing:
    """`async with` closes the stream, as the SDK's stream protocols expect of a stream."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class ReceiveIteration(AsyncClosing):
    """Async iteration over `receive()`, up to its EndOfStream."""

    async def receive(self) -> SessionMessage | Exception:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
