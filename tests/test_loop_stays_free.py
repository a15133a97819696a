"""One large request must not stall everyone.

A search query is capped (`search.maxQueryChars`, `search.maxQuerySteps`) on every path that searches,
with an error that says the limit and what to do; and a search's scoring runs in a worker thread,
so other clients are answered while it runs. Real parts: the demo `units` server over stdio
behind the gateway, the shipped search backend, SDK clients, `toolscout` as a child process.
Other work found taking long on the event loop is checked here too: argument validation against
a schema `pattern` that backtracks, the digest of a long tool list, redacting large arguments.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import SERVE_READY, running
from mcp import Client
from mcp.server import Server

from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.catalog import CatalogTool
from toolscout.config import GatewayConfig
from toolscout.config.models import DEFAULT_MAX_QUERY_CHARS, DEFAULT_MAX_QUERY_STEPS
from toolscout.gateway.audit import REDACT_INLINE_CHARS, REDACTED, AuditLog, Redactor
from toolscout.gateway.core import Gateway
from toolscout.gateway.validation import PATTERN_SECONDS
from toolscout.modes.client import DIGEST_INLINE_ITEMS, digest, digest_off_loop
from toolscout.search import SearchBackend, SearchHit, make_backend
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

UNITS = {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
GATE_BOUND = 30.0
"""How long the held search waits to be let go before it goes on by itself: never reached when the
event loop stays free (the test lets it go); on a loop that the search blocks, the test fails then."""


def at_cap(chars: int = DEFAULT_MAX_QUERY_CHARS) -> str:
    """A query of exactly `chars` characters that still reads as a task."""
    return ("convert kilometres to miles " * (chars // 28 + 1))[:chars]


class HeldSearch:
    """The shipped backend, whose searches for a marked query wait (in whatever thread runs them)
    until the test lets them go: a search made slow by state, not by the machine's speed."""

    def __init__(self, marker: str) -> None:
        self.inner: SearchBackend = make_backend("hybrid", use_cache=False)
        self.marker = marker
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def rebuild(self, tools: Sequence[CatalogTool], servers: Mapping[str, str] | None = None) -> None:
        self.inner.rebuild(tools, servers)

    def search(self, query: str, *, server: str | None = None, limit: int = 10) -> list[SearchHit]:
        if self.marker not in query:
            return self.inner.search(query, server=server, limit=limit)
        self.entered.set()
        self.release.wait(GATE_BOUND)
        try:
            return self.inner.search(query, server=server, limit=limit)
        finally:
            self.finished.set()


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["discovery", "dynamic"])
async def test_other_clients_are_answered_while_a_search_at_the_cap_runs(mode: Any) -> None:
    held = HeldSearch(marker="kilometres")
    config = GatewayConfig.model_validate({"mcpServers": {"units": UNITS}, "catalogCache": False})
    async with Gateway.from_config(config, search=held) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        server = build_server(gateway, mode)
        async with Client(server) as big, Client(server) as huge, Client(server) as other:
            answers: dict[str, types.CallToolResult] = {}

            async def search_at_cap() -> None:
                answers["big"] = await big.call_tool("search_tools", {"query": at_cap()})

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(search_at_cap)
                    # The search is under way, held in the backend: the other clients ask now.
                    await anyio.to_thread.run_sync(held.entered.wait, GATE_BOUND)
                    assert held.entered.is_set()
                    answers["servers"] = await other.call_tool("list_mcp_servers", {})
                    answers["refused"] = await huge.call_tool("search_tools", {"query": "x" * 4_000_000})
                    answers["steps"] = await huge.call_tool("search_tools", {"query": ["convert units"] * 40})
                    # All answered while the big search still waited in its worker thread.
                    assert not held.finished.is_set()
                    held.release.set()
            servers, refused, steps = answers["servers"], answers["refused"], answers["steps"]
            assert not servers.is_error and "units" in text(servers)
            assert refused.is_error and "4,000,000 characters" in text(refused)
            assert f"at most {DEFAULT_MAX_QUERY_CHARS:,} (search.maxQueryChars)" in text(refused)
            assert steps.is_error and f"at most {DEFAULT_MAX_QUERY_STEPS:,} (search.maxQuerySteps)" in text(steps)
            assert not answers["big"].is_error
            assert held.finished.is_set()


