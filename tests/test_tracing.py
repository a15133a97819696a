"""OpenTelemetry traces of a real `toolscout serve --transport http` child, sent over OTLP/HTTP to a
receiver in the test (a real HTTP server taking `POST /v1/traces`, decoded with the OTLP protobuf
messages): one span per MCP request with the conventions' attributes, a child span per upstream call,
and the `traceparent` the client sent in `params._meta` kept, and carried on in the `_meta` of the
request a real upstream (tests/servers/trace_meta.py, over stdio) receives. Also the JSON log lines
of `--log-format json`, and `toolscout[otel]` asked for by the config but not needed for anything else."""

from __future__ import annotations

import gzip
import json
import logging
import secrets
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from benchmarks.processes import SERVE_READY, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.helpers.paths import PYTHON, ROOT
from toolscout.config.telemetry import TracesConfig
from toolscout.masking import install_log_masking, remember_secrets
from toolscout.serve.http import bind
from toolscout.telemetry.logs import JsonFormatter
from toolscout.telemetry.tracing import traces_wanted

pytestmark = pytest.mark.anyio

SERVICE = "toolscout-under-test"


@dataclass
class Received:
    """Spans a receiver was sent, with the resource attributes of each."""

    spans: list[tuple[dict[str, Any], Span]] = field(default_factory=list[tuple[dict[str, Any], Span]])
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def until(self, found: Callable[[list[Span]], bool]) -> list[Span]:
        """Every span so far, once `found` says yes of them (bounded)."""
        with anyio.fail_after(30):
            while not found([span for _, span in self.spans]):
                await self.arrived.wait()
                self.arrived = anyio.Event()
        return [span for _, span in self.spans]


def plain(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


def attributes(span: Span) -> dict[str, Any]:
    return {attribute.key: plain(attribute.value) for attribute in span.attributes}


@asynccontextmanager
async def otlp_receiver() -> AsyncGenerator[tuple[str, Received]]:
    """A collector standing in for a real one: `POST /v1/traces` on a free port, its spans kept."""
    received = Received()

    async def traces(request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            resource = {a.key: plain(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                received.spans.extend((resource, span) for span in scope_spans.spans)
        received.arrived.set()
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")

    sock = bind("127.0.0.1", 0)
    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}", received
        finally:
            web.should_exit = True


def write_config(directory: Path, endpoint: str) -> Path:
    config = {
        "mcpServers": {"meta": {"command": PYTHON, "args": ["-m", "tests.servers.trace_meta"], "cwd": str(ROOT)}},
        "registry": {"path": str(directory / "registry.sqlite3")},
        "audit": {"path": str(directory / "audit.jsonl")},
        "telemetry": {"traces": {"enabled": True, "endpoint": endpoint, "serviceName": SERVICE}},
    }
    path = directory / "toolscout.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def server_span_of(spans: list[Span], trace_id: bytes) -> Span | None:
    return next(
        (
            s
            for s in spans
            if s.kind == Span.SPAN_KIND_SERVER
            and s.trace_id == trace_id
            and attributes(s).get("gen_ai.tool.name") == "execute_tool"
        ),
        None,
    )


async def test_a_call_is_traced_from_the_client_through_the_gateway_to_the_upstream(tmp_path: Path) -> None:
    trace_id, parent_id = secrets.token_bytes(16), secrets.token_bytes(8)
    traceparent = f"00-{trace_id.hex()}-{parent_id.hex()}-01"
    async with otlp_receiver() as (endpoint, received):
        config = write_config(tmp_path, endpoint)
        command = [PYTHON, "-m", "toolscout", "serve", "-c", str(config), "--transport", "http", "--port", "0"]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OTEL_BSP_SCHEDULE_DELAY": "50"}
        async with running([*command, "--log-format", "json"], ready=SERVE_READY, env=env) as gateway:
            url = gateway.match.group(1)
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                call: dict[str, Any] = {"server": "meta", "tool": "show_meta", "arguments": {}}
                meta = types.RequestParamsMeta(traceparent=traceparent, tracestate="vendor=abc")
                result = await client.call_tool("execute_tool", call, meta=meta)
                assert not result.is_error, result.content
            [text] = result.content
            assert isinstance(text, types.TextContent)
            upstream_meta = json.loads(text.text)
            spans = await received.until(
                lambda spans: (
                    (server := server_span_of(spans, trace_id)) is not None
                    and any(s.parent_span_id == server.span_id for s in spans)
                )
            )
        log_lines = list(gateway.stderr)

    server = server_span_of(spans, trace_id)
    assert server is not None
    # The client's trace goes on: same trace id, the client's span as the parent, its tracestate kept.
    assert server.parent_span_id == parent_id
    assert server.trace_state == "vendor=abc"
    attrs = attributes(server)
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["network.transport"] == "tcp"
    assert isinstance(attrs["mcp.session.id"], str) and attrs["mcp.session.id"]
    assert "error.type" not in attrs

    [upstream] = [s for s in spans if s.parent_span_id == server.span_id]
    assert upstream.kind == Span.SPAN_KIND_CLIENT
    assert upstream.trace_id == trace_id
    assert attributes(upstream)["mcp.method.name"] == "tools/call"
    assert attributes(upstream)["toolscout.server.name"] == "meta"  # which configured upstream it went to
    assert "toolscout.server.name" not in attrs  # the gateway's own span serves a client: no upstream named
    resources = {resource.get("service.name") for resource, span in received.spans if span.trace_id == trace_id}
    assert resources == {SERVICE}

    # The real upstream received the trace in its request's _meta, its parent the gateway's upstream span.
    assert upstream_meta["traceparent"] == f"00-{trace_id.hex()}-{upstream.span_id.hex()}-01"
    assert upstream_meta["tracestate"] == "vendor=abc"

    # The log is JSON lines with the conventions' names; the trace is named in those written within it.
    records = [json.loads(line) for line in log_lines if line.startswith("{")]
    assert records, log_lines
    assert all({"timestamp", "level", "logger", "message"} <= set(record) for record in records)
    executed = [r for r in records if r["message"].startswith("execute meta.show_meta")]
    assert [r["gen_ai.tool.name"] for r in executed] == ["show_meta"]
    assert executed[0]["trace_id"] == trace_id.hex()


def test_traces_follow_the_config_then_the_standard_variables() -> None:
    assert not traces_wanted(TracesConfig(), {})
    assert traces_wanted(TracesConfig(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not traces_wanted(TracesConfig(enabled=False), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert traces_wanted(TracesConfig(enabled=True), {})
    assert not traces_wanted(TracesConfig(enabled=True), {"OTEL_SDK_DISABLED": "true"})


def test_json_log_lines_mask_secrets_in_the_message_and_the_attributes() -> None:
    secret = "sk-live-0123456789abcdefSECRET"
    remember_secrets([secret])
    install_log_masking()
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("toolscout.test.json")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("upstream said %s", secret, extra={"error.type": f"bad key {secret}", "plain": secret})
    finally:
        log.removeHandler(handler)
    [line] = lines
    record = json.loads(line)
    assert secret not in line
    assert record["level"] == "warning" and record["logger"] == "toolscout.test.json"
    assert record["message"].startswith("upstream said ")
    assert record["error.type"].startswith("bad key ")
    assert "plain" not in record  # only attributes under the conventions' dotted names are written
    assert "trace_id" not in record  # no span is current
