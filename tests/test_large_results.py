"""Large answers, on a real `toolscout serve --transport http` child.

A hostile callback site answering 20 MB is refused at its Content-Length, before its body is read,
and without one at the cap, while another client is answered; a tool result larger than what the
SDK's own client reads in one server-sent event (1 MiB) reaches that client cut to fit with a notice,
never as a transport failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import served_gateway, servers, until, write_config
from mcp import Client

from tests.helpers.callback_site import callback_site, text_result
from tests.helpers.paths import PYTHON, ROOT
from tests.servers.big_result import expected_text
from toolscout.config.models import DEFAULT_MAX_RESULT_BYTES
from toolscout.upstream.transport import MAX_ANSWER_BYTES

pytestmark = pytest.mark.anyio

HUGE = 20 * 1024 * 1024


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("path", ["/held-sized", "/held-chunked"])
async def test_a_20_mb_callback_answer_is_refused_with_a_clear_error_while_others_are_answered(
    tmp_path: Path, path: str
) -> None:
    huge = text_result("x" * HUGE)
    async with (
        callback_site(lambda body: huge) as site,
        served_gateway(write_config(tmp_path)) as gateway,
        Client(gateway.mcp_url) as caller,
        Client(gateway.mcp_url) as other,
    ):
        body: dict[str, Any] = {
            "namespace": "run-1",
            "name": "flood",
            "description": "Answers far too much.",
            "inputSchema": {"type": "object", "properties": {}},
            "callbackUrl": site.url(path),
        }
        assert (await gateway.api("POST", "/registry/tools", body)).status_code == 201
        await until(caller, lambda found: found.get("run-1.flood", {}).get("status") == "connected")
        answered: list[types.CallToolResult] = []
        refused = anyio.Event()

        async def call() -> None:
            arguments: dict[str, Any] = {"server": "run-1.flood", "tool": "flood", "arguments": {}}
            answered.append(await caller.call_tool("execute_tool", arguments))
            refused.set()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await site.body_started.wait()  # the site is in the middle of its answer
                assert "run-1.flood" in await servers(other)  # another client is answered meanwhile
                if path == "/held-sized":
                    await refused.wait()  # refused from its Content-Length: nothing more was read
                site.body_hold.set()
        [result] = answered
        assert result.is_error
        said = text_of(result)
        assert f"answered more than {MAX_ANSWER_BYTES} bytes, the most a callback may answer" in said
        assert "it must answer a smaller tool result" in said
        assert "run-1.flood" in await servers(other)  # and afterwards
    assert "Traceback" not in "\n".join(gateway.process.stderr)


async def test_a_result_over_what_a_client_reads_in_one_event_reaches_the_sdk_client_cut_to_fit(
    tmp_path: Path,
) -> None:
    big = {"command": PYTHON, "args": ["-m", "tests.servers.big_result"], "cwd": str(ROOT)}
    config = write_config(tmp_path)
    data = json.loads(config.read_text(encoding="utf-8"))
    data["mcpServers"]["big"] = big
    config.write_text(json.dumps(data), encoding="utf-8")
    size = 3 * 1024 * 1024
    async with served_gateway(config) as gateway, Client(gateway.mcp_url) as client:  # the SDK's limit: 1 MiB
        call: dict[str, Any] = {"server": "big", "tool": "blob", "arguments": {"size": size, "seed": "s"}}
        with anyio.fail_after(60):
            result = await client.call_tool("execute_tool", call)
        assert not result.is_error, text_of(result)[:500]
        head, notice = [block.text for block in result.content if isinstance(block, types.TextContent)]
        assert 0 < len(head) < DEFAULT_MAX_RESULT_BYTES
        assert head == expected_text(len(head), "s")
        assert notice.startswith(f"[toolscout: result cut to fit {DEFAULT_MAX_RESULT_BYTES} bytes")
        assert f"{len(head)} of {size} characters of text kept" in notice
        assert "(maxResultBytes)" in notice
        # The session goes on.
        small = await client.call_tool("execute_tool", {**call, "arguments": {"size": 10, "seed": "s"}})
        assert text_of(small) == expected_text(10, "s")
