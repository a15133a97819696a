"""`/metrics` on the HTTP face: a gateway in front of the units and notes demo servers (in process),
served over streamable HTTP on a real socket with keys configured, driven by the SDK's client; the
scrape parsed with `prometheus_client`'s own parser and every count checked exactly. Also: who may
read it, that its labels stay bounded under made-up tool names, and that no query, argument or
credential reaches it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from toolscout.config import StdioServerConfig
from toolscout.config.http import AuthConfig, ClientKey
from toolscout.demo import notes, units
from toolscout.gateway.core import Gateway
from toolscout.serve.auth import BearerPrincipals
from toolscout.serve.http import bind, serve_http
from toolscout.serve.server import build_server
from toolscout.serve.telemetry import MetricsAccess
from toolscout.telemetry.metrics import MAX_TOOL_LABELS, OTHER, Metrics
from toolscout.upstream import InProcessUpstream, StdioUpstream, UpstreamSpec

pytestmark = pytest.mark.anyio

ADMIN = "admin-0123456789abcdef-ADMIN"
CLIENT = "client-0123456789abcdef-CLIENT"
LIMITED = "limited-0123456789abcdef-LIMITED"
QUERY = "convert miles to kilometres"
SECRET_ARGUMENT = "a-very-private-note-title"
CONVERT = {"server": "units", "tool": "convert_units", "arguments": {"value": 5, "from_unit": "mi", "to_unit": "km"}}
BAD_UNIT = {"server": "units", "tool": "convert_units", "arguments": {"value": 5, "from_unit": "mi", "to_unit": "zz"}}
SERVER_OPERATIONS = "mcp_server_operation_duration_seconds"
UPSTREAM_CALLS = "mcp_client_operation_duration_seconds"


@dataclass
class Served:
    gateway: Gateway
    base: str
    """`http://127.0.0.1:PORT`"""

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"


def auth() -> AuthConfig:
    return AuthConfig(
        admin_keys=[ADMIN],
        keys=[
            ClientKey(key=CLIENT, label="agent", namespace="default"),
            ClientKey(key=LIMITED, label="slow", namespace="default", requests_per_minute=1),
        ],
    )


@asynccontextmanager
async def served(*, public: bool = False, enabled: bool = True) -> AsyncGenerator[Served]:
    """The units and notes demo servers behind a gateway served over HTTP with keys, `/metrics` included."""
    specs = [
        UpstreamSpec("units", InProcessUpstream(units.build_server())),
        UpstreamSpec("notes", InProcessUpstream(notes.build_server())),
    ]
    async with Gateway(specs, metrics=Metrics(enabled=enabled)) as gateway:
        with anyio.fail_after(30):
            await gateway.settle()
        sock = bind("127.0.0.1", 0)
        stop = anyio.Event()
        access = MetricsAccess(gateway.metrics, public=public) if enabled else None
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: serve_http(
                    gateway,
                    sock,
                    host="127.0.0.1",
                    log_level=None,
                    stop=stop,
                    principals=BearerPrincipals(auth()),
                    metrics=access,
                )
            )
            try:
                yield Served(gateway, f"http://127.0.0.1:{sock.getsockname()[1]}")
            finally:
                stop.set()


@asynccontextmanager
async def client(url: str, credential: str = ADMIN) -> AsyncGenerator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as connected,
    ):
        yield connected


async def scrape(base: str, credential: str | None = ADMIN) -> str:
    headers = {"authorization": f"Bearer {credential}"} if credential else {}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(base + "/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return response.text


def samples(text: str) -> list[Sample]:
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def value(found: list[Sample], name: str, **labels: str) -> float:
    """The one sample called `name` whose labels include `labels` (0 when there is none)."""
    matching = [s for s in found if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matching) <= 1, matching
    return matching[0].value if matching else 0.0


def label_sets(found: list[Sample], name: str) -> set[tuple[tuple[str, str], ...]]:
    return {tuple(sorted(s.labels.items())) for s in found if s.name == name}


async def test_a_known_set_of_calls_is_counted_exactly() -> None:
    async with served() as gw:
        async with client(gw.mcp) as mcp:
            await mcp.list_tools()
            for _ in range(2):
                assert not (await mcp.call_tool("execute_tool", CONVERT)).is_error
            assert (await mcp.call_tool("execute_tool", BAD_UNIT)).is_error  # the upstream's isError
            missing: dict[str, object] = {"server": "units", "tool": "no_such_tool", "arguments": {}}
            assert (await mcp.call_tool("execute_tool", missing)).is_error  # refused by the gateway
            assert not (await mcp.call_tool("search_tools", {"query": QUERY})).is_error
            note = {"server": "notes", "tool": "create_note", "arguments": {"title": SECRET_ARGUMENT, "body": "x"}}
            assert not (await mcp.call_tool("execute_tool", note)).is_error
            with pytest.raises(MCPError) as unknown:
                await mcp.call_tool("made_up_tool", {})
            assert unknown.value.error.code == -32602
        async with httpx2.AsyncClient(timeout=30) as http:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            wrong = await http.post(gw.mcp, json=initialize, headers={"authorization": "Bearer not-a-key-at-all"})
            assert wrong.status_code == 401
            bare = await http.post(gw.mcp, json=initialize)
            assert bare.status_code == 401
            limited = {"authorization": f"Bearer {LIMITED}"}
            assert (await http.post(gw.mcp, json=initialize, headers=limited)).status_code != 429
            assert (await http.post(gw.mcp, json=initialize, headers=limited)).status_code == 429
        text = await scrape(gw.base)

    found = samples(text)
    count = SERVER_OPERATIONS + "_count"
    assert value(found, count, mcp_method_name="tools/list", gen_ai_tool_name="", error_type="") == 1
    assert value(found, count, mcp_method_name="tools/call", gen_ai_tool_name="execute_tool", error_type="") == 3
    assert (
        value(found, count, mcp_method_name="tools/call", gen_ai_tool_name="execute_tool", error_type="tool_error") == 2
    )
    assert value(found, count, mcp_method_name="tools/call", gen_ai_tool_name="search_tools", error_type="") == 1
    assert value(found, count, mcp_method_name="tools/call", gen_ai_tool_name=OTHER, error_type="invalid_params") == 1
    assert label_sets(found, count) == {
        (("error_type", ""), ("gen_ai_tool_name", ""), ("mcp_method_name", "tools/list")),
        (("error_type", ""), ("gen_ai_tool_name", "execute_tool"), ("mcp_method_name", "tools/call")),
        (("error_type", "tool_error"), ("gen_ai_tool_name", "execute_tool"), ("mcp_method_name", "tools/call")),
        (("error_type", ""), ("gen_ai_tool_name", "search_tools"), ("mcp_method_name", "tools/call")),
        (("error_type", "invalid_params"), ("gen_ai_tool_name", OTHER), ("mcp_method_name", "tools/call")),
    }
    # Each series is a whole histogram: its +Inf bucket holds every observation.
    inf = value(found, SERVER_OPERATIONS + "_bucket", gen_ai_tool_name="execute_tool", error_type="", le="+Inf")
    assert inf == 3

    calls = UPSTREAM_CALLS + "_count"
    assert value(found, calls, server="units", mcp_method_name="tools/call", error_type="") == 2
    assert value(found, calls, server="units", mcp_method_name="tools/call", error_type="tool_error") == 1
    assert value(found, calls, server="notes", mcp_method_name="tools/call", error_type="") == 1

    assert value(found, "toolscout_search_duration_seconds_count", kind="search", error_type="") == 1
    assert value(found, "toolscout_http_auth_failures_total", reason="invalid") == 1
    assert value(found, "toolscout_http_auth_failures_total", reason="missing") == 1
    assert value(found, "toolscout_http_rate_limited_total") == 1

    assert value(found, "toolscout_upstream_status", server="units", status="connected") == 1
    assert value(found, "toolscout_upstream_status", server="units", status="error") == 0
    assert value(found, "toolscout_upstream_reconnects_total", server="notes") == 0
    assert value(found, "toolscout_catalog_tools", server="units") == 3
    assert value(found, "toolscout_catalog_enabled_tools", server="units") == 3
    assert value(found, "toolscout_quarantined_tools", server="units") == 0
    hits = value(found, "toolscout_cache_requests_total", cache="embeddings", result="hit")
    misses = value(found, "toolscout_cache_requests_total", cache="embeddings", result="miss")
    assert hits + misses > 0  # the search index was built, from the cache or by embedding

    # Nothing a client sent reaches a label: no query, no argument, no credential.
    for secret in (QUERY, SECRET_ARGUMENT, ADMIN, LIMITED, "not-a-key-at-all", "made_up_tool"):
        assert secret not in text


async def test_made_up_tool_names_share_one_series() -> None:
    async with served() as gw:
        async with client(gw.mcp) as mcp:
            for n in range(40):
                with pytest.raises(MCPError):
                    await mcp.call_tool(f"hostile_{n}_{'x' * n}", {})
        found = samples(await scrape(gw.base))
    calls = [s for s in found if s.name == SERVER_OPERATIONS + "_count" and s.labels["mcp_method_name"] == "tools/call"]
    assert [(s.labels["gen_ai_tool_name"], s.labels["error_type"], s.value) for s in calls] == [
        (OTHER, "invalid_params", 40)
    ]


def test_tool_labels_stop_growing_at_their_bound() -> None:
    metrics = Metrics()
    names = [f"tool_{n}" for n in range(MAX_TOOL_LABELS + 50)]
    labels = [metrics.tool_label(name) for name in names]
    assert labels[:MAX_TOOL_LABELS] == names[:MAX_TOOL_LABELS]
    assert set(labels[MAX_TOOL_LABELS:]) == {OTHER}
    assert metrics.tool_label("tool_0") == "tool_0"  # one already a label stays one


async def test_metrics_need_an_admin_key_unless_public() -> None:
    async with served() as gw, httpx2.AsyncClient(timeout=30) as http:
        assert (await http.get(gw.base + "/metrics")).status_code == 401
        as_client = await http.get(gw.base + "/metrics", headers={"authorization": f"Bearer {CLIENT}"})
        assert as_client.status_code == 403
        assert "telemetry.metrics.public" in as_client.json()["error"]["message"]
    async with served(public=True) as gw, httpx2.AsyncClient(timeout=30) as http:
        assert "mcp_server_operation_duration_seconds" in await scrape(gw.base, credential=None)
        # Public metrics open nothing else: /mcp still needs a credential.
        assert (await http.post(gw.mcp, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code == 401


async def test_metrics_turned_off_record_and_serve_nothing() -> None:
    async with served(enabled=False) as gw:
        async with client(gw.mcp) as mcp:
            assert not (await mcp.call_tool("execute_tool", CONVERT)).is_error
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.get(gw.base + "/metrics", headers={"authorization": f"Bearer {ADMIN}"})
        assert response.status_code == 404
        assert gw.gateway.metrics.operations.series == {}
        assert gw.gateway.metrics.upstream_calls.series == {}


async def test_per_tool_figures_for_pages() -> None:
    async with served() as gw:
        async with client(gw.mcp) as mcp:
            for arguments in (CONVERT, CONVERT, BAD_UNIT):
                await mcp.call_tool("execute_tool", arguments)
        [execute] = gw.gateway.metrics.tool_calls()
    assert (execute.tool, execute.calls, execute.errors) == ("execute_tool", 3, 1)
    assert execute.error_rate == pytest.approx(1 / 3)
    assert execute.seconds > 0


def family_values(metrics: Metrics) -> list[Sample]:
    return samples(metrics.exposition().decode())


@pytest.mark.processes  # tries to start a program that does not exist
async def test_a_failing_upstream_shows_its_status_and_reconnects() -> None:
    broken = UpstreamSpec("broken", StdioUpstream("broken", StdioServerConfig(command="/nonexistent/mcp-server")))
    async with Gateway([broken]) as gateway:
        [upstream] = gateway.upstreams
        with anyio.fail_after(30):
            while upstream.reconnects < 1:  # the first retry comes after a backoff of about a second
                await upstream.wait_changed()
        found = family_values(gateway.metrics)
        reconnects = upstream.reconnects
    assert value(found, "toolscout_upstream_reconnects_total", server="broken") == reconnects >= 1
    assert value(found, "toolscout_upstream_status", server="broken", status="connected") == 0
    statuses = [s.labels["status"] for s in found if s.name == "toolscout_upstream_status" and s.value == 1]
    assert statuses in (["connecting"], ["error"])
    assert value(found, "toolscout_catalog_tools", server="broken") == 0


async def test_smart_mode_cache_hits_are_counted() -> None:
    specs = [UpstreamSpec("units", InProcessUpstream(units.build_server()))]
    async with Gateway(specs) as gateway:
        with anyio.fail_after(30):
            await gateway.settle()
        async with Client(build_server(gateway, "smart")) as mcp:
            for _ in range(2):
                await mcp.call_tool("smart_tool_discovery", {"request": "convert 5 miles to kilometres"})
        found = family_values(gateway.metrics)
    assert value(found, "toolscout_cache_requests_total", cache="smart_tool_matches", result="miss") == 1
    assert value(found, "toolscout_cache_requests_total", cache="smart_tool_matches", result="hit") == 1
    assert value(found, "toolscout_search_duration_seconds_count", kind="smart", error_type="") == 1
    count = SERVER_OPERATIONS + "_count"
    assert value(found, count, mcp_method_name="tools/call", gen_ai_tool_name="smart_tool_discovery") == 2
