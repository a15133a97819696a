"""Nothing lost through the gateway under load: `toolscout serve` as a child process, real upstreams.

1,000 concurrent `execute_tool` calls over HTTP from ten clients of both protocol eras, spread
over four upstreams (two over streamable HTTP, two over stdio) whose tools echo their arguments:
every caller gets exactly its own answer, once. And a 50 MB result arrives whole, or cut with a
notice when asked, while the gateway keeps answering others.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, UVICORN_READY, running
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.paths import PYTHON, ROOT
from tests.servers.big_result import expected_text
from toolscout.demo.catalog_server import server_path

pytestmark = pytest.mark.anyio

CATALOG = Path(__file__).parent / "fixtures" / "catalog" / "catalog.jsonl"
CATALOG_SERVER = [PYTHON, "-m", "toolscout.demo.catalog_server", "--catalog", str(CATALOG)]
CLIENTS = 10
CALLS_PER_CLIENT = 100

# Gateway name -> (the catalog server behind it, the tool called, the arguments of call `token`).
ROUTES: dict[str, tuple[str, str]] = {
    "weather": ("Weather Station", "forecast"),
    "mail": ("mail", "send"),
    "files": ("files", "read_file"),
    "mail-stdio": ("mail", "send"),
}


def arguments_for(server: str, token: str) -> dict[str, Any]:
    """Unique arguments for one call: nothing but the token can make two answers alike."""
    tool = ROUTES[server][1]
    if tool == "forecast":
        return {"city": f"city {token}"}
    if tool == "send":
        return {"to": f"{token}@example.com", "body": f"body of {token}"}
    return {"path": f"/tmp/{token}.txt"}


@asynccontextmanager
async def gateway_in_front_of_echo_servers(tmp_path: Path, audit: Path) -> AsyncGenerator[str]:
    """`toolscout serve --transport http` fronting two HTTP and two stdio echo servers; yields its URL."""
    async with running([*CATALOG_SERVER, "--http", "--port", "0"], ready=UVICORN_READY) as catalog:
        base = f"http://127.0.0.1:{catalog.match.group(1)}"
        config = {
            "mcpServers": {
                "weather": {"url": base + server_path("Weather Station")},
                "mail": {"url": base + server_path("mail")},
                "files": {"command": PYTHON, "args": [*CATALOG_SERVER[1:], "--server", "files"]},
                "mail-stdio": {"command": PYTHON, "args": [*CATALOG_SERVER[1:], "--server", "mail"]},
            },
            "search": {"backend": "bm25"},
            "audit": {"path": str(audit)},
            # A client's pooled connection may sit idle past the default header deadline while its
            # other calls are answered on a loaded machine; the server closing it just as the client
            # reuses it is a keep-alive race, not what this test is about.
            "http": {"headerTimeout": 120},
        }
        path = tmp_path / "toolscout.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        command = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--transport", "http", "--port", "0"]
        async with running(command, ready=SERVE_READY) as gateway:
            yield gateway.match.group(1)


async def test_a_thousand_concurrent_calls_each_get_their_own_answer(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    servers = list(ROUTES)
    answers: dict[tuple[int, int], types.CallToolResult] = {}
    connected = 0
    all_connected = anyio.Event()
    go = anyio.Event()

    async with gateway_in_front_of_echo_servers(tmp_path, audit) as url:

        async def one_client(c: int) -> None:
            nonlocal connected
            async with Client(url, mode="legacy" if c % 2 == 0 else "auto") as client:
                # Every server connected (list_mcp_servers waits for them at start) before the burst.
                listed = await client.call_tool("list_mcp_servers", {})
                statuses = {s["name"]: s["status"] for s in cast(dict[str, Any], listed.structured_content)["servers"]}
                assert statuses == dict.fromkeys(servers, "connected"), statuses
                connected += 1
                if connected == CLIENTS:
                    all_connected.set()
                await go.wait()

                async def one_call(i: int) -> None:
                    server = servers[(c + i) % len(servers)]
                    call = {
                        "server": server,
                        "tool": ROUTES[server][1],
                        "arguments": arguments_for(server, f"c{c}-{i}"),
                    }
                    answers[(c, i)] = await client.call_tool("execute_tool", call)

                async with anyio.create_task_group() as calls:
                    for i in range(CALLS_PER_CLIENT):
                        calls.start_soon(one_call, i)

        started = 0.0
        with anyio.fail_after(90):
            async with anyio.create_task_group() as tg:
                for c in range(CLIENTS):
                    tg.start_soon(one_client, c)
                await all_connected.wait()
                started = time.perf_counter()
                go.set()  # all 1,000 calls leave together
        elapsed = time.perf_counter() - started

    assert len(answers) == CLIENTS * CALLS_PER_CLIENT
    wrong: list[str] = []
    for (c, i), result in sorted(answers.items()):
        server = servers[(c + i) % len(servers)]
        catalog_name, tool = ROUTES[server]
        args = arguments_for(server, f"c{c}-{i}")
        expected = {"server": catalog_name, "tool": tool, "arguments": args}
        echoed = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        text = [b.text for b in result.content if isinstance(b, types.TextContent)]
        if (
            result.is_error
            or result.structured_content != expected
            or text != [f"{catalog_name}/{tool} called with {echoed}"]
        ):
            wrong.append(f"client {c} call {i} to {server}: {result.model_dump(exclude_none=True)}")
    assert not wrong, f"{len(wrong)} callers got something else than their own answer:\n" + "\n".join(wrong[:10])

    # Each call reached its server exactly once: one audit line each, none missing, none twice.
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    executed = Counter(json.dumps([r["server"], r["arguments"]], sort_keys=True) for r in records)
    sent = Counter(
        json.dumps([servers[(c + i) % 4], arguments_for(servers[(c + i) % 4], f"c{c}-{i}")], sort_keys=True)
        for c in range(CLIENTS)
        for i in range(CALLS_PER_CLIENT)
    )
    assert executed == sent
    assert {r["outcome"] for r in records} == {"ok"}
    print(f"1,000 concurrent calls answered in {elapsed:.1f}s")


BIG = 50 * 1024 * 1024
BIG_CALL = {"server": "big", "tool": "blob", "arguments": {"size": BIG, "seed": "seed-1"}}
CONVERT = {"server": "units", "tool": "convert_units", "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"}}


@asynccontextmanager
async def big_result_config(tmp_path: Path, upstream: str, **extra: Any) -> AsyncGenerator[Path]:
    """A config fronting tests/servers/big_result.py and the units demo (stdio).

    `upstream` is how the gateway reaches big_result: `stdio`, `http` (`protocol: auto`, so 2026-07-28,
    where the SDK answers a call with plain JSON) or `http-legacy` (the handshake era, the default,
    where it answers with an SSE stream, as most HTTP servers do)."""
    async with contextlib.AsyncExitStack() as stack:
        if upstream == "stdio":
            big: dict[str, Any] = {"command": PYTHON, "args": ["-m", "tests.servers.big_result"], "cwd": str(ROOT)}
        else:
            served = await stack.enter_async_context(
                running([PYTHON, "-m", "tests.servers.big_result", "--http", "--port", "0"], ready=UVICORN_READY)
            )
            big = {"url": f"http://127.0.0.1:{served.match.group(1)}/mcp"}
            big["protocol"] = "legacy" if upstream == "http-legacy" else "auto"
        config = {
            "mcpServers": {
                "big": {**big, "timeout": 120},
                "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
            },
            "search": {"backend": "bm25"},
            **extra,
        }
        path = tmp_path / "toolscout.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        yield path


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("upstream", ["stdio", "http", "http-legacy"])
async def test_a_50_mb_result_arrives_whole_and_the_gateway_keeps_answering(tmp_path: Path, upstream: str) -> None:
    big: list[types.CallToolResult] = []
    small: list[float] = []
    meanwhile = 0
    """Other calls answered while the big result was still on its way."""
    done = anyio.Event()
    async with big_result_config(tmp_path, upstream, maxResultBytes=None) as config:  # (lifted: whole)
        command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
        # The SDK's client refuses SSE events over 1 MB unless told otherwise.
        async with (
            running(command, ready=SERVE_READY) as gateway,
            Client(streamable_http_client(gateway.match.group(1), max_sse_event_size=None), mode="legacy") as client,
        ):
            listed = await client.call_tool("list_mcp_servers", {})
            statuses = {s["name"]: s["status"] for s in cast(dict[str, Any], listed.structured_content)["servers"]}
            assert statuses == {"big": "connected", "units": "connected"}

            async def fetch_big() -> None:
                try:
                    big.append(await client.call_tool("execute_tool", BIG_CALL))
                finally:
                    done.set()

            async def keep_asking() -> None:
                # Other calls on the same session keep being answered while the big one is on its way.
                nonlocal meanwhile
                while not done.is_set():
                    asked = time.perf_counter()
                    result = await client.call_tool("execute_tool", CONVERT)
                    assert cast(dict[str, Any], result.structured_content)["result"] == 1000
                    small.append(time.perf_counter() - asked)
                    meanwhile += not done.is_set()

            started = time.perf_counter()
            with anyio.fail_after(100):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(fetch_big)
                    tg.start_soon(keep_asking)
            took = time.perf_counter() - started
            with anyio.fail_after(10):  # still answering afterwards
                after = await client.call_tool("execute_tool", CONVERT)

    print(f"50 MB in {took:.1f}s; {len(small)} other calls meanwhile, slowest {max(small, default=0):.2f}s")
    [result] = big
    assert not result.is_error, str(result.content)[:2000]
    [block] = result.content
    assert isinstance(block, types.TextContent)
    assert len(block.text) == BIG
    assert sha256(block.text) == sha256(expected_text(BIG, "seed-1"))
    # Answered before the big result was: a gateway that queued them behind it would answer none.
    assert meanwhile, "no other call was answered while the big result was on its way"
    assert cast(dict[str, Any], after.structured_content)["result"] == 1000


async def test_a_50_mb_result_is_cut_with_a_notice_when_max_output_chars_is_set(tmp_path: Path) -> None:
    """maxOutputChars in the config, the gateway over stdio: the client gets the head and a notice.

    The upstream is reached over HTTP here: through a stdio upstream the 50 MB alone take the gateway
    20-30 s to read (the SDK's stdio client), which the test above already pays for once."""
    async with big_result_config(tmp_path, "http", maxOutputChars=1000) as config:
        params = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config)])
        with (tmp_path / "gateway.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                with anyio.fail_after(100):
                    cut = await client.call_tool("execute_tool", BIG_CALL)
    expected = expected_text(1000, "seed-1")
    texts = [b.text for b in cut.content if isinstance(b, types.TextContent)]
    assert not cut.is_error
    assert texts == [
        expected,
        f"[toolscout: output cut to 1000 of {BIG} characters ({BIG - 1000} dropped). "
        "Call again with a larger max_output_chars, or narrow the request.]",
    ]
