"""A real load balancer for tests: Debian's nginx, round robin without stickiness, in front of replicas.

Its configuration, logs and temporary files live in the test's directory; it listens on a free
loopback port and passes streamable HTTP through unbuffered (SSE responses stream as they come).
`access.log` there has a line per request: the replica that answered, the status and the path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2

from tests.helpers.procs import free_port, stop

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
START_WAIT = 30.0


def nginx_config(directory: Path, port: int, backends: Sequence[str], *, keepalive: int = 0) -> str:
    """nginx's configuration; `keepalive`: idle connections to the replicas kept for reuse (0: a new
    connection for every request)."""
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
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 120s;
            proxy_next_upstream error timeout;
        }}
    }}
}}
"""


def _write_config(directory: Path, port: int, backends: Sequence[str], keepalive: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "nginx.conf"
    config.write_text(nginx_config(directory, port, backends, keepalive=keepalive), encoding="utf-8")
    return config


@asynccontextmanager
async def balancer(directory: Path, backends: Sequence[str], *, keepalive: int = 0) -> AsyncGenerator[str]:
    """nginx round-robin over `backends` (base URLs) for the block; yields its base URL."""
    port = free_port()
    config = _write_config(directory, port, backends, keepalive)
    process = await anyio.open_process(
        [NGINX, "-p", str(directory), "-c", str(config), "-e", str(directory / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(timeout=5) as http:
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
