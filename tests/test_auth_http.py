"""Authentication at the HTTP edge of a real `toolscout serve --transport http` child with keys
configured: SDK clients of both protocol eras with and without credentials, the 401 shape, admin vs
client key vs issued token, the tokens API, the `toolscout token` command line (local and `--url`),
revocation and expiry on the next request, 429s, Host/Origin refusals before any credential check,
the refusal to serve beyond loopback without keys, and no credential in any log, audit line or
`config show`."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from benchmarks.processes import SERVE_READY, Running, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.registry.base import TokenRecord, new_secret, secret_hash
from toolscout.registry.sqlite import SqliteRegistry
from toolscout.serve.auth import FAILURES_PER_MINUTE, TOKEN_RECHECK_SECONDS

pytestmark = pytest.mark.anyio

ADMIN = "admin-0123456789abcdef-ADMIN"
CLIENT = "client-0123456789abcdef-CLIENT"
LIMITED = "limited-0123456789abcdef-LIMITED"
META_TOOLS = ["list_mcp_servers", "search_tools", "list_tools", "get_tool_details", "execute_tool"]
CONVERT = {"server": "units", "tool": "convert_units", "arguments": {"value": 1, "from_unit": "km", "to_unit": "m"}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


def write_config(sandbox: Sandbox) -> Path:
    config = {
        "mcpServers": {"units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]}},
        "catalogCache": {"path": str(sandbox.root / "catalog.sqlite3")},
        "registry": {"path": str(sandbox.root / "registry.sqlite3")},
        "audit": {"path": str(sandbox.root / "audit.jsonl")},
        "auth": {
            "adminKeys": ["${TOOLSCOUT_ADMIN_KEY}"],
            "keys": [
                {"key": "${CI_AGENT_KEY}", "label": "ci", "namespace": "default", "servers": ["units"]},
                {"key": "${LIMITED_KEY}", "label": "slow", "namespace": "default", "requestsPerMinute": 2},
            ],
        },
    }
    return sandbox.write("work/toolscout.json", json.dumps(config))


def environment(sandbox: Sandbox, **extra: str) -> dict[str, str]:
    return {**sandbox.env(), "TOOLSCOUT_ADMIN_KEY": ADMIN, "CI_AGENT_KEY": CLIENT, "LIMITED_KEY": LIMITED, **extra}


@asynccontextmanager
async def gateway(sandbox: Sandbox, *extra: str) -> AsyncGenerator[tuple[Running, str]]:
    config = write_config(sandbox)
    command = [PYTHON, "-m", "toolscout", "serve", "-c", str(config), "--transport", "http", "--port", "0"]
    async with running([*command, "--log-level", "debug", *extra], ready=SERVE_READY, env=environment(sandbox)) as gw:
        yield gw, gw.match.group(1)


async def cli(sandbox: Sandbox, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`toolscout ...` in the sandbox, with the keys' variables set (and `env`), off the event loop."""

    def call() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "-m", "toolscout", *args],
            cwd=sandbox.cwd,
            env=environment(sandbox, **env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return await anyio.to_thread.run_sync(call)


def bearer(credential: str) -> dict[str, str]:
    return {"authorization": f"Bearer {credential}"}


async def mcp_calls(url: str, era: str, headers: dict[str, str]) -> tuple[list[str], Any]:
    """The tool names an SDK client of `era` is shown, and what executing convert_units answers."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=era) as client,
    ):
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("execute_tool", CONVERT)
        assert not result.is_error, result.content
        content: Any = result.structured_content
        assert isinstance(content, dict)
        return names, cast(dict[str, Any], content)["result"]


async def refused(url: str, era: str, headers: dict[str, str]) -> str:
    """What an SDK client of `era` got instead of tools (it must get none)."""
    try:
        with anyio.fail_after(60):
            names, _ = await mcp_calls(url, era, headers)
    except Exception as exc:
        return repr(exc)
    raise AssertionError(f"served without a valid credential: {names}")


async def post(http: httpx2.AsyncClient, url: str, headers: dict[str, str], body: Any = INITIALIZE) -> httpx2.Response:
    return await http.post(url, json=body, headers={**ACCEPT, **headers})


async def test_credentials_decide_everything_a_request_gets(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    secrets = [ADMIN, CLIENT, LIMITED]
    async with gateway(sandbox) as (gw, url), httpx2.AsyncClient(timeout=30) as http:
        api = url.removesuffix("/mcp") + "/api/v1"
        assert any("every HTTP request needs a credential (1 admin key, 2 client keys" in line for line in gw.stderr)

        # No credential, a wrong one: 401 with the challenge and the SDK's shape, never a tool list.
        missing = await post(http, url, {})
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith('Bearer realm="toolscout", error_description=')
        assert missing.json()["error"] == "invalid_token" and "Authorization: Bearer" in missing.text
        wrong = await post(http, url, bearer("ts_" + "x" * 43))
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].startswith('Bearer realm="toolscout", error="invalid_token", ')
        for answer in (missing, wrong):
            assert "convert_units" not in answer.text and "execute_tool" not in answer.text
        listing = await http.get(f"{api}/tokens")
        assert listing.status_code == 401 and listing.json()["error"]["code"] == "UNAUTHORIZED"
        # The Host/Origin guard comes first: a foreign page is 403 before any credential is looked at.
        assert (await post(http, url, {"origin": "http://evil.example"})).status_code == 403
        assert (await post(http, url, {**bearer(ADMIN), "origin": "http://evil.example"})).status_code == 403
        assert (await post(http, url, {"host": "evil.example"})).status_code == 421

        # Both eras: nothing without a credential; the admin key and the client key are served.
        for era in ("legacy", "2026-07-28"):
            for headers in ({}, bearer(CLIENT + "x")):
                told = await refused(url, era, headers)
                assert "401" in told or "Server returned an error response" in told, told
            assert await mcp_calls(url, era, bearer(ADMIN)) == (META_TOOLS, 1000)
            assert await mcp_calls(url, era, bearer(CLIENT)) == (META_TOOLS, 1000)

        # The tokens API is the admin's: client keys get 403.
        assert (await http.get(f"{api}/tokens", headers=bearer(CLIENT))).status_code == 403
        issued = await http.post(
            f"{api}/tokens",
            json={"namespace": "run-1", "servers": ["units"], "ttlSeconds": 600, "label": "run one"},
            headers=bearer(ADMIN),
        )
        assert issued.status_code == 201, issued.text
        token = issued.json()
        assert set(token) == {"id", "token", "expiresAt"} and token["token"].startswith("ts_")
        assert token["expiresAt"] > time.time()
        secrets.append(token["token"])
        bad = await http.post(f"{api}/tokens", json={"namespace": "run-1", "ttlSeconds": 0}, headers=bearer(ADMIN))
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_REQUEST"
        for era in ("legacy", "2026-07-28"):
            assert await mcp_calls(url, era, bearer(token["token"])) == (META_TOOLS, 1000)
        assert (await http.get(f"{api}/tokens", headers=bearer(token["token"]))).status_code == 403
        listed = (await http.get(f"{api}/tokens", headers=bearer(ADMIN))).json()["tokens"]
        assert [(t["id"], t["label"], t["namespace"], t["servers"]) for t in listed] == [
            (token["id"], "run one", "run-1", ["units"])
        ]
        assert token["token"] not in json.dumps(listed) and secret_hash(token["token"]) not in json.dumps(listed)

        # A session is its opener's: another credential presenting its ID is told it does not exist.
        opened = await post(http, url, bearer(CLIENT))
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await post(http, url, {**bearer(token["token"]), **session}, ping)).status_code == 404
        assert (await post(http, url, {**bearer(CLIENT), **session}, ping)).status_code == 200

        # Revoked through the API: refused from the next request; revoking again is 404.
        assert (await http.delete(f"{api}/tokens/{token['id']}", headers=bearer(ADMIN))).status_code == 204
        assert (await post(http, url, bearer(token["token"]))).status_code == 401
        assert (await http.delete(f"{api}/tokens/{token['id']}", headers=bearer(ADMIN))).status_code == 404
        # An expired token (written by another process sharing the registry file) is refused.
        registry = SqliteRegistry(sandbox.root / "registry.sqlite3")
        expired = new_secret(await registry.token_key())
        secrets.append(expired)
        record = TokenRecord(
            "tok_old", "run-1", ("units",), expires_at=time.time() - 1, secret_hash=secret_hash(expired)
        )
        await registry.add_token(record)
        assert (await post(http, url, bearer(expired))).status_code == 401

        # Over its rate: 429 with Retry-After, on /mcp and the API.
        statuses = [(await post(http, url, bearer(LIMITED))).status_code for _ in range(2)]
        assert 429 not in statuses
        limited = await post(http, url, bearer(LIMITED))
        assert limited.status_code == 429 and 1 <= int(limited.headers["retry-after"]) <= 30
        assert "requestsPerMinute" in limited.json()["error"]["message"]
        over = await http.get(f"{api}/tokens", headers=bearer(LIMITED))
        assert over.status_code == 429 and over.json()["error"]["code"] == "RATE_LIMITED"
        assert (await post(http, url, bearer(CLIENT))).status_code == 200  # others are not held up

        # The command line against the running gateway (--url, the admin key from the environment).
        made = await cli(sandbox, "token", "create", "--url", url, "-n", "run-2", "-s", "units", "-l", "cli", "--json")
        assert made.returncode == 0, made.stderr
        remote = json.loads(made.stdout)
        secrets.append(remote["token"])
        assert (await post(http, url, bearer(remote["token"]))).status_code == 200
        shown = await cli(sandbox, "token", "list", "--url", url, "--json")
        assert [t["label"] for t in json.loads(shown.stdout)["tokens"]] == [None, "cli"]  # tok_old: not yet swept
        assert remote["token"] not in shown.stdout
        revoked = await cli(sandbox, "token", "revoke", "--url", url, remote["id"])
        assert revoked.returncode == 0, revoked.stderr
        assert (await post(http, url, bearer(remote["token"]))).status_code == 401
        unknown = await cli(sandbox, "token", "revoke", "--url", url, remote["id"])
        assert unknown.returncode == 2 and "no token" in unknown.stderr
        as_client = await cli(sandbox, "token", "list", "--url", url, TOOLSCOUT_ADMIN_KEY=CLIENT)
        assert as_client.returncode == 2 and "needs an admin key" in as_client.stderr
        without = await cli(sandbox, "token", "list", "--url", url, TOOLSCOUT_ADMIN_KEY="")
        assert without.returncode == 2 and "Set TOOLSCOUT_ADMIN_KEY" in without.stderr
        for done in (made, shown, revoked, unknown, as_client, without):
            assert "Traceback" not in done.stderr and ADMIN not in done.stdout + done.stderr

        # ... and on the registry file it serves from (no --url): a token issued so works at once, and
        # one revoked so is refused once the resolver re-reads it (TOKEN_RECHECK_SECONDS).
        config = str(sandbox.cwd / "toolscout.json")
        made = await cli(sandbox, "token", "create", "-c", config, "-n", "run-3", "-s", "units", "-l", "local")
        assert made.returncode == 0, made.stderr
        local = made.stdout.strip()
        secrets.append(local)
        assert local.startswith("ts_") and "shown only now" in made.stderr
        assert (await post(http, url, bearer(local))).status_code == 200
        shown = await cli(sandbox, "token", "list", "-c", config)
        assert "local  namespace run-3  servers units" in shown.stdout and local not in shown.stdout
        local_id = re.search(r"Token (tok_\w+)", made.stderr)
        assert local_id is not None
        assert (await cli(sandbox, "token", "revoke", "-c", config, local_id.group(1))).returncode == 0
        # The cached record is older than the recheck time by then, whatever the machine's speed.
        await anyio.sleep(TOKEN_RECHECK_SECONDS)
        assert (await post(http, url, bearer(local))).status_code == 401

    # No credential anywhere: the gateway's log (at debug), the audit log, `config show`.
    audit = (sandbox.root / "audit.jsonl").read_text()
    lines = [json.loads(line) for line in audit.splitlines()]
    # Both eras: the admin key (no label: it is no scope's), the client key, the issued token.
    called = sorted(f"{line.get('label')}/{line.get('namespace')}" for line in lines if line["tool"] == "convert_units")
    assert called == ["None/None", "None/None", "ci/default", "ci/default", "run one/run-1", "run one/run-1"], audit
    shows = [
        await cli(sandbox, "config", "show", "-c", config),
        await cli(sandbox, "config", "show", "-c", config, "--json"),
    ]
    assert "${TOOLSCOUT_ADMIN_KEY}" in shows[1].stdout and "${CI_AGENT_KEY}" in shows[1].stdout
    texts = {
        "log": "\n".join(gw.stderr),
        "audit": audit,
        **{f"show{i}": s.stdout + s.stderr for i, s in enumerate(shows)},
    }
    for where, text in texts.items():
        for secret in secrets:
            assert secret not in text, f"a credential in the {where}"


async def test_serving_beyond_loopback_needs_keys_or_an_explicit_flag(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    command = [PYTHON, "-m", "toolscout", "serve", "--demo", "--transport", "http", "--host", "0.0.0.0", "--port", "0"]

    def start() -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, env=sandbox.env(), capture_output=True, text=True, timeout=120)

    refused = await anyio.to_thread.run_sync(start)
    assert refused.returncode == 2
    assert "anyone who reaches the port could run every tool" in refused.stderr
    assert "auth.adminKeys" in refused.stderr and "--insecure-no-auth" in refused.stderr
    assert "Traceback" not in refused.stderr and "serving streamable HTTP" not in refused.stderr

    async with running([*command, "--insecure-no-auth"], ready=SERVE_READY, env=sandbox.env()) as gw:
        assert any("WARNING: serving beyond this machine without authentication" in line for line in gw.stderr)

    # With keys configured it serves on every interface, and asks every request for a credential.
    config = write_config(sandbox)
    keyed = [PYTHON, "-m", "toolscout", "serve", "-c", str(config), "--transport", "http", "--host", "0.0.0.0"]
    async with (
        running([*keyed, "--port", "0"], ready=SERVE_READY, env=environment(sandbox)) as gw,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        port = gw.match.group(1).rsplit(":", 1)[1].split("/")[0]
        url = f"http://127.0.0.1:{port}/mcp"
        assert (await post(http, url, {})).status_code == 401
        assert (await post(http, url, bearer(CLIENT))).status_code == 200


async def test_an_unusable_registry_file_is_a_clear_error(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    config = sandbox.write("work/toolscout.json", json.dumps({"registry": {"path": "/proc/no-such-dir/r.sqlite3"}}))
    served = await cli(sandbox, "serve", "-c", str(config), "--transport", "http", "--port", "0")
    assert served.returncode == 2 and "cannot open the registry of issued tokens" in served.stderr
    listed = await cli(sandbox, "token", "list", "-c", str(config))
    assert listed.returncode == 3 and "cannot use the token registry" in listed.stderr
    for done in (served, listed):
        assert "Traceback" not in done.stderr


async def test_a_flood_of_wrong_credentials_from_one_address_is_answered_a_second_later(tmp_path: Path) -> None:
    """Past `FAILURES_PER_MINUTE` refusals from one address, each further 401 comes a second later and
    says so (`Retry-After`): a forged-token flood gets one refusal a second per connection. A valid
    credential from the same address is not slowed."""
    sandbox = make_sandbox(tmp_path)
    async with gateway(sandbox) as (_, url), httpx2.AsyncClient(timeout=30) as http:
        body = json.dumps(INITIALIZE)

        async def wrong(n: int) -> httpx2.Response:
            return await http.post(url, content=body, headers={**ACCEPT, **bearer(f"ts_{n:043d}")})

        answers: list[httpx2.Response] = []

        async def one(n: int) -> None:
            answers.append(await wrong(n))

        # Twice the budget at once: however slowly they arrive, a minute's refill cannot cover them.
        async with anyio.create_task_group() as tg:
            for n in range(2 * FAILURES_PER_MINUTE):
                tg.start_soon(one, n)
        assert [r.status_code for r in answers] == [401] * (2 * FAILURES_PER_MINUTE)
        slowed = [r for r in answers if r.headers.get("retry-after") == "1"]
        assert slowed  # the flood past the budget is answered a second later, saying so
        assert len(slowed) <= FAILURES_PER_MINUTE  # the budget itself is answered at once
        valid = await http.post(url, content=body, headers={**ACCEPT, **bearer(ADMIN)})
        assert valid.status_code == 200
        assert "retry-after" not in valid.headers