async def test_the_cap_and_its_message_on_every_search_of_a_running_serve(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    config = {"mcpServers": {"units": UNITS}, "catalogCache": False, "search": {"maxQueryChars": 300}}
    path = sandbox.write("work/toolscout.json", json.dumps(config))
    path.chmod(0o600)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return sandbox.run("search", *args, "--config", str(path))

    # Without a serve: the command line searches the catalog itself, under the same cap.
    done = await anyio.to_thread.run_sync(cli, at_cap(301))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "301 characters; a search takes at most 300 (search.maxQueryChars)" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    ok = await anyio.to_thread.run_sync(cli, at_cap(300))
    assert ok.returncode == 0 and "convert_units" in ok.stdout, ok.stdout + ok.stderr

    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--transport", "http", "--port", "0"]
    async with running(command, ready=SERVE_READY, env=sandbox.env()) as serve:
        # Through the serve's local socket (the command line asks the running serve).
        over_socket = await anyio.to_thread.run_sync(cli, at_cap(301))
        assert over_socket.returncode == 1, over_socket.stdout + over_socket.stderr
        assert "at most 300 (search.maxQueryChars)" in over_socket.stdout + over_socket.stderr
        # Over HTTP, as an agent asks.
        async with Client(serve.match.group(1)) as client:
            refused = await client.call_tool("search_tools", {"query": at_cap(301)})
            assert refused.is_error and "at most 300 (search.maxQueryChars)" in text(refused)
            steps = await client.call_tool("search_tools", {"query": [at_cap(100)] * 4})
            assert steps.is_error and "The task's steps have 400 characters" in text(steps)
            assert "a few steps at a time" in text(steps)
            found = await client.call_tool("search_tools", {"query": at_cap(300)})
            assert not found.is_error and "convert_units" in text(found)


def patterned_server() -> Server[Any]:
    """An upstream whose tool's input schema has a pattern that backtracks on a long run of "a"s."""
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^(a+)+$"},
            "tag": {"type": "string", "pattern": "^(a|a)+$"},
        },
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="check", description="Check a code.", input_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="checked")])

    return Server("patterned", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_a_schema_pattern_that_backtracks_is_stopped_with_a_clear_violation() -> None:
    # `re` took 16 s on 26 "a"s and a "!" against ^(a+)+$, holding the event loop (and the GIL); the
    # regex module answers that one at once, and stops ^(a|a)+$ (which defeats its guards) at the bound.
    specs = [UpstreamSpec("patterned", InProcessUpstream(patterned_server()))]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(60):
            await gateway.settle()
        async with Client(build_server(gateway)) as client:
            with anyio.fail_after(60):
                issue = await client.call_tool(
                    "execute_tool", {"server": "patterned", "tool": "check", "arguments": {"code": "a" * 26 + "!"}}
                )
                slow = await client.call_tool(
                    "execute_tool", {"server": "patterned", "tool": "check", "arguments": {"tag": "a" * 40 + "!"}}
                )
                fine = await client.call_tool(
                    "execute_tool", {"server": "patterned", "tool": "check", "arguments": {"code": "aaaa"}}
                )
                wrong = await client.call_tool(
                    "execute_tool", {"server": "patterned", "tool": "check", "arguments": {"code": "b"}}
                )
    assert slow.is_error and "VALIDATION_ERROR" in text(slow), text(slow)
    assert f"takes more than {PATTERN_SECONDS:g} s to match '^(a|a)+$'" in text(slow)
    assert issue.is_error and "does not match '^(a+)+$'" in text(issue), text(issue)
    assert not fine.is_error and text(fine) == "checked"
    assert wrong.is_error and "'b' does not match '^(a+)+$'" in text(wrong)


class ThreadNotingTool(types.Tool):
    """A tool that notes which thread serialises it (what a digest does with every tool)."""

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        SERIALISED_IN.add(threading.get_ident())
        return super().model_dump(*args, **kwargs)


SERIALISED_IN: set[int] = set()


async def test_a_long_list_is_digested_off_the_event_loop() -> None:
    # The digest that tells whether a client's tool list changed took 1.25 s for 10,000 tools, on the
    # event loop, on every tools/list in passthrough, compact and dynamic modes.
    SERIALISED_IN.clear()
    tools = [ThreadNotingTool(name=f"t{i}", input_schema={"type": "object"}) for i in range(DIGEST_INLINE_ITEMS + 1)]
    long = await digest_off_loop(tools)
    assert SERIALISED_IN and threading.get_ident() not in SERIALISED_IN
    SERIALISED_IN.clear()
    assert await digest_off_loop(tools[:2]) == digest(tools[:2])
    assert {threading.get_ident()} == SERIALISED_IN  # a short one is not worth a thread
    assert long == digest(tools) != digest([*tools[:-1], ThreadNotingTool(name="other", input_schema={})])


class ThreadNotingRedactor(Redactor):
    """The shipped redactor, noting which thread it runs in."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if depth == 0:  # (it calls itself for what is nested)
            self.threads.append(threading.get_ident())
        return super().__call__(value, depth)


async def test_large_arguments_are_redacted_for_the_audit_log_off_the_event_loop(tmp_path: Path) -> None:
    # Redacting a 4 MB argument took 1.2 s, on the event loop, after every such call.
    redactor = ThreadNotingRedactor()
    log = AuditLog(tmp_path / "audit.jsonl", redactor=redactor)
    log.open()
    try:
        small = {"note": "hello", "api_key": "sk-small"}
        large = {"note": "hello " * (REDACT_INLINE_CHARS // 6 + 1), "api_key": "sk-large"}
        await log.record(server="s", tool="t", arguments=small, duration_ms=1.0, outcome="ok")
        await log.record(server="s", tool="t", arguments=large, duration_ms=1.0, outcome="ok")
    finally:
        log.close()
    loop_thread = threading.get_ident()
    assert redactor.threads[0] == loop_thread  # small: not worth a thread
    assert redactor.threads[1] != loop_thread
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["arguments"]["api_key"] for r in records] == [REDACTED, REDACTED]
    assert records[1]["arguments"]["note"].startswith("hello hello")
