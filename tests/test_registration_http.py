"""Runtime registration end to end (register, discover, call): `toolscout serve --transport http` as
a child process, servers and callback tools registered through its HTTP API (or this machine's
registry, by the CLI), and an SDK client that lists, searches and executes what was registered.

The critical pitfall of registration, an endpoint registered before it serves its tools, is
exercised with real endpoints: one that starts only after it was registered, one that dies and
comes back, one that lists no tools at first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.processes import (
    UVICORN_READY,
    free_port,
    running,
    served_gateway,
    servers,
    status_of,
    stop,
    structured,
    until,
    write_config,
)
from mcp import Client

from tests.helpers.callback_site import callback_site, text_result
from tests.helpers.list_changes import ListWatcher, watched_client
from tests.helpers.paths import PYTHON, ROOT

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ip": {"type": "string"}}, "required": ["ip"]}


def text_demo(port: int) -> list[str]:
    return [PYTHON, "-m", "toolscout.demo.text", "--transport", "http", "--port", str(port)]


def server_body(name: str, port: int, **extra: Any) -> dict[str, Any]:
    return {"namespace": "run-1", "name": name, "url": f"http://127.0.0.1:{port}/mcp", **extra}


def tool_body(name: str, url: str, **extra: Any) -> dict[str, Any]:
    description = "Check an IP address's abuse reports on AbuseIPDB."
    return {"namespace": "run-1", "name": name, "description": description, "inputSchema": SCHEMA, "callbackUrl": url}


async def test_a_server_registered_before_it_starts_is_found_once_it_answers(tmp_path: Path) -> None:
    port = free_port()
    async with served_gateway(write_config(tmp_path)) as gateway, Client(gateway.mcp_url) as client:
        created = await gateway.api("POST", "/registry/servers", server_body("text", port, description="Run 1 text"))
        assert created.status_code == 201, created.text
        assert created.json()["shownAs"] == "run-1.text"

        # Down: the status and the last error are shown, and it is tried again.
        down = (await until(client, lambda found: status_of("run-1.text")(found) == "error"))["run-1.text"]
        assert down["error"]
        assert down["description"] == "Run 1 text"
        [listed] = (await gateway.api("GET", "/registry/servers?namespace=run-1")).json()["servers"]
        assert listed["status"] in ("error", "connecting")  # (between two attempts, or in one)
        assert listed["error"]

        async with running(text_demo(port), ready=UVICORN_READY):
            await until(client, lambda found: status_of("run-1.text")(found) == "connected")
            hits = structured(await client.call_tool("search_tools", {"query": "slugify a title", "limit": 5}))
            assert ("run-1.text", "slugify") in [(hit["server"], hit["tool"]) for hit in hits["results"]]
            arguments = {"server": "run-1.text", "tool": "slugify", "arguments": {"text": "Hello, World!"}}
            assert structured(await client.call_tool("execute_tool", arguments)) == {"result": "hello-world"}
            [listed] = (await gateway.api("GET", "/registry/servers")).json()["servers"]
            assert listed["status"] == "connected"
            assert listed["toolCount"] > 0
            assert "error" not in listed


async def test_a_server_that_dies_and_comes_back_is_found_again(tmp_path: Path) -> None:
    port = free_port()
    arguments = {"server": "run-1.text", "tool": "slugify", "arguments": {"text": "Back Again"}}
    async with served_gateway(write_config(tmp_path)) as gateway, Client(gateway.mcp_url) as client:
        async with running(text_demo(port), ready=UVICORN_READY) as text:
            assert (await gateway.api("POST", "/registry/servers", server_body("text", port))).status_code == 201
            await until(client, lambda found: status_of("run-1.text")(found) == "connected")
            await stop(text.process)
            gone = await until(client, lambda found: status_of("run-1.text")(found) == "error")
            assert gone["run-1.text"]["error"]
        async with running(text_demo(port), ready=UVICORN_READY):
            await until(client, lambda found: status_of("run-1.text")(found) == "connected")
            assert structured(await client.call_tool("execute_tool", arguments)) == {"result": "back-again"}


async def test_an_endpoint_that_lists_no_tools_at_first_is_listed_again(tmp_path: Path) -> None:
    port = free_port()
    late = [PYTHON, str(ROOT / "tests" / "servers" / "late_tools.py"), "--port", str(port), "--empty", "2"]
    async with (
        running(late, ready=UVICORN_READY),
        served_gateway(write_config(tmp_path)) as gateway,
        Client(gateway.mcp_url) as client,
    ):
        assert (await gateway.api("POST", "/registry/servers", server_body("cloudtrail", port))).status_code == 201
        found = await until(client, lambda found: found.get("run-1.cloudtrail", {}).get("toolCount") == 1)
        assert found["run-1.cloudtrail"]["status"] == "connected"
        hits = structured(await client.call_tool("search_tools", {"query": "cloudtrail trails", "limit": 3}))
        assert [(hit["server"], hit["tool"]) for hit in hits["results"]][:1] == [("run-1.cloudtrail", "list_trails")]


async def test_a_callback_tool_is_searched_validated_executed_and_audited(tmp_path: Path) -> None:
    def answer(body: Any) -> tuple[int, bytes]:
        return text_result(f"{body['ip']}: 0 reports")

    async with (
        callback_site(answer) as site,
        served_gateway(write_config(tmp_path)) as gateway,
        Client(gateway.mcp_url) as client,
    ):
        created = await gateway.api("POST", "/registry/tools", tool_body("abuseipdb", site.url()))
        assert created.status_code == 201, created.text
        assert created.json()["status"] in ("connecting", "connected")
        await until(client, lambda found: status_of("run-1.abuseipdb")(found) == "connected")
        hits = structured(await client.call_tool("search_tools", {"query": "abuse reports of an IP address"}))
        assert [(h["server"], h["tool"]) for h in hits["results"]][:1] == [("run-1.abuseipdb", "abuseipdb")]

        call = {"server": "run-1.abuseipdb", "tool": "abuseipdb"}
        refused = await client.call_tool("execute_tool", {**call, "arguments": {"ip": 7}})
        assert refused.is_error
        assert "VALIDATION_ERROR" in json.dumps(refused.structured_content)
        assert site.received == []  # refused before anything was POSTed

        result = await client.call_tool("execute_tool", {**call, "arguments": {"ip": "192.0.2.7"}})
        assert not result.is_error, result.content
        assert "192.0.2.7: 0 reports" in str(result.content)
        assert [(path, body) for path, body, _ in site.received] == [("/tool", {"ip": "192.0.2.7"})]

    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(r["server"], r["tool"], r["outcome"], r["code"]) for r in records] == [
        ("run-1.abuseipdb", "abuseipdb", "error", "VALIDATION_ERROR"),
        ("run-1.abuseipdb", "abuseipdb", "ok", None),
    ]


async def test_an_expired_registration_leaves(tmp_path: Path) -> None:
    async with served_gateway(write_config(tmp_path)) as gateway, Client(gateway.mcp_url) as client:
        url = f"http://127.0.0.1:{free_port()}/tool"
        assert (await gateway.api("POST", "/registry/tools", tool_body("brief", url))).status_code == 201
        await until(client, lambda found: "run-1.brief" in found)
        # Registered again with a short life: it leaves when that is over.
        again = await gateway.api("POST", "/registry/tools", {**tool_body("brief", url), "ttlSeconds": 1})
        assert again.status_code == 201, again.text
        await until(client, lambda found: "run-1.brief" not in found)
        assert (await gateway.api("GET", "/registry/tools")).json() == {"tools": []}
        call = {"server": "run-1.brief", "tool": "brief", "arguments": {"ip": "192.0.2.7"}}
        result = await client.call_tool("execute_tool", call)
        assert result.is_error
        assert "SERVER_NOT_FOUND" in json.dumps(result.structured_content)


async def test_a_restarted_gateway_keeps_its_registrations(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    port = free_port()
    async with served_gateway(config) as gateway:
        assert (await gateway.api("POST", "/registry/servers", server_body("text", port))).status_code == 201
        tool = tool_body("abuseipdb", f"http://127.0.0.1:{free_port()}/tool")
        assert (await gateway.api("POST", "/registry/tools", tool)).status_code == 201
    async with served_gateway(config) as gateway, Client(gateway.mcp_url) as client:
        found = await until(client, lambda found: status_of("run-1.abuseipdb")(found) == "connected")
        assert "run-1.text" in found
        listed = (await gateway.api("GET", "/registry/servers")).json()["servers"]
        assert [entry["shownAs"] for entry in listed] == ["run-1.text"]
        async with running(text_demo(port), ready=UVICORN_READY):
            await until(client, lambda found: status_of("run-1.text")(found) == "connected")


async def cli(*args: str) -> tuple[int, str, str]:
    done = await anyio.run_process([PYTHON, "-m", "toolscout", *args], check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_cli_writes_the_local_registry_a_running_gateway_picks_up(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    async with served_gateway(config) as gateway, Client(gateway.mcp_url) as client:
        url = f"http://127.0.0.1:{free_port()}/tool"
        schema = json.dumps(SCHEMA)
        code, _, err = await cli(
            "registry", "add-tool", "lookup", "-n", "run-2", "--callback-url", url,
            "--description", "Look an IP up.", "--input-schema", schema, "--config", str(config),
        )  # fmt: skip
        assert code == 0, err
        await until(client, lambda found: status_of("run-2.lookup")(found) == "connected")

        endpoint = f"http://127.0.0.1:{free_port()}/mcp"
        code, out, err = await cli("registry", "add", "text", endpoint, "-n", "run-2", "--url", gateway.base_url)
        assert code == 0, err
        assert "Registered run-2.text on the gateway" in out
        assert "run-2.text" in await servers(client)  # applied before the command returned
        code, _, err = await cli("registry", "add", "units", endpoint, "--global", "--url", gateway.base_url)
        assert code == 1
        assert "'units' is the name of a configured server" in err

        code, out, err = await cli("registry", "list", "--url", gateway.base_url, "--json")
        assert code == 0, err
        assert [s["shownAs"] for s in json.loads(out)["servers"]] == ["run-2.text"]
        [entry] = json.loads(out)["tools"]
        assert (entry["shownAs"], entry["status"], entry["toolCount"]) == ("run-2.lookup", "connected", 1)

        code, out, err = await cli("registry", "remove-tool", "lookup", "-n", "run-2", "--url", gateway.base_url)
        assert code == 0, err
        assert "run-2.lookup" not in await until(client, lambda found: "run-2.lookup" not in found)
        code, _, err = await cli("registry", "remove-tool", "lookup", "-n", "run-2", "--url", gateway.base_url)
        assert code == 2
        assert "no callback tool 'lookup' is registered in namespace 'run-2'" in err
        assert "Traceback" not in err


async def test_names_taken_are_409_and_bad_bodies_400(tmp_path: Path) -> None:
    async with served_gateway(write_config(tmp_path)) as gateway:
        clash = await gateway.api("POST", "/registry/servers", {"global": True, "name": "units", "url": "http://h/mcp"})
        assert clash.status_code == 409
        assert clash.json()["error"]["code"] == "NAME_TAKEN"
        assert "'units' is the name of a configured server" in clash.json()["error"]["message"]

        tool = tool_body("lookup", "http://127.0.0.1:9/tool")
        assert (await gateway.api("POST", "/registry/tools", tool)).status_code == 201
        clash = await gateway.api("POST", "/registry/servers", server_body("lookup", 9))
        assert clash.status_code == 409
        assert "'run-1.lookup' is already registered as a callback tool" in clash.json()["error"]["message"]

        for body, said in (
            ({"name": "x", "url": "http://h/mcp"}, '"namespace" is required'),
            (server_body("x", 9, url="file:///etc/passwd"), '"url" must be an http:// or https:// URL'),
            (server_body("x", 9, ttlSeconds=-1), '"ttlSeconds" must be'),
            (server_body("a.b", 9), '"name" must be 1-64 letters'),
        ):
            refused = await gateway.api("POST", "/registry/servers", body)
            assert refused.status_code == 400, body
            assert refused.json()["error"]["code"] == "INVALID_REGISTRATION"
            assert said in refused.json()["error"]["message"]
        bad_schema = {**tool, "inputSchema": {"type": "object", "required": 1}}
        refused = await gateway.api("POST", "/registry/tools", bad_schema)
        assert refused.status_code == 400
        assert "not a valid JSON Schema" in refused.json()["error"]["message"]
        refused = await gateway.api("POST", "/registry/servers", content=b"{not json")
        assert (refused.status_code, refused.json()["error"]["code"]) == (400, "INVALID_JSON")
        refused = await gateway.api("GET", "/registry/servers?namespace=a.b")
        assert refused.status_code == 400
        global_tool = {k: v for k, v in tool_body("shared", "http://127.0.0.1:9/tool").items() if k != "namespace"}
        assert (await gateway.api("POST", "/registry/tools", {**global_tool, "global": True})).status_code == 201
        listed = (await gateway.api("GET", "/registry/tools")).json()["tools"]
        assert [(t["namespace"], t["shownAs"]) for t in listed] == [(None, "shared"), ("run-1", "run-1.lookup")]
        assert (await gateway.api("DELETE", "/registry/tools/shared")).status_code == 204
        missing = await gateway.api("DELETE", "/registry/servers/run-1/nothing")
        assert missing.status_code == 404
        assert (await gateway.api("DELETE", "/registry/tools/run-1/lookup")).status_code == 204
        assert (await gateway.api("DELETE", "/registry/tools/run-1/lookup")).status_code == 404


async def test_re_registering_replaces_and_a_new_url_reconnects(tmp_path: Path) -> None:
    first, second = free_port(), free_port()
    async with served_gateway(write_config(tmp_path)) as gateway, Client(gateway.mcp_url) as client:
        assert (await gateway.api("POST", "/registry/servers", server_body("text", first))).status_code == 201
        await until(client, lambda found: status_of("run-1.text")(found) == "error")
        async with running(text_demo(second), ready=UVICORN_READY):
            again = await gateway.api("POST", "/registry/servers", server_body("text", second))
            assert again.status_code == 201
            await until(client, lambda found: status_of("run-1.text")(found) == "connected")
            [listed] = (await gateway.api("GET", "/registry/servers")).json()["servers"]
            assert listed["url"] == f"http://127.0.0.1:{second}/mcp"


async def test_clients_whose_tool_list_changed_are_told(tmp_path: Path) -> None:
    watcher = ListWatcher()
    async with (
        callback_site(lambda _: text_result("ok")) as site,
        served_gateway(write_config(tmp_path), "--mode", "passthrough") as gateway,
        watched_client(gateway.mcp_url, "legacy", watcher) as client,
    ):
        before = [tool.name for tool in (await client.list_tools()).tools]
        assert (await gateway.api("POST", "/registry/tools", tool_body("abuseipdb", site.url()))).status_code == 201
        await watcher.wait_for(1)
        after = [tool.name for tool in (await client.list_tools()).tools]
        # `toolNames: auto` counts registered servers: in front of two servers every name is server__tool.
        assert "convert_units" in before
        assert sorted(after) == sorted([*(f"units__{name}" for name in before), "run-1_abuseipdb__abuseipdb"])
