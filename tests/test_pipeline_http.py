"""The multi-tenant pipeline end to end: `toolscout serve --transport http` as a child process, a run's
components and MCP endpoints registered through the pipeline's own routes with its own example bodies,
the agent's token from `generate-token`, and an SDK client at `/api/v1/mcp/gateway` holding that token,
which sees (and calls) its run's tools under the pipeline's names and nothing of another run's.

The endpoints are real: `tests/servers/late_tools.py` stands for the run's `aws-cloudtrail` container
(it lists no tools at first, as a container still starting does), the text demo for another run's
server, and a real HTTP site for the components' callbacks.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from benchmarks.processes import SERVE_READY, UVICORN_READY, free_port, redis_server, running, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers.callback_site import CallbackSite, callback_site, text_result
from tests.helpers.paths import PYTHON, ROOT

pytestmark = pytest.mark.anyio

ADMIN = "admin-pipeline-0123456789abcdef"
RUN_A = "shipsec-run-a"
RUN_B = "shipsec-run-b"
IP_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ip": {"type": "string"}}, "required": ["ip"]}


def bearer(credential: str) -> dict[str, str]:
    return {"authorization": f"Bearer {credential}"}


@dataclass
class Pipeline:
    """A served gateway and the pipeline's side of it: its internal routes and its MCP endpoint."""

    base: str

    async def post(self, path: str, body: Any, credential: str = ADMIN) -> httpx2.Response:
        async with httpx2.AsyncClient(timeout=30) as http:
            return await http.post(f"{self.base}/api/v1{path}", json=body, headers=bearer(credential))

    async def get(self, path: str, credential: str | None = ADMIN) -> httpx2.Response:
        headers = bearer(credential) if credential is not None else {}
        async with httpx2.AsyncClient(timeout=30) as http:
            return await http.get(f"{self.base}/api/v1{path}", headers=headers)

    async def internal(self, route: str, body: Any, credential: str = ADMIN) -> httpx2.Response:
        return await self.post(f"/internal/mcp/{route}", body, credential)

    @asynccontextmanager
    async def agent(self, token: str) -> AsyncGenerator[Client]:
        """An SDK client of the pipeline's MCP endpoint, holding `token`."""
        async with (
            httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
            Client(streamable_http_client(f"{self.base}/api/v1/mcp/gateway", http_client=http)) as client,
        ):
            yield client


ENV = {**os.environ, "PIPELINE_ADMIN": ADMIN, "TOOLSCOUT_ADMIN_KEY": ADMIN}
LISTING = [PYTHON, "-m", "toolscout", "registry", "run", RUN_A]


def pipeline_config(directory: Path, **config: Any) -> Path:
    """Passthrough mode with the pipeline's names, an admin key, and no configured server the runs' tokens allow."""
    settings = {"mode": "passthrough", "toolNames": "registered", "auth": {"adminKeys": ["${PIPELINE_ADMIN}"]}}
    return write_config(directory, **{**settings, **config})


@asynccontextmanager
async def pipeline(directory: Path, **config: Any) -> AsyncGenerator[Pipeline]:
    """`serve --transport http` of `pipeline_config`."""
    path = pipeline_config(directory, **config)
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(path), "--transport", "http", "--port", "0"]
    async with running(command, ready=SERVE_READY, env=ENV) as process:
        yield Pipeline(process.match.group(1).removesuffix("/mcp"))


def component(run_id: str, node_id: str, site: CallbackSite, *, tool_name: str | None = None) -> dict[str, Any]:
    """A `register-component` body, as the pipeline's worker sends it for a component node."""
    return {
        "runId": run_id,
        "nodeId": node_id,
        "toolName": tool_name or node_id,
        "description": f"Look an IP address up on {node_id}.",
        "inputSchema": IP_SCHEMA,
        "callbackUrl": site.url(f"/{node_id}"),
    }


def local(run_id: str, node_id: str, tool_name: str, port: int) -> dict[str, Any]:
    """A `register-local` body, the pipeline's own example's shape."""
    return {
        "runId": run_id,
        "nodeId": node_id,
        "toolName": tool_name,
        "endpoint": f"http://127.0.0.1:{port}/mcp",
        "serverId": tool_name,
        "description": f"MCP tools from {tool_name}",
    }


