"""Real servers run as child processes for the benchmarks and the tests, waited on through what they print.

The first part starts any command and waits for the line that says it is ready (never on the clock),
then stops it: `running`, `stop`, `free_port`. The parts after it start the real servers that the
replica benchmarks and tests need: Debian's `redis-server` on a free loopback port (`redis_server`),
Debian's nginx as a round-robin load balancer in front of replicas (`balancer`), and
`toolscout serve --transport http` with its registry in a scratch directory and its HTTP API at hand
(`served_gateway`). `scripts/test` installs redis-server and nginx when they are missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import redis.asyncio as aioredis
import redis.exceptions
from anyio.streams.text import TextReceiveStream
from mcp import Client

PYTHON = sys.executable
"""The Python running the benchmark or the test, which runs the child processes too."""

UVICORN_READY = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"
"""What uvicorn prints once it serves (port 0: the port it picked)."""
SERVE_READY = r"serving streamable HTTP at (http://\S+/mcp)"
"""What `toolscout serve --transport http` prints on start: its URL."""


@dataclass
class Running:
    process: anyio.abc.Process
    match: re.Match[str]
    stderr: list[str] = field(default_factory=list[str])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc/<pid>/stat, clock-tick resolution; Linux only)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def collect_lines(stream: anyio.abc.ByteReceiveStream, lines: list[str]) -> None:
    """Append each complete line `stream` carries to `lines` until it closes (a child's stderr, read
    while a test waits on what the child said)."""
    buffer = ""
    async for chunk in TextReceiveStream(stream, errors="replace"):
        *complete, buffer = (buffer + chunk).split("\n")
        lines.extend(complete)


@asynccontextmanager
async def running(
    command: Sequence[str],
    *,
    ready: str,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 60,
    stdin: int = subprocess.DEVNULL,
) -> AsyncGenerator[Running]:
    """Start `command`, wait until a stderr line matches `ready`, and stop it (SIGTERM, then SIGKILL) afterwards.

    `stdin=subprocess.PIPE` keeps its stdin open (and silent) while it runs: a stdio server's.
    """
    pattern = re.compile(ready)
    process = await anyio.open_process(
        list(command), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    lines: list[str] = []
    decided = anyio.Event()  # the ready line arrived, or stderr closed without it
    matched: list[re.Match[str]] = []

    async def pump() -> None:
        assert process.stderr is not None
        buffer = ""
        async for chunk in TextReceiveStream(process.stderr, errors="replace"):
            buffer += chunk
            *complete, buffer = buffer.split("\n")
            for line in complete:
                lines.append(line)
                if not matched and (m := pattern.search(line)):
                    matched.append(m)
                    decided.set()
        decided.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            with anyio.fail_after(startup_timeout):
                await decided.wait()
            if not matched:
                raise AssertionError(f"{command} closed stderr before printing {ready!r}:\n" + "\n".join(lines))
            yield Running(process, matched[0], lines)
        except TimeoutError:
            raise AssertionError(
                f"{command} did not print {ready!r} in {startup_timeout}s:\n" + "\n".join(lines)
            ) from None
        finally:
            await stop(process)
            tg.cancel_scope.cancel()


async def stop(process: anyio.abc.Process, grace: float = 10) -> int:
    """SIGTERM, wait (bounded), then SIGKILL; returns the exit code."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(grace):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    assert process.returncode is not None
    return process.returncode


