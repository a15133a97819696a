"""A real Redis for tests: Debian's `redis-server` on a free loopback port, in a temporary directory.

`RedisServer.start()` waits until it answers (bounded), `stop()` ends it (SIGTERM, then SIGKILL),
and a `start()` after a `stop()` brings it back on the same port with the same data (append-only
file), as an operator's restart would. `scripts/test` installs the package when it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import redis.asyncio as aioredis
import redis.exceptions

from tests.helpers.procs import free_port, stop

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_WAIT = 30.0
"""Bound on Redis answering after it starts (it usually takes milliseconds)."""


class RedisServer:
    """One redis-server child process, stoppable and restartable on its port."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: anyio.abc.Process | None = None

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--daemonize", "no",
            "--logfile", str(self.directory / "redis.log"),
        ]  # fmt: skip
        self.process = await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = aioredis.Redis.from_url(self.url, socket_connect_timeout=1)  # pyright: ignore[reportUnknownMemberType]
        try:
            with anyio.fail_after(START_WAIT):
                while True:
                    try:
                        if await client.ping():  # pyright: ignore[reportUnknownMemberType]
                            return
                    except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
                        pass
                    await anyio.sleep(0.02)
        finally:
            await client.aclose()

    async def stop(self) -> None:
        if self.process is not None:
            await stop(self.process)
            self.process = None


@asynccontextmanager
async def redis_server(directory: Path) -> AsyncGenerator[RedisServer]:
    """A running Redis for the block, stopped after it."""
    server = RedisServer(directory)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
