"""An ASGI app served by uvicorn on a socket already bound, for the block: the small real HTTP servers
the tests stand up (a callback tool's URL, an OAuth-protected MCP server)."""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Literal

import anyio
import uvicorn
from starlette.types import ASGIApp


@asynccontextmanager
async def serving(app: ASGIApp, sock: socket.socket, *, lifespan: Literal["on", "off"] = "off") -> AsyncGenerator[None]:
    """Serve `app` on `sock` until the block ends; the socket is closed after."""
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: web.serve(sockets=[sock]))
            try:
                yield
            finally:
                web.should_exit = True
    finally:
        sock.close()
