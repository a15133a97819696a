"""How soon one replica sees what was done through another (the replicas' target: within 1 s).

    python -m benchmarks replica_fanout [--times 20]

Two `toolscout serve --transport http --stateless` replicas sharing Debian's `redis-server` (started
by `benchmarks/processes.py`, as the tests start them), authentication on. Each round, timed from
the moment replica A's API answered:

* a registration through A until replica B's `list_mcp_servers` shows it (B applied it: Redis's
  change feed, else its 1 s version poll), asked every 5 ms;
* a token revoked through A until B refuses it (401), asked every 5 ms, B having read and
  cached the token's record just before.

The poll interval bounds the resolution (±5 ms plus one request); the figures are per round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
from mcp import Client

from benchmarks import harness
from benchmarks.processes import redis_server, served_gateway, write_config

ADMIN = "bench-fanout-admin-0123456789abcdef"
STEP = 0.005


async def run(times: int) -> None:
    os.environ["TS_FANOUT_ADMIN"] = ADMIN
    admin = {"authorization": f"Bearer {ADMIN}"}
    registered: list[float] = []
    revoked: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)

        def config(name: str, url: str) -> Path:
            (root / name).mkdir()
            registry = {"backend": "redis", "url": url}
            return write_config(root / name, registry=registry, auth={"adminKeys": ["${TS_FANOUT_ADMIN}"]})

        async with redis_server(root / "redis") as redis:
            config_a, config_b = config("a", redis.url), config("b", redis.url)
            async with (
                served_gateway(config_a, "--stateless") as a,
                served_gateway(config_b, "--stateless") as b,
                httpx2.AsyncClient(timeout=30, headers=admin) as http,
                httpx2.AsyncClient(timeout=30, headers=admin) as as_admin,
            ):
                from mcp.client.streamable_http import streamable_http_client

                async with Client(streamable_http_client(b.mcp_url, http_client=as_admin), mode="auto") as on_b:
                    for n in range(times):
                        body = {"global": True, "name": f"r{n}", "url": "http://127.0.0.1:1/mcp"}
                        created = await http.post(a.api_url + "/registry/servers", json=body)
                        assert created.status_code == 201, created.text
                        started = time.perf_counter()
                        while True:
                            listed = await on_b.call_tool("list_mcp_servers", {})
                            servers = cast(dict[str, Any], listed.structured_content)["servers"]
                            if any(s["name"] == f"r{n}" for s in servers):
                                break
                            await anyio.sleep(STEP)
                        registered.append((time.perf_counter() - started) * 1000)

                        token = (
                            await http.post(
                                a.api_url + "/tokens",
                                json={"namespace": "ns", "servers": ["*"], "ttlSeconds": 600, "label": f"t{n}"},
                            )
                        ).json()
                        holder = {"authorization": f"Bearer {token['token']}", "accept": "application/json"}
                        first = await http.post(b.mcp_url, headers=holder, json={})
                        assert first.status_code != 401, first.text  # B read and cached it
                        assert (await http.delete(f"{a.api_url}/tokens/{token['id']}")).status_code == 204
                        started = time.perf_counter()
                        # Another process's state: asked for every STEP, as a client would.
                        while (await http.post(b.mcp_url, headers=holder, json={})).status_code != 401:  # noqa: ASYNC110
                            await anyio.sleep(STEP)
                        revoked.append((time.perf_counter() - started) * 1000)
    machine = f"{harness.machine_line()}"
    print(f"{harness.today()}, {machine}; {times} rounds")
    print()
    print("| what, through A | seen by B: p50 ms | max ms |")
    print("|---|---|---|")
    for label, values in (
        ("a registration (in B's list_mcp_servers)", registered),
        ("a revocation (B answers 401)", revoked),
    ):
        print(f"| {label} | {statistics.median(values):.1f} | {max(values):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--times", type=int, default=20)
    anyio.run(run, parser.parse_args().times)
