"""The discovery HTTP API of a real `toolscout serve --transport http` child in front of the demo
servers, asked with real HTTP requests: servers, tools, search (explained), audit and mcp/call within
each credential's scope; stats, semantic health, embeddings sync and the semantic settings for admin
keys only; the same answers at the paths other gateways use; and a change of the settings written to
the config file with its comments kept."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from benchmarks.processes import SERVE_READY, running

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from tests.helpers.scoped_gateway import UNSEEN, scoped_http, two_namespaces
from toolscout.masking import MASK

pytestmark = pytest.mark.anyio

ADMIN = "admin-0123456789abcdef-ADMIN"
UNITS = "units-0123456789abcdef-CLIENT"
NOTES = "notes-0123456789abcdef-CLIENT"
CONFIG = """{
  // The demo servers, as a person would write them.
  "mcpServers": {
    "units": {"command": "%(python)s", "args": ["-m", "toolscout.demo.units"]},
    "notes": {"command": "%(python)s", "args": ["-m", "toolscout.demo.notes"]}
  },
  "toolRules": [
    {"pattern": ["delete_*"], "enabled": false, "tags": ["dangerous"]},
    // In no MCP listing, still searched and callable.
    {"pattern": ["list_notes"], "hidden": true}
  ],
  "smartTool": true,
  "search": {
    // Kept low so that every match shows.
    "minRelevance": 0.0
  },
  "catalogCache": {"path": "%(root)s/catalog.sqlite3"},
  "registry": {"path": "%(root)s/registry.sqlite3"},
  "audit": {"path": "%(root)s/audit.jsonl"},
  "auth": {
    "adminKeys": ["${ADMIN_KEY}"],
    "keys": [
      {"key": "${UNITS_KEY}", "label": "ci", "namespace": "ci", "servers": ["units"]},
      {"key": "${NOTES_KEY}", "label": "writer", "namespace": "writers", "servers": ["notes"]}
    ]
  }
}
"""


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path)


@asynccontextmanager
async def served(
    sandbox: Sandbox, config: str = CONFIG, variables: Mapping[str, str] | None = None
) -> AsyncGenerator[str]:
    """The base URL of `toolscout serve --transport http` over `config`, with the keys (and `variables`) set."""
    path = sandbox.write("work/toolscout.jsonc", config % {"python": PYTHON, "root": sandbox.root})
    command = [PYTHON, "-m", "toolscout", "serve", "-c", str(path), "--transport", "http", "--port", "0"]
    env = {**sandbox.env(), "ADMIN_KEY": ADMIN, "UNITS_KEY": UNITS, "NOTES_KEY": NOTES, **(variables or {})}
    async with running(command, ready=SERVE_READY, env=env) as gateway:
        yield gateway.match.group(1).removesuffix("/mcp")


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def get(http: httpx2.AsyncClient, path: str, key: str, **params: str) -> tuple[int, Any]:
    answer = await http.get(path, headers=bearer(key), params=params)
    return answer.status_code, answer.json()


async def send(http: httpx2.AsyncClient, method: str, path: str, key: str, body: Any) -> tuple[int, Any]:
    answer = await http.request(method, path, headers=bearer(key), json=body)
    return answer.status_code, answer.json()


def without(entry: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in keys}


async def test_servers_and_tools_within_each_credentials_scope(sandbox: Sandbox) -> None:
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        status, data = await get(http, "/api/v1/servers", ADMIN)
        assert status == 200
        servers = {s["name"]: s for s in data["servers"]}
        assert list(servers) == ["units", "notes"]
        units = servers["units"]
        assert units["config"] == {"type": "stdio", "command": PYTHON, "args": ["-m", "toolscout.demo.units"]}
        assert without(units, "connectedSince", "serverInfo", "instructions", "config") == {
            "name": "units",
            "description": units["description"],
            "status": "connected",
            "toolCount": 3,
            "enabledCount": 3,
            "protocolVersion": units["protocolVersion"],
            "era": "2026-07-28" if units["protocolVersion"] == "2026-07-28" else "handshake",
        }
        assert isinstance(units["connectedSince"], float)
        assert servers["notes"]["toolCount"] == 6 and servers["notes"]["enabledCount"] == 5
        assert servers["notes"]["hiddenCount"] == 1 and "hiddenCount" not in units

        # A client key sees its servers only, and the same entry an admin sees for them.
        status, data = await get(http, "/api/v1/servers", UNITS)
        assert status == 200 and [s["name"] for s in data["servers"]] == ["units"]
        assert without(data["servers"][0], "connectedSince") == without(units, "connectedSince")

        status, data = await get(http, "/api/v1/tools", ADMIN, server="notes")
        assert status == 200
        tools = {t["name"]: t for t in data["tools"]}
        assert tools["delete_note"] == {
            "server": "notes",
            "name": "delete_note",
            "summary": tools["delete_note"]["summary"],
            "signature": "delete_note({id: string})",
            "tags": ["dangerous"],
            "enabled": False,
            "annotations": tools["delete_note"]["annotations"],
            "hiddenBy": "toolRules[0]",
        }
        assert tools["create_note"]["enabled"] is True and "hiddenBy" not in tools["create_note"]
        assert "listed" not in tools["create_note"]
        assert tools["list_notes"]["enabled"] is True and tools["list_notes"]["listed"] is False

        # Another namespace's server is not found for a client key, as one that does not exist.
        status, data = await get(http, "/api/v1/tools", UNITS, server="notes")
        assert status == 404 and data["error"]["code"] == "SERVER_NOT_FOUND"
        assert "notes" not in data["error"]["message"].replace("'notes'", "")
        status, data = await get(http, "/api/v1/tools", UNITS)
        assert {t["server"] for t in data["tools"]} == {"units"}

        # No credential, or a wrong one: 401 in the API's shape.
        answer = await http.get("/api/v1/tools")
        assert answer.status_code == 401 and answer.json()["error"]["code"] == "UNAUTHORIZED"


async def test_servers_show_an_oauth_client_secret_masked_however_it_is_written(sandbox: Sandbox) -> None:
    literal, from_env = "api-client-secret-1f2e3d4c", "api-client-secret-from-env-5b6a"
    config = """{
      "mcpServers": {
        "units": {"command": "%(python)s", "args": ["-m", "toolscout.demo.units"]},
        // Nothing listens on port 9: both fail to connect, and are listed all the same.
        "remote": {
          "url": "http://127.0.0.1:9/mcp",
          "oauth": {"clientId": "api-app", "clientSecret": "LITERAL", "scopes": ["read"]},
          "reconnect": false
        },
        "stream": {
          "type": "sse",
          "url": "http://127.0.0.1:9/sse",
          "oauth": {"clientId": "api-sse-app", "clientSecret": "${STREAM_CLIENT_SECRET}"},
          "reconnect": false
        }
      },
      "catalogCache": false,
      "audit": {"path": "%(root)s/audit.jsonl"},
      "auth": {"adminKeys": ["${ADMIN_KEY}"]}
    }""".replace("LITERAL", literal)
    async with (
        served(sandbox, config, {"STREAM_CLIENT_SECRET": from_env}) as base,
        httpx2.AsyncClient(base_url=base, timeout=30) as http,
    ):
        answer = await http.get("/api/v1/servers", headers=bearer(ADMIN))
    assert answer.status_code == 200
    assert literal not in answer.text and from_env not in answer.text, answer.text
    servers = {s["name"]: s["config"] for s in answer.json()["servers"]}
    assert servers["remote"]["oauth"] == {"clientId": "api-app", "clientSecret": MASK, "scopes": ["read"]}
    assert servers["stream"]["oauth"] == {"clientId": "api-sse-app", "clientSecret": MASK}


async def test_search_explained_is_the_search_in_its_order(sandbox: Sandbox) -> None:
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        for query in ("convert miles to km", "create_note", "find my notes about groceries"):
            status, plain = await get(http, "/api/v1/search", ADMIN, q=query)
            assert status == 200 and plain["results"] and "nothingFits" not in plain, query
            status, explained = await get(http, "/api/v1/search", ADMIN, q=query, explain="true")
            assert status == 200
            order = [(r["server"], r["tool"], r["relevance"]) for r in plain["results"]]
            assert [(r["server"], r["tool"], r["relevance"]) for r in explained["results"]] == order
            for result in explained["results"]:
                parts = result["contributions"]
                assert list(parts) == ["lexical", "names", "embeddings", "fusion"]
                # The hand-set fusion: the parts add up to the score the ranking sorts by.
                assert parts["lexical"] + parts["names"] + parts["embeddings"] == pytest.approx(
                    parts["fusion"], abs=2e-3
                )
                # smartTool is on: each selection method's score, and the combined one.
                assert set(result["smart"]) == {"rule_based", "semantic_based", "combined"}
        status, weak = await get(http, "/api/v1/search", ADMIN, q="get the stock price")
        assert status == 200 and weak["results"] and weak["nothingFits"] is True  # as search_tools says it
        status, named = await get(http, "/api/v1/search", ADMIN, q="create_note", explain="true")
        first = named["results"][0]
        assert (first["server"], first["tool"], first["relevance"]) == ("notes", "create_note", 1.0)
        assert first["contributions"]["fusion"] == 11.0  # a tool the query names goes first

        # Within a client key's scope: its servers only.
        status, scoped = await get(http, "/api/v1/search", UNITS, q="create a note", explain="true")
        assert status == 200 and {r["server"] for r in scoped["results"]} <= {"units"}

        # The tools the rules disable, only when asked, and said to be disabled.
        status, plain = await get(http, "/api/v1/search", ADMIN, q="delete a note")
        assert "delete_note" not in [r["tool"] for r in plain["results"]]
        status, every = await get(http, "/api/v1/search", ADMIN, q="delete a note", includeDisabled="true")
        assert status == 200 and (every["results"][0]["tool"], every["results"][0]["enabled"]) == ("delete_note", False)

        status, data = await get(http, "/api/v1/search", ADMIN)
        assert status == 400 and data == {
            "error": {"code": "INVALID_REQUEST", "message": "q is missing: GET /api/v1/search?q=convert+miles+to+km"}
        }
        status, data = await get(http, "/api/v1/search", ADMIN, q="x", limit="0")
        assert status == 400 and data["error"]["message"] == "limit must be from 1 to 100, got 0"


async def test_mcp_call_is_execute_tool_with_its_scope_and_audit(sandbox: Sandbox) -> None:
    convert = {"server": "units", "tool": "convert_units", "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"}}
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        status, result = await send(http, "POST", "/api/v1/mcp/call", UNITS, convert)
        assert status == 200 and result.get("isError") is not True
        assert "1000" in result["content"][0]["text"]

        # The native name, at the spec's path and the dashboard's.
        native = {"tool": "units__convert_units", "arguments": convert["arguments"]}
        for path in ("/v1/mcp/call", "/dashboard/api/mcp/execute"):
            status, again = await send(http, "POST", path, UNITS, native)
            assert (status, again) == (200, result)

        # Refusals are results with isError, as over MCP: a tool the rules hide, one outside the scope.
        status, hidden = await send(
            http, "POST", "/api/v1/mcp/call", ADMIN, {"server": "notes", "tool": "delete_note", "arguments": {}}
        )
        assert status == 200 and hidden["isError"] is True
        assert hidden["structuredContent"]["error"]["code"] == "TOOL_DISABLED"
        status, outside = await send(
            http, "POST", "/api/v1/mcp/call", UNITS, {"server": "notes", "tool": "list_notes", "arguments": {}}
        )
        assert status == 200 and outside["structuredContent"]["error"]["code"] == "SERVER_NOT_FOUND"
        status, bad = await send(
            http, "POST", "/api/v1/mcp/call", UNITS, {"server": "units", "tool": "convert_units", "arguments": {}}
        )
        assert bad["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"
        assert "GET /api/v1/tools?server=units" in bad["content"][0]["text"]

        # A request in plain words goes to smart_tool_discovery.
        status, smart = await send(http, "POST", "/api/v1/mcp/call", ADMIN, {"request": "convert 3 km to m"})
        assert status == 200 and smart["structuredContent"]["success"] is True
        assert smart["structuredContent"]["tool_name"] == "units/convert_units"

        # The audit log: newest first, a client key reads its own namespace's lines only.
        status, audit = await get(http, "/api/v1/audit", UNITS)
        assert status == 200
        lines = audit["entries"]
        assert [line["outcome"] for line in lines][:2] == ["error", "error"]
        assert {line["namespace"] for line in lines} == {"ci"} and {line["label"] for line in lines} == {"ci"}
        assert all(line["client"] == "http-api" for line in lines)
        assert len([line for line in lines if line["outcome"] == "ok"]) == 3
        status, admin_view = await get(http, "/api/v1/audit", ADMIN, tool="delete_note")
        assert [line["tool"] for line in admin_view["entries"]] == ["delete_note"]
        assert admin_view["entries"][0]["code"] == "TOOL_DISABLED"
        status, ok_only = await get(http, "/api/v1/audit", ADMIN, outcome="ok", limit="2")
        assert len(ok_only["entries"]) == 2 and ok_only["entries"][0]["server"] == "units"
        assert ok_only["entries"][0]["smart"]["method"] == "hybrid"  # the smart call was the last one
        assert ok_only["entries"][0]["client"] == "http-api"
        status, refused = await get(http, "/api/v1/audit", UNITS, namespace="writers")
        assert status == 403 and refused["error"]["code"] == "FORBIDDEN"
        status, theirs = await get(http, "/api/v1/audit", NOTES)
        assert status == 200 and theirs == {"entries": []}

        status, stats = await get(http, "/api/v1/discovery/stats", ADMIN)
        assert status == 200
        assert stats["smart"] == {"calls": 1, "ran": 1, "hitRate": 1.0, "selections": {"hybrid": 1}}
        assert stats["caches"]["smartToolMatches"] == {"entries": 1, "hits": 0, "misses": 1, "hitRate": 0.0}


async def test_admin_routes_refuse_client_keys_and_answer_at_the_spec_paths(sandbox: Sandbox) -> None:
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        for method, path in (
            ("GET", "/api/v1/discovery/stats"),
            ("GET", "/v1/discovery/stats"),
            ("GET", "/api/v1/health/semantic"),
            ("GET", "/health/semantic"),
            ("POST", "/api/v1/embeddings/sync"),
            ("POST", "/v1/embeddings/sync"),
            ("GET", "/api/v1/config/semantic"),
            ("PUT", "/v1/config/semantic"),
        ):
            answer = await http.request(method, path, headers=bearer(UNITS), json={})
            assert answer.status_code == 403, path
            assert answer.json() == {
                "error": {
                    "code": "FORBIDDEN",
                    "message": f"{path} needs an admin key (auth.adminKeys); a client key or token may use "
                    "GET /api/v1/servers, /tools, /search, /audit and POST /api/v1/mcp/call",
                }
            }

        await get(http, "/api/v1/search", ADMIN, q="convert miles")
        status, stats = await get(http, "/v1/discovery/stats", ADMIN)
        assert status == 200
        assert stats["searches"] == {"total": 1, "withResults": 1, "hitRate": 1.0, "explained": 0}
        assert stats == (await get(http, "/api/v1/discovery/stats", ADMIN))[1]

        status, health = await get(http, "/health/semantic", ADMIN)
        assert status == 200
        assert health == {
            "status": "ok",
            "backend": "hybrid",
            "model": health["model"],
            "configuredModel": health["model"],
            "fallback": None,
            "dimensions": 256,
            "toolsEmbedded": 8,  # the enabled tools: delete_note is not searched
            "staleEmbeddings": 0,
        }
        assert health["model"].startswith("static-minilm-256d-")
        status, synced = await send(http, "POST", "/v1/embeddings/sync", ADMIN, {})
        # Embedded when the gateway started: new to this cache, or found in it.
        assert synced["created"] + synced["unchanged"] == 8
        assert (status, synced) == (
            200,
            {
                "synced": False,
                "staleBefore": 0,
                "toolsEmbedded": 8,
                "staleEmbeddings": 0,
                "model": health["model"],
                "created": synced["created"],
                "updated": 0,
                "unchanged": synced["unchanged"],
                "failed": 0,
                "fallback": None,
            },
        )


async def test_semantic_settings_change_the_running_gateway_and_the_file(sandbox: Sandbox) -> None:
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        status, settings = await get(http, "/api/v1/config/semantic", ADMIN)
        assert status == 200
        assert settings == {
            "search": {
                "backend": "hybrid",
                "model": "static",
                "minRelevance": 0.0,
                "maxQueryChars": settings["search"]["maxQueryChars"],
                "maxQuerySteps": settings["search"]["maxQuerySteps"],
                "fuzzyNames": True,
                "nothingFitsBelow": 0.1,
                "embeddings": None,
            },
            "applied": False,
            "written": None,
            "backup": None,
            "note": None,
        }
        status, before = await get(http, "/api/v1/search", ADMIN, q="convert miles to km")
        assert len(before["results"]) > 1  # the weak matches show while the floor is 0
        strong = [r["tool"] for r in before["results"] if r["relevance"] >= 0.5]

        path = sandbox.cwd / "toolscout.jsonc"
        status, changed = await send(http, "PUT", "/v1/config/semantic", ADMIN, {"minRelevance": 0.5})
        assert status == 200
        assert changed["search"]["minRelevance"] == 0.5 and changed["applied"] is True
        assert changed["written"] == str(path) and changed["backup"] is not None
        assert changed["note"] == f"applied to the running gateway and written to {path}"
        text = await anyio.Path(path).read_text(encoding="utf-8")
        assert "// Kept low so that every match shows." in text and '"minRelevance": 0.5' in text
        assert "// The demo servers, as a person would write them." in text
        assert '"minRelevance": 0.0' in await anyio.Path(changed["backup"]).read_text(encoding="utf-8")

        status, after = await get(http, "/api/v1/search", ADMIN, q="convert miles to km")
        assert [r["tool"] for r in after["results"]] == strong == ["convert_units"]
        status, refused = await send(http, "PUT", "/api/v1/config/semantic", ADMIN, {"minRelevance": 2})
        assert status == 400 and refused["error"]["code"] == "INVALID_CONFIG"
        assert "minRelevance" in refused["error"]["message"]
        status, unknown = await send(http, "PUT", "/api/v1/config/semantic", ADMIN, {"model_name": "openai"})
        assert status == 400 and "model_name" in unknown["error"]["message"]
        answer = await http.put("/api/v1/config/semantic", headers=bearer(ADMIN), content=b"[1]")
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_JSON"


async def test_without_a_registry_or_credentials_the_discovery_routes_answer() -> None:
    # The face as http_app serves it with no registry (no token routes): the discovery routes are
    # there all the same; a request without a credential is anonymous and sees everything, as /mcp.
    async with (
        two_namespaces() as gateway,
        scoped_http(gateway, "discovery") as url,
        httpx2.AsyncClient(base_url=url.removesuffix("/mcp"), timeout=30) as http,
    ):
        answer = await http.get("/api/v1/servers")
        assert answer.status_code == 200
        assert [s["name"] for s in answer.json()["servers"]] == ["kitchen", "notes", "alpha.books", "beta.films"]
        assert (await http.get("/api/v1/discovery/stats")).status_code == 200
        assert (await http.get("/api/v1/tokens")).status_code == 404

        status, data = await get(http, "/api/v1/servers", "alpha-token")
        assert status == 200 and [s["name"] for s in data["servers"]] == ["kitchen", "alpha.books"]
        status, data = await get(http, "/api/v1/tools", "alpha-token")
        names = {(t["server"], t["name"]) for t in data["tools"]}
        assert names and not any(name.startswith("delete_") for _, name in names)  # its rule: !delete_*
        assert {server for server, _ in names} == {"kitchen", "alpha.books"}

        status, data = await get(http, "/api/v1/search", "beta-token", q="add a note", explain="true")
        assert status == 200 and data["results"] and {r["server"] for r in data["results"]} == {"beta.films"}
        text = json.dumps(data)
        assert not any(word in text for word in UNSEEN["beta-token"])

        status, data = await get(http, "/api/v1/discovery/stats", "alpha-token")
        assert status == 403 and data["error"]["code"] == "FORBIDDEN"
        status, data = await get(http, "/api/v1/audit", "alpha-token")
        assert (status, data["error"]["code"]) == (404, "AUDIT_OFF")


async def test_a_confirmation_id_from_the_api_runs_only_for_the_key_it_was_proposed_to(sandbox: Sandbox) -> None:
    request = 'update note with id "1" and title "Weekend groceries"'
    async with served(sandbox) as base, httpx2.AsyncClient(base_url=base, timeout=30) as http:
        status, held = await send(http, "POST", "/api/v1/mcp/call", NOTES, {"request": request})
        assert status == 200, held
        answer = held["structuredContent"]
        assert answer["status"] == "confirmation_required", answer
        planned = answer["planned_call"]
        confirm = {
            "request": request,
            "tool": planned["tool"],
            "arguments": planned["arguments"],
            "confirm": True,
            "confirmation_id": planned["confirmation_id"],
        }
        # Another key (the admin's, which sees the notes server too) cannot spend the id.
        status, stolen = await send(http, "POST", "/api/v1/mcp/call", ADMIN, confirm)
        assert status == 200
        assert stolen.get("isError") is True or stolen["structuredContent"].get("status") == "confirmation_required"
        status, note = await send(
            http, "POST", "/api/v1/mcp/call", NOTES, {"server": "notes", "tool": "get_note", "arguments": {"id": "1"}}
        )
        assert note["structuredContent"]["title"] != "Weekend groceries"
        # The key it was proposed to can.
        status, ran = await send(http, "POST", "/api/v1/mcp/call", NOTES, confirm)
        assert status == 200 and ran.get("isError") is not True, ran
        status, note = await send(
            http, "POST", "/api/v1/mcp/call", NOTES, {"server": "notes", "tool": "get_note", "arguments": {"id": "1"}}
        )
        assert note["structuredContent"]["title"] == "Weekend groceries"
