"""How long the dashboard's pages take with a large catalog, in process.

    python -m benchmarks dashboard_pages [--tools 10000] [--requests 100]

A gateway whose catalog holds `--tools` tools (200 servers' worth, set directly: no upstream runs,
so only the dashboard's own work is measured), and the dashboard's ASGI app called as uvicorn would
call it, without a socket. Each page is asked `--requests` times; reported: p50 and p95 in ms of
the Tools page (first page, a text filter that keeps a few hundred, a page far down) and of Servers.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from starlette.types import Message

from toolscout.gateway.audit import AuditLog, Outcome
from toolscout.gateway.core import Gateway
from toolscout.serve.auth import AnonymousPrincipals
from toolscout.serve.dashboard.app import dashboard_app
from toolscout.serve.dashboard.context import Dashboard

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "Where."}, "limit": {"type": "integer"}},
    "required": ["path"],
}


def catalog_gateway(count: int) -> Gateway:
    gateway = Gateway([])
    per_server = 50
    for server in range(count // per_server):
        tools = [
            types.Tool(
                name=f"tool_{server}_{k}",
                description=f"Does thing {k} of server {server}: reads, writes and lists items.",
                input_schema=SCHEMA,
            )
            for k in range(per_server)
        ]
        gateway.catalog.set_server_tools(f"server-{server}", tools)
    return gateway


async def ask(app: Any, path: str, query: str = "") -> float:
    sent: list[Message] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
        "scheme": "http",
        "root_path": "",
        "http_version": "1.1",
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    started = time.perf_counter()
    await app(scope, receive, send)
    elapsed = time.perf_counter() - started
    assert sent[0]["status"] == 200, (path, query, sent[0]["status"])
    return elapsed * 1000


AUDIT_LINES = 20_000


async def run(tools: int, requests: int) -> None:
    gateway = catalog_gateway(tools)
    app = dashboard_app(Dashboard(gateway, AnonymousPrincipals()))
    cases = {
        "tools, first page": ("/dashboard/tools", ""),
        "tools, q=thing 7": ("/dashboard/tools", "q=thing+7"),
        "tools, page 150": ("/dashboard/tools", "page=150"),
        "servers": ("/dashboard/servers", ""),
        "search, q=reads items": ("/dashboard/search", "q=reads+and+lists+items"),
        "activity": ("/dashboard/activity", ""),
    }
    print(f"{len(gateway.catalog.tools(include_disabled=True))} tools, {requests} requests per page")
    async with gateway:  # (search builds its index in the gateway's task group)
        directory = Path(tempfile.mkdtemp(prefix="toolscout-bench-"))
        gateway.audit = audit = AuditLog(directory / "audit.jsonl", max_bytes=1 << 30)
        for k in range(AUDIT_LINES):  # Activity reads the last 10,000 executions for its statistics
            outcome: Outcome = "isError" if k % 17 == 0 else "ok"
            await audit.record(
                server=f"s{k % 7}",
                tool=f"tool_s{k % 7}_{k % 50}",
                arguments={"k": k},
                duration_ms=k % 90,
                outcome=outcome,
            )
        for label, (path, query) in cases.items():
            timings = [await ask(app, path, query) for _ in range(requests)]
            p95 = statistics.quantiles(timings, n=20)[-1]
            print(f"  {label:<22} p50 {statistics.median(timings):6.1f} ms   p95 {p95:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    anyio.run(run, args.tools, args.requests)


if __name__ == "__main__":
    main()
