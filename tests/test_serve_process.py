"""`toolscout serve` as a real child process, over stdio and HTTP, driven by `mcp.Client`.

Behind it: demo servers spawned over stdio, one demo server over streamable HTTP and
one over SSE, each a separate process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, UVICORN_READY, alive, running, stop
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers.list_changes import ListWatcher, watched_client
from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

META_TOOL_NAMES = ["list_mcp_servers", "search_tools", "list_tools", "get_tool_details", "execute_tool"]
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
PID_WRITER = (
    "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); "
    "sys.argv = ['notes']; from toolscout.demo.notes import main; main()"
)


def initialize_request(client: str) -> dict[str, Any]:
    """A raw 2025-11-25 `initialize` (id 1) from a client named `client`."""
    info = {"name": client, "version": "0"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


@asynccontextmanager
async def config_with_remote_demos(tmp_path: Path) -> AsyncGenerator[Path]:
    """A config fronting notes (stdio, reporting its pid), units (stdio), text (HTTP) and files (SSE)."""
    # Port 0, the port read from the server's own line: a port picked free beforehand may be taken by
    # another test's process before the server binds it.
    async with (
        running(
            [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", "0"], ready=UVICORN_READY
        ) as text,
        running(
            [PYTHON, "-m", "toolscout.demo.files", "--transport", "sse", "--port", "0"], ready=UVICORN_READY
        ) as files,
    ):
        text_port, files_port = text.match.group(1), files.match.group(1)
        config = {
            "mcpServers": {
                "notes": {"command": PYTHON, "args": ["-c", PID_WRITER, str(tmp_path / "notes.pid")]},
                "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"], "description": "Units!"},
                "text": {"url": f"http://127.0.0.1:{text_port}/mcp"},
                "files": {"url": f"http://127.0.0.1:{files_port}/sse"},
            },
            "toolRules": [{"pattern": ["delete_*"], "enabled": False, "tags": ["dangerous"]}],
        }
        path = tmp_path / "toolscout.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        yield path


def data(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: Any = result.structured_content
    assert isinstance(content, dict)
    return cast(dict[str, Any], content)


async def exercise(client: Client) -> None:
    """All five meta-tools, reaching a server on each transport."""
    assert [t.name for t in (await client.list_tools()).tools] == META_TOOL_NAMES

    servers = data(await client.call_tool("list_mcp_servers", {}))["servers"]
    by_name = {s["name"]: s for s in servers}
    assert set(by_name) == {"notes", "units", "text", "files"}
    assert {s["status"] for s in servers} == {"connected"}, servers
    assert by_name["units"]["description"] == "Units!"
    assert by_name["notes"]["enabledCount"] == by_name["notes"]["toolCount"] - 1  # delete_note is disabled

    hits = data(await client.call_tool("search_tools", {"query": "convert miles to kilometers", "limit": 3}))
    assert (hits["results"][0]["server"], hits["results"][0]["tool"]) == ("units", "convert_units")

    listed = data(await client.call_tool("list_tools", {"server": "files"}))
    assert "read_file" in [t["name"] for t in listed["tools"]]

    details = data(await client.call_tool("get_tool_details", {"server": "text", "tool": "slugify"}))
    assert "text" in [p["name"] for p in details["parameters"]]

    converted = data(
        await client.call_tool(
            "execute_tool",
            {"server": "units", "tool": "convert_units", "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"}},
        )
    )
    assert converted["result"] == 1000
    slug = data(
        await client.call_tool(
            "execute_tool", {"server": "text", "tool": "slugify", "arguments": {"text": "Hello, World!"}}
        )
    )
    assert slug == {"result": "hello-world"}
    readme = await client.call_tool(
        "execute_tool", {"server": "files", "tool": "read_file", "arguments": {"path": "README.md"}}
    )
    assert not readme.is_error
    found = data(
        await client.call_tool(
            "execute_tool", {"server": "notes", "tool": "search_notes", "arguments": {"text": "groceries"}}
        )
    )
    assert found

    refused = await client.call_tool(
        "execute_tool", {"server": "notes", "tool": "delete_note", "arguments": {"id": "1"}}
    )
    assert refused.is_error
    assert cast(dict[str, Any], refused.structured_content)["error"]["code"] == "TOOL_DISABLED"


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_serve_over_stdio(tmp_path: Path, era: str) -> None:
    async with config_with_remote_demos(tmp_path) as config:
        params = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config)])
        log = tmp_path / "gateway.log"
        with log.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=era) as client:
                expected = "2025-11-25" if era == "legacy" else "2026-07-28"
                assert client.protocol_version == expected
                assert client.server_info is not None and client.server_info.name == "toolscout"
                await exercise(client)
                notes_pid = int((tmp_path / "notes.pid").read_text())
                assert alive(notes_pid)
        # Closing stdin ends the gateway, and its children with it.
        assert not alive(notes_pid)
        logged = log.read_text()
        assert "serving MCP on stdio" in logged
        assert "notes: connected" in logged


@pytest.mark.parametrize(("stateless", "era"), [(False, "legacy"), (False, "auto"), (True, "legacy"), (True, "auto")])
async def test_serve_over_http(tmp_path: Path, stateless: bool, era: str) -> None:
    async with config_with_remote_demos(tmp_path) as config:
        command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
        if stateless:
            command.append("--stateless")
        async with running(command, ready=SERVE_READY) as gateway:
            assert ("stateless" if stateless else "stateful") in gateway.match.string
            async with Client(gateway.match.group(1), mode=era) as client:
                await exercise(client)


async def test_sigterm_stops_the_gateway_and_its_children(tmp_path: Path) -> None:
    async with config_with_remote_demos(tmp_path) as config:
        command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
        async with running(command, ready=SERVE_READY) as gateway:
            async with Client(gateway.match.group(1)) as client:
                servers = data(await client.call_tool("list_mcp_servers", {}))["servers"]
                assert all(s["status"] == "connected" for s in servers)
            notes_pid = int((tmp_path / "notes.pid").read_text())
            assert alive(notes_pid)
            gateway.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                code = await gateway.process.wait()
            assert code == 0, "\n".join(gateway.stderr)
            assert not alive(notes_pid)
            assert "received SIGTERM, shutting down" in "\n".join(gateway.stderr)


async def test_sigterm_on_stdio_does_not_wait_for_the_client(tmp_path: Path) -> None:
    async with config_with_remote_demos(tmp_path) as config:
        # stdin stays open and silent: the gateway must not need another line from the client to stop.
        process = await anyio.open_process(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stderr is not None
        seen = ""
        with anyio.fail_after(60):
            while "notes: connected" not in seen:
                seen += (await process.stderr.receive()).decode(errors="replace")
        notes_pid = int((tmp_path / "notes.pid").read_text())
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            assert await process.wait() == 0
        assert not alive(notes_pid)
        await stop(process)


async def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    async with (
        config_with_remote_demos(tmp_path) as config,
        running(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"],
            ready=SERVE_READY,
        ) as first,
    ):
        port = first.match.group(1).rsplit(":", 1)[1].split("/")[0]
        process = await anyio.open_process(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", port]
        )
        with anyio.fail_after(60):
            code = await process.wait()
        assert process.stderr is not None
        chunks: list[bytes] = []
        with anyio.fail_after(10):
            async for chunk in process.stderr:
                chunks.append(chunk)
        message = b"".join(chunks).decode()
        assert code == 1
        assert f"cannot listen on 127.0.0.1:{port}" in message and "Traceback" not in message
        await stop(process)


@pytest.mark.parametrize("stdin", ["/dev/null", "a file"])
def test_stdio_from_devices_and_files_that_epoll_cannot_watch(tmp_path: Path, stdin: str) -> None:
    # `serve < /dev/null > /dev/null` (a supervisor that gives it no terminal) once ended in a
    # traceback: epoll refuses devices and regular files. Both now end at once, cleanly, at EOF.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    initialize = initialize_request("file")
    source = Path(os.devnull)
    if stdin == "a file":
        # What was read before EOF is answered before serving ends (it used to be cancelled).
        source = tmp_path / "requests.jsonl"
        requests = [initialize, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, PING]
        source.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    sink = Path(os.devnull) if stdin == "/dev/null" else tmp_path / "responses.jsonl"
    with source.open("rb") as into, sink.open("wb") as out:
        done = subprocess.run(
            [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
            stdin=into,
            stdout=out,
            stderr=subprocess.PIPE,
            env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
            timeout=60,
            check=False,
        )
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in stderr, stderr
    if stdin == "a file":
        responses = {r["id"]: r for r in map(json.loads, sink.read_text(encoding="utf-8").splitlines())}
        assert sorted(responses) == [1, 2, 3]
        assert responses[1]["result"]["serverInfo"]["name"] == "toolscout"
        assert [t["name"] for t in responses[2]["result"]["tools"]] == META_TOOL_NAMES
        assert responses[3]["result"] == {}


def test_requests_read_before_eof_are_answered_and_a_hanging_one_does_not_keep_the_gateway(tmp_path: Path) -> None:
    # A client that writes its requests and closes stdin at once gets every answer that can come;
    # a call to a server that never answers is given up (EOF_ANSWER_SECONDS) and the gateway exits.
    # (Before, EOF cancelled every request still in flight, answerable or not.)
    config = tmp_path / "config.json"
    stuck = {"command": PYTHON, "args": ["-c", "import time; time.sleep(3600)"]}
    config.write_text(json.dumps({"mcpServers": {"stuck": stuck}}), encoding="utf-8")
    initialize = initialize_request("eof")
    hang: dict[str, Any] = {"server": "stuck", "tool": "anything", "arguments": {}}
    requests: list[dict[str, Any]] = [
        initialize,
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "execute_tool", "arguments": hang}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {**PING, "id": 4},
    ]
    done = subprocess.run(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
        input="".join(json.dumps(r) + "\n" for r in requests).encode(),
        capture_output=True,
        env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
        timeout=60,
        check=False,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in stderr, stderr
    responses = {r["id"]: r for r in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(responses) == [1, 2, 3, 4], responses
    assert [t["name"] for t in responses[3]["result"]["tools"]] == META_TOOL_NAMES
    assert responses[4]["result"] == {}
    # The call to `stuck` could not be answered: the SDK tells the client so as serving ends.
    assert responses[2]["error"]["message"] == "Connection closed", responses[2]


async def test_an_open_listen_stream_does_not_hold_the_gateway_at_eof(tmp_path: Path) -> None:
    # `subscriptions/listen` is answered only when the client ends it: a 2026-07-28 client that
    # closes stdin with one open must not wait for it (it did, until the client's SIGTERM 2 s later).
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    log = tmp_path / "gateway.log"
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "toolscout", "serve", "--config", str(config), "--mode", "dynamic"],
        env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
    )
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            listen = client.listen(tools_list_changed=True)
            await listen.__aenter__()  # left open: the client goes away with the stream still listening
    text = log.read_text(encoding="utf-8")
    assert "serving MCP on stdio" in text and "received SIGTERM" not in text, text


def test_a_client_that_stops_reading_stdout_ends_the_gateway_cleanly(tmp_path: Path) -> None:
    # A client that closes its end of our stdout while its stdin stays open: the next response
    # meets EPIPE, which ends serving as stdin's EOF would, with no traceback.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    initialize = initialize_request("gone")
    process = subprocess.Popen(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        process.stdin.write((json.dumps(initialize) + "\n").encode())
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        process.stdout.close()
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        process.stdin.write((json.dumps(ping) + "\n").encode())
        process.stdin.flush()
        code = process.wait(timeout=60)
        stderr = process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stderr.close()
    assert code == 0 and "Traceback" not in stderr, stderr


async def test_stdout_carries_only_json_rpc(tmp_path: Path) -> None:
    """Speak raw JSON-RPC to `serve` and check every stdout line, with an upstream that prints junk to its stdout."""
    noisy = Path(__file__).parent / "fixtures" / "noisy_server.py"
    config = tmp_path / "toolscout.yaml"
    config.write_text(f"mcpServers:\n  noisy:\n    command: {PYTHON}\n    args: ['{noisy}']\n", encoding="utf-8")
    process = await anyio.open_process([PYTHON, "-m", "toolscout", "serve", "--config", str(config)])
    assert process.stdin is not None and process.stdout is not None
    requests: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "execute_tool",
                "arguments": {"server": "noisy", "tool": "shout", "arguments": {"text": "hi"}},
            },
        },
    ]
    for request in requests:
        await process.stdin.send((json.dumps(request) + "\n").encode())
    lines: list[str] = []
    buffer = b""
    with anyio.fail_after(60):
        while len(lines) < 2:
            buffer += await process.stdout.receive()
            *complete, buffer = buffer.split(b"\n")
            lines += [line.decode() for line in complete]
    await process.stdin.aclose()
    with anyio.fail_after(30):
        assert await process.wait() == 0
    messages = [json.loads(line) for line in lines]  # a stray print would fail to parse here
    assert [m["id"] for m in messages] == [1, 2]
    assert messages[1]["result"]["structuredContent"] == {"result": "HI"}


async def exercise_compact(client: Client) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["inspect", "exec"]
    description = listed.tools[0].description or ""
    assert "  Server: units" in description and "    - convert_units: " in description
    schema = data(await client.call_tool("inspect", {"server_name": "units", "tool_name": "convert_units"}))
    assert "value" in schema["input_schema"]["properties"]
    result = await client.call_tool(
        "exec",
        {
            "server_name": "units",
            "tool_name": "convert_units",
            "arguments": {"value": 10, "from_unit": "km", "to_unit": "mi"},
        },
    )
    assert not result.is_error, result


async def exercise_passthrough(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    # stdio, streamable HTTP and SSE upstreams alike, under their native names.
    assert {"notes__create_note", "units__convert_units", "text__word_count", "files__read_file"} <= set(listed)
    arguments = {"value": 10, "from_unit": "km", "to_unit": "mi"}
    result = await client.call_tool("units__convert_units", arguments)
    assert not result.is_error, result
    assert cast(dict[str, Any], result.structured_content)["to_unit"] == "mi"


async def exercise_smart(client: Client) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["smart_tool_discovery"]
    # Plain words to a stdio upstream's tool, and to the HTTP one's.
    result = await client.call_tool("smart_tool_discovery", {"request": "convert 10 km to miles"})
    assert not result.is_error, result
    answer = data(result)
    assert answer["tool_name"] == "units/convert_units"
    assert answer["parameters"] == {"value": 10, "from_unit": "km", "to_unit": "miles"}
    assert answer["execution_result"]["structuredContent"]["to_unit"] == "mi"  # the server's own name for it
    counted = data(await client.call_tool("smart_tool_discovery", {"request": "count the words in 'to be or not'"}))
    assert counted["tool_name"] == "text/word_count" and counted["execution_result"]["structuredContent"]["words"] == 4


MODE_EXERCISES = {"compact": exercise_compact, "passthrough": exercise_passthrough, "smart": exercise_smart}


@pytest.mark.parametrize("mode", ["compact", "passthrough", "smart"])
async def test_modes_over_stdio_and_http(tmp_path: Path, mode: str) -> None:
    exercise_mode = MODE_EXERCISES[mode]
    async with config_with_remote_demos(tmp_path) as config:
        serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", mode]
        with (tmp_path / "gateway.log").open("w") as errlog:
            params = StdioServerParameters(command=serve[0], args=serve[1:])
            try:
                async with Client(stdio_client(params, errlog=errlog), mode="auto") as client:
                    await exercise_mode(client)
            except BaseException as exc:  # a gateway that died says why in its log: show it with the failure
                exc.add_note("the gateway's log:\n" + (tmp_path / "gateway.log").read_text()[-6000:])
                raise
        assert f"{mode} mode" in (tmp_path / "gateway.log").read_text()
        async with running([*serve, "--transport", "http", "--port", "0"], ready=SERVE_READY) as gateway:
            assert f"{mode} mode" in gateway.match.string
            async with Client(gateway.match.group(1), mode="legacy") as client:
                await exercise_mode(client)


async def exercise_dynamic(target: Any, era: str) -> None:
    watcher = ListWatcher()
    async with watched_client(target, era, watcher) as client:
        loaded = await client.call_tool("load_tools", {"tools": [{"server": "units", "tool": "convert_units"}]})
        if client.protocol_version == "2026-07-28":  # tools/list cannot vary per connection: nothing loads
            assert loaded.is_error and "pinnedTools" in str(loaded.structured_content), loaded
        else:
            assert not loaded.is_error, loaded
            await watcher.wait_for(1)
            assert "units__convert_units" in [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("units__convert_units", {"value": 10, "from_unit": "km", "to_unit": "mi"})
        assert cast(dict[str, Any], result.structured_content)["to_unit"] == "mi"


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_dynamic_mode_over_stdio_and_http(tmp_path: Path, era: str) -> None:
    async with config_with_remote_demos(tmp_path) as config:
        serve = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", "dynamic"]
        with (tmp_path / "gateway.log").open("w") as errlog:
            await exercise_dynamic(
                stdio_client(StdioServerParameters(command=serve[0], args=serve[1:]), errlog=errlog), era
            )
        async with running([*serve, "--transport", "http", "--port", "0"], ready=SERVE_READY) as gateway:
            assert "dynamic mode" in gateway.match.string
            await exercise_dynamic(gateway.match.group(1), era)


async def test_a_client_that_never_reads_stderr_does_not_stall_the_gateway(tmp_path: Path) -> None:
    """The gateway logs its upstreams' stderr on its own; with nobody reading it, the pipe fills
    (64 KiB) at once here: calls go on being answered, and the lines dropped meanwhile are counted."""
    noisy = Path(__file__).parent / "fixtures" / "noisy_server.py"
    config = tmp_path / "toolscout.yaml"
    config.write_text(
        f"mcpServers:\n  noisy:\n    command: {PYTHON}\n    args: ['{noisy}', --stderr-per-call]\n", encoding="utf-8"
    )
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    drained = bytearray()
    note = b"log lines dropped: stderr was not read fast enough"

    async def drain() -> None:
        while True:
            await anyio.wait_readable(read_end)
            try:
                chunk = os.read(read_end, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                return
            drained.extend(chunk)

    params = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config)])
    try:
        with os.fdopen(write_end, "w") as unread:
            async with Client(stdio_client(params, errlog=unread)) as client:
                call = {"server": "noisy", "tool": "shout", "arguments": {"text": "hi"}}
                for _ in range(12):  # 3 MiB of upstream stderr for a pipe of 64 KiB
                    with anyio.fail_after(20):
                        result = await client.call_tool("execute_tool", call)
                    assert not result.is_error and "HI" in str(result.content)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain)
                    # Once stderr moves again, the next line logged says how many were lost.
                    with anyio.fail_after(30):
                        while note not in drained:
                            await client.call_tool("execute_tool", call)
                    tg.cancel_scope.cancel()
    finally:
        os.close(read_end)