def alive(pid: int) -> bool:
    """Whether process `pid` still runs: a zombie (dead, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    with suppress(FileNotFoundError):
        return "\nState:\tZ" not in status.read_text()
    return False  # it ended between the two looks


async def exited(pid: int) -> None:
    """Wait (bounded: 10 s, or the caller's scope) for process `pid` to end, told by a pidfd, no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(10):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)


START_WAIT = 30.0
"""Bound on Redis or nginx answering after it starts (it usually takes milliseconds)."""
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """One redis-server child process, stoppable and restartable on its port.

    `start()` waits until it answers (bounded) and `stop()` ends it (SIGTERM, then SIGKILL). A `start()`
    after a `stop()` brings it back on the same port with the same data (append-only file), as an
    operator's restart would.
    """

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


NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_config(
    directory: Path, port: int, backends: Sequence[str], *, keepalive: int = 0, tls: tuple[Path, Path] | None = None
) -> str:
    """nginx's configuration; `keepalive`: idle connections to the replicas kept for reuse (0: a new
    connection for every request); `tls`: a certificate and its key, to serve https and pass plain
    http on, saying so in `X-Forwarded-Proto` (a TLS-terminating proxy)."""
    listen = f"listen 127.0.0.1:{port}"
    if tls is not None:
        listen += f" ssl;\n        ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]}"
    # A replica that refuses connections is left out for 2 s, and the request goes to the next one
    # (a request not yet sent may go elsewhere, even a POST); one sent and lost is a 502, never retried.
    servers = "\n".join(f"        server {urlsplit(url).netloc} max_fails=1 fail_timeout=2s;" for url in backends)
    user = "user root;\n" if os.geteuid() == 0 else ""  # as root, workers would otherwise run as nobody
    return f"""{user}worker_processes 1;
daemon off;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format upstream '$upstream_addr $status $request_uri';
    access_log {directory}/access.log upstream;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    upstream replicas {{
{servers}
{f"        keepalive {keepalive};" if keepalive else ""}
    }}
    server {{
        {listen};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 120s;
            proxy_next_upstream error timeout;
        }}
    }}
}}
"""


def trusting(certificate: Path) -> ssl.SSLContext:
    """A client's TLS context that trusts `certificate` (a test's self-signed one) and nothing else."""
    return ssl.create_default_context(cafile=str(certificate))


async def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by `openssl` in `directory` (valid for a day)."""
    await anyio.Path(directory).mkdir(parents=True, exist_ok=True)
    certificate, key = directory / "cert.pem", directory / "key.pem"
    command = [
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-keyout", str(key), "-out", str(certificate),
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
    ]  # fmt: skip
    await anyio.run_process(command, check=True)
    return certificate, key


def _write_config(
    directory: Path, port: int, backends: Sequence[str], keepalive: int, tls: tuple[Path, Path] | None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "nginx.conf"
    config.write_text(nginx_config(directory, port, backends, keepalive=keepalive, tls=tls), encoding="utf-8")
    return config


@asynccontextmanager
async def balancer(
    directory: Path, backends: Sequence[str], *, keepalive: int = 0, tls: tuple[Path, Path] | None = None
) -> AsyncGenerator[str]:
    """Run nginx round-robin over `backends` (base URLs) for the block and yield its base URL (https
    with `tls`, a certificate and its key: see `nginx_config`).

    Its configuration, logs and temporary files live in `directory`; it passes streamable HTTP through
    unbuffered, and `access.log` there has a line per request: the replica that answered, the status and
    the path.
    """
    port = free_port()
    config = _write_config(directory, port, backends, keepalive, tls)
    process = await anyio.open_process(
        [NGINX, "-p", str(directory), "-c", str(config), "-e", str(directory / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(timeout=5, verify=trusting(tls[0]) if tls else True) as http:
            with anyio.fail_after(START_WAIT):
                while True:  # nginx has no readiness line: asked as a client would
                    try:
                        if (await http.get(base + "/healthz")).status_code == 200:
                            break
                    except httpx2.TransportError:
                        pass
                    await anyio.sleep(0.05)
        yield base
    finally:
        await stop(process)


POLL_SECONDS = 0.2
"""How often a test asks the gateway again while waiting for a server's state to change."""


def write_config(directory: Path, **extra: Any) -> Path:
    """A config fronting the units demo (stdio) as `units`, its registry and audit log in `directory`."""
    config: dict[str, Any] = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "registry": {"path": str(directory / "registry.sqlite3")},
        "audit": {"path": str(directory / "audit.jsonl")},
        **extra,
    }
    path = directory / "toolscout.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@dataclass
class ServedGateway:
    """A `toolscout serve --transport http` child process, its MCP endpoint and its HTTP API."""

    process: Running
    mcp_url: str
    api_url: str
    """`http://127.0.0.1:PORT/api/v1`"""
    base_url: str
    """`http://127.0.0.1:PORT`: what `toolscout registry --url` takes."""

    async def api(self, method: str, path: str, body: Any = None, *, content: bytes | None = None) -> httpx2.Response:
        """One request to the gateway's HTTP API."""
        async with httpx2.AsyncClient(timeout=30) as http:
            if content is not None:
                return await http.request(method, self.api_url + path, content=content)
            return await http.request(method, self.api_url + path, json=body)


@asynccontextmanager
async def served_gateway(config: Path, *extra_args: str) -> AsyncGenerator[ServedGateway]:
    """`toolscout serve --transport http --port 0 --config CONFIG` until the block ends."""
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    async with running([*command, *extra_args], ready=SERVE_READY) as process:
        mcp_url = process.match.group(1)
        base = mcp_url.removesuffix("/mcp")
        yield ServedGateway(process, mcp_url, base + "/api/v1", base)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: Any = result.structured_content
    assert isinstance(content, dict)
    return cast(dict[str, Any], content)


async def servers(client: Client) -> dict[str, dict[str, Any]]:
    """`list_mcp_servers` by name."""
    listed = structured(await client.call_tool("list_mcp_servers", {}))["servers"]
    return {entry["name"]: entry for entry in listed}


async def until(
    client: Client, wanted: Callable[[dict[str, dict[str, Any]]], bool], *, seconds: float = 60
) -> dict[str, dict[str, Any]]:
    """`list_mcp_servers` by name, once `wanted` says yes (asked again every `POLL_SECONDS`, at most `seconds`)."""
    with anyio.fail_after(seconds):
        while True:  # another process's state: asked for, as a client would
            found = await servers(client)
            if wanted(found):
                return found
            await anyio.sleep(POLL_SECONDS)


def status_of(name: str) -> Callable[[dict[str, dict[str, Any]]], str | None]:
    return lambda found: found[name]["status"] if name in found else None
