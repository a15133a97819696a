"""A gateway served over streamable HTTP on a free port, in process (uvicorn on a bound socket)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import uvicorn

from toolscout.config.models import ModeName
from toolscout.gateway.core import Gateway
from toolscout.serve.http import bind, build_server
from toolscout.serve.sessions import ClientSessions


@asynccontextmanager
async def http_gateway(
    gateway: Gateway, sessions: ClientSessions | None = None, mode: ModeName = "dynamic"
) -> AsyncGenerator[str]:
    """The gateway (in dynamic mode unless told otherwise) over streamable HTTP on a free port."""
    server = build_server(gateway, mode, sessions=sessions)
    sock = bind("127.0.0.1", 0)
    web = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        web.should_exit = True