async def tool_names(client: Client, wanted: set[str], *, seconds: float = 60) -> set[str]:
    """The names `tools/list` shows, once they include `wanted` (asked again every 0.2 s, at most `seconds`)."""
    names: set[str] = set()
    with anyio.move_on_after(seconds):
        while True:
            names = {tool.name for tool in (await client.list_tools()).tools}
            if wanted <= names:
                return names
            await anyio.sleep(0.2)
    raise AssertionError(f"tools/list still shows {sorted(names)} after {seconds} s, not {sorted(wanted)}")


def cloudtrail(port: int) -> list[str]:
    return [PYTHON, str(ROOT / "tests" / "servers" / "late_tools.py"), "--port", str(port), "--empty", "2"]


def text_demo(port: int) -> list[str]:
    return [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", str(port)]


async def test_a_runs_agent_sees_its_tools_under_the_pipelines_names_and_none_of_another_run(tmp_path: Path) -> None:
    trail_port, text_port = free_port(), free_port()

    def answer(body: Any) -> tuple[int, bytes]:
        return text_result(f"{body['ip']}: 0 reports")

    async with (
        callback_site(answer) as site,
        running(cloudtrail(trail_port), ready=UVICORN_READY),
        running(text_demo(text_port), ready=UVICORN_READY),
        pipeline(tmp_path) as gateway,
    ):
        # Phases 2 and 3: the run's components, then its group's server, each under its node id.
        for node in ("abuseipdb", "virustotal"):
            created = await gateway.internal("register-component", component(RUN_A, node, site))
            assert created.status_code == 201, created.text
            assert created.json()["type"] == "component" and created.json()["toolName"] == node
        body = local(RUN_A, "aws-mcp-group-aws-cloudtrail", "aws-cloudtrail", trail_port)
        created = await gateway.internal("register-local", body)
        assert created.status_code == 201, created.text
        assert {k: created.json()[k] for k in ("runId", "nodeId", "toolName", "type", "serverId")} == {
            "runId": RUN_A,
            "nodeId": "aws-mcp-group-aws-cloudtrail",
            "toolName": "aws-cloudtrail",
            "type": "local-mcp",
            "serverId": "aws-cloudtrail",
        }
        # Another run registers a server of its own, and a component under a node id run A uses too.
        other = local(RUN_B, "text-group-text", "text", text_port)
        assert (await gateway.internal("register-local", other)).status_code == 201
        assert (await gateway.internal("register-component", component(RUN_B, "abuseipdb", site))).status_code == 201

        # Phase 4: each run's agent token, allowing node ids (a group by its prefix).
        allowed = {"runId": RUN_A, "allowedNodeIds": ["abuseipdb", "aws-mcp-group", "virustotal"]}
        issued = await gateway.internal("generate-token", allowed)
        assert issued.status_code == 201, issued.text
        assert issued.json()["runId"] == RUN_A and issued.json()["allowedNodeIds"] == allowed["allowedNodeIds"]
        token_a = issued.json()["token"]
        token_b = (await gateway.internal("generate-token", {"runId": RUN_B, "allowedNodeIds": ["text-group"]})).json()[
            "token"
        ]

        # Phases 5 to 8: the agent lists and calls its tools at the pipeline's MCP endpoint.
        async with gateway.agent(token_a) as agent:
            names = await tool_names(agent, {"abuseipdb", "virustotal", "aws-cloudtrail__list_trails"})
            assert names == {"abuseipdb", "virustotal", "aws-cloudtrail__list_trails"}
            listed = await agent.call_tool("aws-cloudtrail__list_trails", {})
            assert not listed.is_error, listed.content
            looked_up = await agent.call_tool("abuseipdb", {"ip": "192.0.2.7"})
            assert not looked_up.is_error, looked_up.content
            assert "192.0.2.7: 0 reports" in str(looked_up.content)
            assert [path for path, _, _ in site.received] == ["/abuseipdb"]  # run A's own component, not run B's
            with pytest.raises(MCPError, match="Unknown tool 'text__slugify'"):  # another run's: not there
                await agent.call_tool("text__slugify", {"text": "Run B"})
        async with gateway.agent(token_b) as agent:
            names = await tool_names(agent, {"text__slugify"})
            assert "text__slugify" in names
            assert not names & {"abuseipdb", "virustotal", "aws-cloudtrail__list_trails"}
            assert all(name.startswith("text__") for name in names)

        # The run as a person debugging it reads it: one listing per run, by node id.
        view = await gateway.get(f"/internal/mcp/runs/{RUN_A}/tools")
        assert view.status_code == 200, view.text
        tools = view.json()["tools"]
        assert sorted(tools) == ["abuseipdb", "aws-mcp-group-aws-cloudtrail", "virustotal"]
        trail = tools["aws-mcp-group-aws-cloudtrail"]
        assert (trail["type"], trail["toolName"]) == ("local-mcp", "aws-cloudtrail")
        assert trail["serverId"] == "aws-cloudtrail"
        assert trail["endpoint"] == f"http://127.0.0.1:{trail_port}/mcp"
        assert trail["status"] == "connected"
        assert (tools["abuseipdb"]["type"], tools["abuseipdb"]["nodeId"]) == ("component", "abuseipdb")
        assert sorted((await gateway.get(f"/internal/mcp/runs/{RUN_B}/tools")).json()["tools"]) == [
            "abuseipdb",
            "text-group-text",
        ]
        # Without a credential: refused, the MCP endpoint as /mcp refuses.
        assert (await gateway.get(f"/internal/mcp/runs/{RUN_A}/tools", credential=None)).status_code == 401
        async with httpx2.AsyncClient(timeout=30) as http:
            unauthenticated = await http.post(f"{gateway.base}/api/v1/mcp/gateway", json={})
        assert unauthenticated.status_code == 401 and unauthenticated.json()["error"] == "invalid_token"


async def test_a_registering_token_registers_and_issues_tokens_for_its_own_run_only(tmp_path: Path) -> None:
    def answer(body: Any) -> tuple[int, bytes]:
        return text_result("ok")

    async with callback_site(answer) as site, pipeline(tmp_path) as gateway:
        asked = {"namespace": RUN_A, "servers": ["*"], "ttlSeconds": 600, "label": "run a's worker"}
        worker = await gateway.post("/tokens", {**asked, "canRegister": True})
        assert worker.status_code == 201, worker.text
        secret, expires = worker.json()["token"], worker.json()["expiresAt"]
        plain = (await gateway.post("/tokens", {**asked, "label": "an agent"})).json()["token"]

        mine = await gateway.internal("register-component", component(RUN_A, "abuseipdb", site), secret)
        assert mine.status_code == 201, mine.text
        theirs = await gateway.internal("register-component", component(RUN_B, "abuseipdb", site), secret)
        assert theirs.status_code == 403
        assert "own namespace 'shipsec-run-a' only" in theirs.json()["error"]["message"]
        server = {"name": "text", "url": "http://127.0.0.1:9/mcp"}
        assert (await gateway.post("/registry/servers", {**server, "namespace": RUN_A}, secret)).status_code == 201
        assert (await gateway.post("/registry/servers", {**server, "global": True}, secret)).status_code == 403
        assert (await gateway.post("/registry/servers", {**server, "namespace": RUN_B}, secret)).status_code == 403
        listed = (await gateway.get("/registry/servers", secret)).json()["servers"]
        assert [(s["namespace"], s["name"]) for s in listed] == [(RUN_A, "text")]

        agent = await gateway.internal("generate-token", {"runId": RUN_A, "allowedNodeIds": ["abuseipdb"]}, secret)
        assert agent.status_code == 201, agent.text
        assert agent.json()["expiresAt"] <= expires  # never outlives the token that issued it
        other = await gateway.internal("generate-token", {"runId": RUN_B, "allowedNodeIds": ["abuseipdb"]}, secret)
        assert other.status_code == 403
        assert (await gateway.get(f"/internal/mcp/runs/{RUN_A}/tools", secret)).status_code == 200
        assert (await gateway.get(f"/internal/mcp/runs/{RUN_B}/tools", secret)).status_code == 403
        assert (await gateway.get("/tokens", secret)).status_code == 403  # tokens stay the admins'

        # Neither an agent's token nor one a worker issued may register anything.
        for credential in (plain, agent.json()["token"]):
            refused = await gateway.internal("register-component", component(RUN_A, "virustotal", site), credential)
            assert refused.status_code == 403
            assert "canRegister" in refused.json()["error"]["message"]


async def test_the_command_line_issues_a_registering_token(tmp_path: Path) -> None:
    config = pipeline_config(tmp_path)
    command = [PYTHON, "-m", "toolscout", "token", "create", "-c", str(config), "-n", RUN_A, "-s", "*"]
    made = await anyio.run_process([*command, "-l", "worker", "--can-register", "--json"], env=ENV, check=False)
    assert made.returncode == 0, made.stderr.decode()
    secret = json.loads(made.stdout)["token"]
    async with callback_site(lambda body: text_result("ok")) as site, pipeline(tmp_path) as gateway:
        assert (await gateway.internal("register-component", component(RUN_A, "a", site), secret)).status_code == 201
        assert (await gateway.internal("register-component", component(RUN_B, "a", site), secret)).status_code == 403


async def test_the_pipelines_bodies_are_refused_in_its_own_words(tmp_path: Path) -> None:
    async with pipeline(tmp_path) as gateway:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("register-local", {"runId": RUN_A, "nodeId": "n", "toolName": "t"}, '"endpoint" is required'),
            ("register-local", {"runId": RUN_A, "nodeId": "n", "endpoint": "ftp://x/mcp"}, '"endpoint" must'),
            ("register-local", {"runId": RUN_A, "nodeId": "a b", "endpoint": "http://x/mcp"}, '"nodeId" must be'),
            ("register-local", {"nodeId": "n", "endpoint": "http://x/mcp"}, '"runId" is required'),
            ("register-local", {"runId": RUN_A, "nodeId": "n", "endpoint": "http://x/mcp", "port": 1}, "unknown key"),
            ("register-component", {"runId": RUN_A, "nodeId": "n", "callbackUrl": "http://x/"}, '"description"'),
            ("generate-token", {"runId": RUN_A}, '"allowedNodeIds" must be a list'),
            ("generate-token", {"runId": RUN_A, "allowedNodeIds": ["a.b"]}, '"allowedNodeIds" entries must be'),
        ]
        for route, body, said in cases:
            refused = await gateway.internal(route, body)
            assert refused.status_code == 400, (route, body, refused.text)
            assert said in refused.json()["error"]["message"], (route, body, refused.text)
        assert (await gateway.get("/internal/mcp/runs/a.b/tools")).status_code == 400


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_a_runs_listing_reads_the_same_from_sqlite_and_redis(tmp_path: Path, backend: str) -> None:
    async with AsyncExitStack() as stack:
        site = await stack.enter_async_context(callback_site(lambda body: text_result("ok")))
        extra: dict[str, Any] = {}
        if backend == "redis":
            redis = await stack.enter_async_context(redis_server(tmp_path / "redis"))
            extra["registry"] = {"backend": "redis", "url": redis.url, "keyPrefix": "ts-pipeline:"}
        async with pipeline(tmp_path, **extra) as gateway:
            registered = await gateway.internal("register-component", component(RUN_A, "abuseipdb", site))
            assert registered.status_code == 201
            body = local(RUN_A, "aws-mcp-group-aws-iam", "aws-iam", free_port())
            assert (await gateway.internal("register-local", body)).status_code == 201
            assert (await gateway.internal("register-local", local(RUN_B, "x", "x", free_port()))).status_code == 201
            view = (await gateway.get(f"/internal/mcp/runs/{RUN_A}/tools")).json()
        # Read again by a gateway started afresh on the same registry: it was kept, not only applied.
        async with pipeline(tmp_path, **extra) as gateway:
            again = (await gateway.get(f"/internal/mcp/runs/{RUN_A}/tools")).json()
            remote = await anyio.run_process([*LISTING, "--url", gateway.base, "--json"], env=ENV, check=False)
        # And by the command line, from the registry itself.
        config = str(pipeline_config(tmp_path, **extra))
        local_json = await anyio.run_process([*LISTING, "-c", config, "--json"], env=ENV, check=False)
        text = await anyio.run_process([*LISTING, "-c", config], env=ENV, check=False)
    assert remote.returncode == local_json.returncode == text.returncode == 0, remote.stderr + local_json.stderr
    assert (
        json.loads(remote.stdout)["tools"].keys()
        == json.loads(local_json.stdout)["tools"].keys()
        == again["tools"].keys()
    )
    assert json.loads(remote.stdout)["tools"]["aws-mcp-group-aws-iam"]["status"] in ("connecting", "error")
    assert "aws-mcp-group-aws-iam  toolName=aws-iam  type=local-mcp serverId=aws-iam" in text.stdout.decode()
    keep = ("nodeId", "toolName", "type", "endpoint", "serverId")
    assert {n: {k: v for k, v in e.items() if k in keep} for n, e in again["tools"].items()} == {
        "abuseipdb": {"nodeId": "abuseipdb", "toolName": "abuseipdb", "type": "component"},
        "aws-mcp-group-aws-iam": {
            "nodeId": "aws-mcp-group-aws-iam",
            "toolName": "aws-iam",
            "type": "local-mcp",
            "endpoint": body["endpoint"],
            "serverId": "aws-iam",
        },
    }
    assert again["runId"] == view["runId"] == RUN_A
    assert sorted(view["tools"]) == sorted(again["tools"])
