"""Callback tools (tools registered by URL rather than by MCP server): a registered tool's calls are POSTed to its URL,
served here by a small real HTTP server; the gateway runs its one-tool MCP server in-process.

The tool goes through the gateway's one path: searchable, its arguments validated before anything is
POSTed, its result returned as the callback gave it, every call audited; whatever the callback does
wrong is an isError result that says what happened.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import free_port

from tests.helpers.callback_site import callback_site, text_result
from toolscout.errors import ToolscoutError
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.core import Gateway
from toolscout.gateway.registrations import registered_spec
from toolscout.registry.base import ToolRegistration
from toolscout.upstream.transport import post_arguments, tool_result

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ip": {"type": "string", "description": "An IPv4 address."}, "days": {"type": "integer"}},
    "required": ["ip"],
}
SHOWN = "run-1.abuseipdb"


def lookup(body: Any) -> tuple[int, bytes]:
    return text_result(f"{body['ip']} is clean", structuredContent={"ip": body["ip"], "score": 0})


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@asynccontextmanager
async def gateway_with_tool(site_url: str, audit: AuditLog | None = None) -> AsyncGenerator[Gateway]:
    registration = ToolRegistration(
        namespace="run-1",
        name="abuseipdb",
        description="Check an IP address's abuse reports on AbuseIPDB.",
        input_schema=SCHEMA,
        callback_url=site_url,
    )
    async with Gateway([registered_spec(registration)], audit=audit) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


async def test_a_call_posts_its_arguments_and_returns_the_callbacks_result(tmp_path: Path) -> None:
    audit_path = tmp_path / "audit.jsonl"
    async with callback_site(lookup) as site, gateway_with_tool(site.url(), AuditLog(audit_path)) as gateway:
        status = gateway.server_status(gateway.upstream(SHOWN))
        assert (status["status"], status["toolCount"]) == ("connected", 1)
        hits = await gateway.search("abuse reports for an IP address")
        assert [(h.tool.server, h.tool.name) for h in hits][:1] == [(SHOWN, "abuseipdb")]

        result = await gateway.execute(SHOWN, "abuseipdb", {"ip": "192.0.2.7", "days": 30}, client="agent-1")

    assert not result.is_error
    assert text_of(result) == "192.0.2.7 is clean"
    assert result.structured_content == {"ip": "192.0.2.7", "score": 0}
    [(path, body, headers)] = site.received
    assert (path, body) == ("/tool", {"ip": "192.0.2.7", "days": 30})
    assert headers["content-type"] == "application/json"
    assert headers["x-toolscout-tool"] == "abuseipdb"
    [record] = [json.loads(line) for line in audit_path.read_text().splitlines()]
    assert (record["server"], record["tool"], record["outcome"], record["client"]) == (
        SHOWN,
        "abuseipdb",
        "ok",
        "agent-1",
    )
    assert record["arguments"] == {"ip": "192.0.2.7", "days": 30}


async def test_bad_arguments_are_refused_before_anything_is_posted(tmp_path: Path) -> None:
    audit_path = tmp_path / "audit.jsonl"
    async with callback_site(lookup) as site, gateway_with_tool(site.url(), AuditLog(audit_path)) as gateway:
        for arguments in ({}, {"ip": 7}, {"ip": "192.0.2.7", "days": "thirty"}):
            with pytest.raises(ToolscoutError) as refused:
                await gateway.execute(SHOWN, "abuseipdb", arguments)
            assert refused.value.code == "VALIDATION_ERROR"
    assert site.received == []
    outcomes = [json.loads(line)["code"] for line in audit_path.read_text().splitlines()]
    assert outcomes == ["VALIDATION_ERROR"] * 3


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ((500, b'{"error": "database down"}'), 'The tool\'s callback answered HTTP 500: {"error": "database down"}'),
        ((404, b""), "The tool's callback answered HTTP 404"),
        ((200, b"<html>ok</html>"), "answered with a body that is not JSON"),
        ((200, b'{"score": 3}'), "is not an MCP tool result"),
        ((200, b'{"content": "just text"}'), "is not an MCP tool result"),
    ],
)
async def test_a_bad_answer_is_an_error_result_saying_what_came(answer: tuple[int, bytes], said: str) -> None:
    async with callback_site(lambda _: answer) as site, gateway_with_tool(site.url()) as gateway:
        result = await gateway.execute(SHOWN, "abuseipdb", {"ip": "192.0.2.7"})
    assert result.is_error
    assert said in text_of(result)


async def test_an_error_result_from_the_callback_comes_back_as_it_came() -> None:
    answer = text_result("no such IP", isError=True)
    async with callback_site(lambda _: answer) as site, gateway_with_tool(site.url()) as gateway:
        result = await gateway.execute(SHOWN, "abuseipdb", {"ip": "192.0.2.7"})
    assert result.is_error
    assert text_of(result) == "no such IP"


async def test_an_unreachable_callback_is_an_error_result() -> None:
    url = f"http://127.0.0.1:{free_port()}/tool"  # nothing listens there
    async with gateway_with_tool(url) as gateway:
        result = await gateway.execute(SHOWN, "abuseipdb", {"ip": "192.0.2.7"})
    assert result.is_error
    assert f"The tool's callback at {url} could not be reached" in text_of(result)


async def test_a_callback_that_does_not_answer_in_time_is_an_error_result() -> None:
    async with callback_site(lookup) as site:
        with anyio.fail_after(10):
            result = await post_arguments(site.url("/slow"), {"ip": "192.0.2.7"}, within=0.2, tool="abuseipdb")
    assert result.is_error
    assert text_of(result) == f"The tool's callback at {site.url('/slow')} did not answer within 0.2s."


def test_an_answer_is_read_as_a_tool_result_with_every_field() -> None:
    body = {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"a": 1}, "isError": False}
    result = tool_result(200, json.dumps(body).encode())
    assert (text_of(result), result.structured_content, result.is_error) == ("hi", {"a": 1}, False)
    long = tool_result(502, b"x" * 1000)
    assert long.is_error
    assert text_of(long).endswith("x…")
    assert len(text_of(long)) < 400
