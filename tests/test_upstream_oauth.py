"""Remote upstreams behind OAuth: `toolscout auth login` signs in, everything else uses and refreshes the
kept sign-in, and a sign-in that ends makes the server "needs login" while the others carry on.

The upstream is a real OAuth-protected MCP server built on the SDK's own authorization-server routes
(tests/helpers/oauth_site.py): dynamic client registration, PKCE, the `resource` indicator, short
access tokens, rotating refresh tokens, revocation, and an authorization endpoint that approves at
once. The test plays the user's browser: it fetches the URL `auth login --no-browser` prints and
follows its redirect to the loopback callback. Every command is the real `toolscout` process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import pytest
from benchmarks.processes import served_gateway
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.auth import OAuthClientProvider
from mcp.client.stdio import stdio_client

from tests.helpers.config_files import units
from tests.helpers.oauth_site import SUBJECT, OAuthSite, oauth_site
from tests.helpers.paths import PYTHON
from toolscout.upstream.oauth import SignInFile, request_name

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

BOUND = 60
"""The longest any one step may take (a bound, not an expectation)."""


AS_AT_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)
"""Run the command after it (`-c` this, then the program and its arguments) with Ctrl-C as at a terminal: a
test run in the background has SIGINT ignored, and children inherit that."""


class Home:
    """A config fronting `notes` (the OAuth site) and the units demo, with its own state and cache."""

    def __init__(self, root: Path, site: OAuthSite, oauth: dict[str, Any] | None = None, **extra: Any) -> None:
        self.root = root
        self.site = site
        self.config = root / "toolscout.json"
        notes: dict[str, Any] = {"url": site.url, **({"oauth": oauth} if oauth else {})}
        audit = {"path": str(root / "audit.jsonl")}
        body = {"mcpServers": {"notes": notes, "units": units()}, "audit": audit, **extra}
        self.config.write_text(json.dumps(body), encoding="utf-8")
        self.env = {
            **os.environ,
            "HOME": str(root / "home"),
            "TOOLSCOUT_STATE_DIR": str(root / "state"),
            "TOOLSCOUT_CACHE_DIR": str(root / "cache"),
        }
        self.env.pop("DISPLAY", None)
        self.env.pop("WAYLAND_DISPLAY", None)

    @property
    def sign_in(self) -> SignInFile:
        return SignInFile.of("notes", self.site.url, self.root / "state" / "sign-ins")

    async def run(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[bytes]:
        """`toolscout ARGS --config CONFIG`, to its end."""
        with anyio.fail_after(BOUND):
            done = await anyio.run_process(
                [PYTHON, "-m", "toolscout", *args, "--config", str(self.config)], env=self.env, check=False
            )
        if expect is not None:
            assert done.returncode == expect, (done.stdout.decode(), done.stderr.decode())
        return done

    async def login(self, *args: str, expect: int = 0, server: str = "notes") -> str:
        """`auth login SERVER --no-browser`, with the test as the browser: what the command printed."""
        command = [PYTHON, "-m", "toolscout", "auth", "login", server, "--no-browser", "--config", str(self.config)]
        with anyio.fail_after(BOUND):
            async with await anyio.open_process([*command, *args], env=self.env) as process:
                assert process.stdout is not None and process.stderr is not None
                printed = b""
                async for chunk in process.stdout:
                    printed += chunk
                    found = re.search(rb"^\s+(http\S+/authorize\?\S+)\s*$", printed, re.MULTILINE)
                    if found:
                        await browse(found.group(1).decode())
                        break
                printed += b"".join([chunk async for chunk in process.stdout])
                errors = b"".join([chunk async for chunk in process.stderr])
                await process.wait()
        out = printed.decode() + errors.decode()
        assert process.returncode == expect, out
        return out

    async def interrupted_login(
        self, after_approval: Callable[[], Awaitable[object]] | None = None
    ) -> tuple[int | None, bytes]:
        """`auth login notes --json`, stopped by Ctrl-C once it shows the URL (or, given `after_approval`,
        once the URL is approved and that returns): its exit code and what it printed on stdout."""
        login = ["-m", "toolscout", "auth", "login", "notes", "--no-browser", "--json", "--config", str(self.config)]
        command = [PYTHON, "-c", AS_AT_A_TERMINAL, PYTHON, *login]
        found: re.Match[bytes] | None = None
        with anyio.fail_after(BOUND):
            async with await anyio.open_process(command, env=self.env) as child:
                assert child.stdout is not None and child.stderr is not None
                shown = b""
                async for chunk in child.stderr:
                    shown += chunk
                    found = re.search(rb"(http\S+/authorize\?\S+)", shown)
                    if found:
                        break
                if after_approval is not None and found is not None:
                    await browse(found.group(1).decode())
                    await after_approval()
                child.send_signal(signal.SIGINT)
                printed = b"".join([chunk async for chunk in child.stdout])
                await child.wait()
        return child.returncode, printed

    def logs(self) -> str:
        """Everything kept on disk that is not the sign-in itself: the audit log, caches, other state."""
        text = ""
        for path in self.root.rglob("*"):
            if path.is_file() and path.parent.name != "sign-ins":
                text += path.read_text(encoding="utf-8", errors="replace")
        return text


async def browse(url: str) -> None:
    """Do what the user's browser does with the authorization URL: open it, approve, follow the redirect home."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=BOUND) as browser:
        page = await browser.get(url)
    assert page.status_code == 200, page.text
    assert "you can close this tab" in page.text


def tokens_of(site: OAuthSite) -> list[str]:
    """Every access and refresh token the site issued, and the registered clients' secrets."""
    secrets = [c.client_secret for c in site.provider.clients.values() if c.client_secret]
    assert site.provider.issued
    return [*site.provider.issued, *secrets]


@asynccontextmanager
async def stdio_serve(home: Home) -> AsyncGenerator[tuple[Client, Path]]:
    """`toolscout serve` over stdio as a child, and the file its stderr goes to."""
    errlog = home.root / "serve-stdio.log"
    params = StdioServerParameters(command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(home.config)])
    params.env = home.env
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err), mode="legacy") as client:
            yield client, errlog


async def servers_by_name(client: Client) -> dict[str, dict[str, Any]]:
    result = await client.call_tool("list_mcp_servers", {})
    assert not result.is_error, result.content
    content: Any = result.structured_content
    return {entry["name"]: entry for entry in content["servers"]}


async def until_status(client: Client, server: str, wanted: str) -> dict[str, Any]:
    """`list_mcp_servers`' entry of `server` once its status is `wanted` (asked again until the bound)."""
    with anyio.fail_after(BOUND):
        while True:
            entry = (await servers_by_name(client))[server]
            if entry["status"] == wanted:
                return entry
            await anyio.sleep(0.1)


KM = {"value": 1, "from_unit": "km", "to_unit": "m"}


async def execute(client: Client, server: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """`execute_tool` of the discovery meta-tools."""
    return await client.call_tool("execute_tool", {"server": server, "tool": tool, "arguments": arguments})


def text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_login_prints_the_url_and_keeps_the_sign_in_for_the_user_only(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        printed = await home.login()
        assert "Open this URL in a browser to sign in to notes" in printed
        assert f"Signed in to notes as {SUBJECT} until " in printed
        assert "scopes: read; refreshed by itself" in printed
        assert "notes offers 2 tools" in printed
        # Registered dynamically, with PKCE and the resource indicator, once.
        assert len(site.provider.clients) == 1
        assert site.provider.authorized == 1
        kept = home.sign_in.path
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        # No temporary file left behind; beside the sign-in only the lock refreshes take, empty.
        assert sorted(p.name for p in kept.parent.iterdir()) == sorted([kept.name, f".{kept.name}.lock"])
        record = json.loads(kept.read_text())
        assert record["tokens"]["access_token"] in site.provider.access
        assert record["subject"] == SUBJECT
        codes = list(site.provider.access.values())
        assert codes[0].resource == site.url  # the RFC 8707 resource the token is bound to

        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        notes = next(s for s in status if s["server"] == "notes")
        assert notes | {"expiresAt": None} == {
            "server": "notes",
            "state": "signed-in",
            "subject": SUBJECT,
            "expiresAt": None,
            "scopes": ["read"],
            "refreshable": True,
            "detail": None,
        }
        assert notes["expiresAt"].endswith("+00:00")
        # Only remote servers sign in: units (stdio) is not listed.
        assert [s["server"] for s in status] == ["notes"]
        assert not (tmp_path / "cache" / "registry.sqlite3").exists()  # nothing registered: no registry made
        table = (await home.run("auth", "status")).stdout.decode()
        assert re.search(
            rf"notes\s+✓ signed in\s+{re.escape(SUBJECT)}\s+\d{{4}}-\d\d-\d\d \d\d:\d\d UTC\s+read\s+yes", table
        )

        # Signing in again reuses the registration (its redirect URI is kept) and asks the user again;
        # the tokens it replaces are revoked, not left valid at the provider for months.
        again = " ".join((await home.login()).split())
        assert len(site.provider.clients) == 1
        assert site.provider.authorized == 2
        assert (
            "Revoking the tokens of the sign-in it replaces... They were revoked at its authorization server." in again
        )
        old = record["tokens"]
        assert site.provider.revoked == [old["refresh_token"]]  # the access token issued with it went along
        assert old["access_token"] not in site.provider.access and old["refresh_token"] not in site.provider.refresh
        new = json.loads(kept.read_text())["tokens"]
        assert new["access_token"] in site.provider.access and new["refresh_token"] in site.provider.refresh
        await home.run("execute", "notes/whoami")


async def test_a_sign_in_file_others_can_read_is_named_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        kept = home.sign_in.path
        kept.chmod(0o644)  # loosened by hand, or copied from a backup with another mode
        fix = f"chmod 600 {kept}"
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert status[0]["state"] == "signed-in"  # still works: a warning, not a refusal
        assert "can be read by others than you (mode 0644)" in status[0]["detail"] and fix in status[0]["detail"]
        doctor = json.loads((await home.run("doctor", "--json")).stdout)
        notes = next(d for d in doctor["servers"] if d["server"] == "notes")
        assert notes["ok"] and len(notes["warnings"]) == 1 and fix in notes["warnings"][0]
        assert not next(d for d in doctor["servers"] if d["server"] == "units")["warnings"]
        printed = " ".join((await home.run("doctor")).stdout.decode().split())
        assert f"! its sign-in file {kept} can be read by others" in printed
        served = await home.run("execute", "notes/whoami", "--json")
        assert json.loads(served.stdout)["result"]["isError"] is False
        async with stdio_serve(home) as (client, errlog):
            await until_status(client, "notes", "connected")
        assert f"the sign-in kept for notes: {kept} can be read by others than you" in errlog.read_text()
        kept.chmod(0o620)  # others may write it, not read it: said as it is
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert "can be changed by others than you (mode 0620)" in status[0]["detail"]

        kept.chmod(0o600)
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert status[0]["detail"] is None
        doctor = json.loads((await home.run("doctor", "--json")).stdout)
        assert not next(d for d in doctor["servers"] if d["server"] == "notes")["warnings"]


async def test_execute_and_list_use_the_sign_in_and_refresh_it_without_asking(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        needs = await home.run("execute", "notes/add", "--args", '{"a": 2, "b": 3}', "--json", expect=3)
        error = json.loads(needs.stdout)["error"]
        assert error["code"] == "SIGN_IN_REQUIRED"
        assert "needs login" in error["message"]
        assert "toolscout auth login notes" in error["message"]

        await home.login()
        done = await home.run("execute", "notes/add", "--args", '{"a": 2, "b": 3}', "--json")
        assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 5}

        # The server ends the access token early: the 401 is answered with a refresh, then the call.
        site.provider.expire_access_tokens()
        done = await home.run("execute", "notes/whoami", "--json")
        assert SUBJECT in done.stdout.decode()
        assert site.provider.refreshed == 1
        assert site.provider.authorized == 1  # nobody was asked

        # An access token about to expire is refreshed before it is sent.
        record = json.loads(home.sign_in.path.read_text())
        record["expires_at"] = 0
        home.sign_in.path.write_text(json.dumps(record))
        await home.run("list", "--refresh")
        assert site.provider.refreshed == 2
        assert site.provider.authorized == 1

        listed = await home.run("list", "--refresh", "--json")
        rows = {row["name"]: row for row in json.loads(listed.stdout)["servers"]}
        assert rows["notes"]["status"] == "connected"
        assert rows["notes"]["enabledCount"] == 2
        assert rows["units"]["status"] == "connected"


async def test_a_revoked_sign_in_makes_the_server_need_login_and_the_others_carry_on(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        site.provider.revoke_all()  # the user removed the app's access on the provider's site

        listed = await home.run("list", "--refresh", expect=3)
        out = listed.stdout.decode()
        assert "! notes" in out
        assert "Needs login" in out
        assert "toolscout auth login notes" in out
        assert "✓ units" in out

        status = json.loads((await home.run("auth", "status", "--json", expect=3)).stdout)
        assert status[0]["state"] == "needs-login"
        assert "refused to refresh" in status[0]["detail"]
        assert status[0]["nextStep"] == "toolscout auth login notes"

        doctor = json.loads((await home.run("doctor", "--json", expect=3)).stdout)
        notes = next(d for d in doctor["servers"] if d["server"] == "notes")
        assert notes["failedStep"] == "started"
        assert "toolscout auth login notes" in notes["reason"]

        units_call = await home.run(
            "execute", "units/convert_units", "--args", '{"value": 1, "from_unit": "km", "to_unit": "m"}'
        )
        assert b"1000" in units_call.stdout

        await home.login()
        done = await home.run("execute", "notes/add", "--args", '{"a": 1, "b": 1}', "--json")
        assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 2}


async def test_serve_over_stdio_calls_refreshes_needs_login_and_picks_up_a_new_sign_in(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        async with stdio_serve(home) as (client, errlog):
            entry = await until_status(client, "notes", "needs-login")
            assert "toolscout auth login notes" in entry["error"]
            assert (await servers_by_name(client))["units"]["status"] == "connected"

            # Signing in elsewhere is picked up by the running gateway: no restart.
            await home.login()
            await until_status(client, "notes", "connected")
            result = await execute(client, "notes", "add", {"a": 4, "b": 5})
            assert not result.is_error, result.content
            assert "9" in text(result)

            site.provider.expire_access_tokens()
            result = await execute(client, "notes", "whoami", {})
            assert not result.is_error, result.content
            assert site.provider.refreshed == 1

            site.provider.revoke_all()
            result = await execute(client, "notes", "whoami", {})
            assert result.is_error
            assert "needs login" in text(result) and "toolscout auth login notes" in text(result)
            entry = await until_status(client, "notes", "needs-login")
            assert "refused to refresh" in entry["error"]
            units_result = await execute(client, "units", "convert_units", KM)
            assert not units_result.is_error, units_result.content
            issued = tokens_of(site)
        logged = errlog.read_text()
    assert "needs login" in logged
    everything = logged + home.logs()
    assert len(issued) >= 5  # two sign-ins' and a refresh's tokens, and the client's secret
    for token in issued:
        assert token not in everything


async def test_a_running_serve_stops_using_a_sign_in_logged_out_elsewhere(tmp_path: Path) -> None:
    # Without a revocation endpoint the server still honours the tokens: only the gateway can stop.
    async with oauth_site(revocation=False) as site:
        home = Home(tmp_path, site)
        await home.login()
        async with stdio_serve(home) as (client, _):
            await until_status(client, "notes", "connected")
            assert not (await execute(client, "notes", "whoami", {})).is_error
            out = (await home.run("auth", "logout", "notes")).stdout.decode()
            assert "offers no revocation" in " ".join(out.split())
            with anyio.fail_after(BOUND):
                # The file is looked at once a second at most: call until the gateway has seen it gone.
                result = await execute(client, "notes", "whoami", {})
                while not result.is_error:
                    await anyio.sleep(0.2)
                    result = await execute(client, "notes", "whoami", {})
            assert "needs login" in text(result) and "toolscout auth login notes" in text(result)
            site.provider.expire_access_tokens()
            assert (await execute(client, "notes", "whoami", {})).is_error
        assert not home.sign_in.path.exists()  # nothing wrote the forgotten tokens back


async def test_a_damaged_sign_in_is_named_and_needs_a_new_login(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        record = json.loads(home.sign_in.path.read_text())
        record["tokens"] = {"token_type": "mac"}  # not a bearer token the SDK can send
        home.sign_in.path.write_text(json.dumps(record))
        status = json.loads((await home.run("auth", "status", "--json", expect=3)).stdout)
        assert status[0]["state"] == "needs-login"
        assert f"{home.sign_in.path} is damaged" in status[0]["detail"]
        failed = await home.run("execute", "notes/whoami", "--json", expect=3)
        error = json.loads(failed.stdout)["error"]
        assert error["code"] == "SIGN_IN_REQUIRED"
        assert "its kept sign-in cannot be used" in error["message"] and "is damaged" in error["message"]
        assert "pydantic" not in failed.stdout.decode() + failed.stderr.decode()
        home.sign_in.path.write_text('{"server": "notes", "url": ')  # cut short
        status = json.loads((await home.run("auth", "status", "--json", expect=3)).stdout)
        assert "is damaged" in status[0]["detail"]
        await home.login()
        await home.run("execute", "notes/whoami")


async def test_serve_over_http_and_its_dashboard_use_the_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        for name in ("HOME", "TOOLSCOUT_STATE_DIR", "TOOLSCOUT_CACHE_DIR"):
            monkeypatch.setenv(name, home.env[name])
        async with served_gateway(home.config) as served, Client(served.mcp_url, mode="auto") as client:
            await until_status(client, "notes", "needs-login")
            async with httpx2.AsyncClient(timeout=BOUND) as http:
                page = (await http.get(f"{served.base_url}/dashboard/servers")).text
                api = (await http.get(f"{served.api_url}/servers")).json()
            row = page[page.index('data-server="notes"') :]
            assert 'data-status="needs-login"' in row[:200]
            assert "toolscout auth login notes" in row
            assert "Connect now" in row[: row.index("</tr>")]
            notes = next(s for s in api["servers"] if s["name"] == "notes")
            assert notes["status"] == "needs-login"

            await home.login()
            await until_status(client, "notes", "connected")
            result = await execute(client, "notes", "add", {"a": 20, "b": 22})
            assert not result.is_error, result.content
            assert "42" in text(result)
            async with httpx2.AsyncClient(timeout=BOUND) as http:
                page = (await http.get(f"{served.base_url}/dashboard/servers")).text
            row = page[page.index('data-server="notes"') :]
            assert 'data-status="connected"' in row[:200]
            log = "\n".join(served.process.stderr)
        issued = tokens_of(site)
        shown = (await home.run("config", "show", "--status")).stdout.decode()
    for token in issued:
        assert token not in log
        assert token not in shown
        assert token not in home.logs()


async def test_logout_revokes_at_the_server_and_forgets(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        record = json.loads(home.sign_in.path.read_text())
        out = (await home.run("auth", "logout", "notes")).stdout.decode()
        assert "Signed out of notes: its tokens were revoked at its authorization server and forgotten here" in out
        assert record["tokens"]["refresh_token"] in site.provider.revoked
        assert not site.provider.access and not site.provider.refresh
        assert not home.sign_in.path.exists()
        again = (await home.run("auth", "logout", "notes")).stdout.decode()
        assert "No sign-in was kept for notes" in again


async def test_a_server_registered_at_run_time_signs_in_by_the_name_it_is_shown_under(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site, registry={"path": str(tmp_path / "registry.sqlite3")})
        await home.run("registry", "add", "linear", site.url, "--namespace", "team")
        status = json.loads((await home.run("auth", "status", "--json", expect=3)).stdout)
        assert {s["server"]: s["state"] for s in status} == {"notes": "needs-login", "team.linear": "needs-login"}

        printed = await home.login(server="team.linear")
        assert f"Signed in to team.linear as {SUBJECT}" in printed
        kept = SignInFile.of("team.linear", site.url, tmp_path / "state" / "sign-ins")
        assert kept.path.exists()
        status = json.loads((await home.run("auth", "status", "team.linear", "--json")).stdout)
        assert status[0]["state"] == "signed-in"
        async with stdio_serve(home) as (client, _):
            # The serve reads the registration from the same registry, and its sign-in as a configured server's.
            await until_status(client, "team.linear", "connected")
            result = await execute(client, "team.linear", "whoami", {})
            assert not result.is_error and SUBJECT in text(result), result.content
        out = " ".join((await home.run("auth", "logout", "team.linear")).stdout.decode().split())
        assert "Signed out of team.linear: its tokens were revoked" in out
        assert not kept.path.exists()

        unknown = await home.run("auth", "login", "team.linea", "--no-browser", expect=2)
        assert "Did you mean 'team.linear'?" in unknown.stderr.decode()


async def test_a_registry_that_cannot_be_read_leaves_its_servers_out_and_says_so(tmp_path: Path) -> None:
    async with oauth_site() as site:
        redis = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
        home = Home(tmp_path, site, registry={"backend": "redis", "url": redis})
        listed = await home.run("auth", "status", "--offline", "--json")
        assert [s["server"] for s in json.loads(listed.stdout)] == ["notes"]
        assert "Servers registered at run time are left out" in listed.stderr.decode()
        unknown = await home.run("auth", "login", "team.linear", "--no-browser", expect=2)
        said = " ".join(unknown.stderr.decode().split())
        assert "No server by that name is configured, and the registry of servers registered at run time" in said
        assert "cannot be read" in said


async def test_logout_of_an_ended_sign_in_says_so_and_revokes_its_last_tokens_all_the_same(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        kept = json.loads(home.sign_in.path.read_text())["tokens"]
        # The token endpoint refuses the client (a rotated secret, say): the sign-in ends, but the
        # provider still honours its refresh token, which only a revocation ends.
        expire_locally(home)
        site.token_failure = 401
        await home.run("execute", "notes/whoami", "--json", expect=3)
        assert "refused to refresh the sign-in (HTTP 401)" in json.loads(home.sign_in.path.read_text())["ended"]
        assert kept["refresh_token"] in site.provider.refresh
        out = " ".join((await home.run("auth", "logout", "notes")).stdout.decode().split())
        assert "Signed out of notes: its sign-in had already ended because its authorization server refused" in out
        assert "its last tokens were revoked as well, in case the server still took them, and forgotten here" in out
        assert site.provider.revoked == [kept["refresh_token"]]
        assert kept["refresh_token"] not in site.provider.refresh
        assert not home.sign_in.path.exists()


async def test_logout_also_forgets_the_sign_ins_of_the_servers_earlier_urls(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        kept = home.sign_in.path.read_text()
        directory = home.sign_in.path.parent
        moved = SignInFile.of("notes", "https://old.example.com/mcp", directory)
        earlier = json.loads(kept.replace(site.url, "https://old.example.com/mcp"))
        earlier["tokens"] = {"token_type": "mac"}  # damaged for the SDK: still this server's, still forgotten
        moved.path.write_text(json.dumps(earlier))
        other = SignInFile.of("notes-x", site.url, directory)  # a name whose file starts the same way
        other.path.write_text(kept.replace('"server": "notes"', '"server": "notes-x"'))
        out = (await home.run("auth", "logout", "notes")).stdout.decode()
        assert "Forgot 1 sign-in kept for an earlier URL of notes" in " ".join(out.split())
        assert not home.sign_in.path.exists() and not moved.path.exists()
        assert other.path.exists()


async def test_ctrl_c_during_login_with_json_still_answers_json(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        returncode, printed = await home.interrupted_login()  # while it waits for the browser
        assert returncode == 130
        error = json.loads(printed)["error"]
        assert error["code"] == "INTERRUPTED" and "Ctrl-C" in error["message"], printed
        assert not home.sign_in.path.exists()


async def test_ctrl_c_while_the_replaced_tokens_are_revoked_keeps_the_new_sign_in_and_says_so(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        old = json.loads(home.sign_in.path.read_text())["tokens"]
        site.revocation_hangs = True
        # Approved; then the new sign-in is kept, and the old one's revocation waits.
        returncode, printed = await home.interrupted_login(after_approval=site.revocation_held.wait)
        assert returncode == 130
        answer = json.loads(printed)  # one document: the sign-in, not an INTERRUPTED error after it
        assert answer["success"] is True and answer["replacedTokens"] == "interrupted", answer
        new = json.loads(home.sign_in.path.read_text())["tokens"]
        assert new["refresh_token"] != old["refresh_token"] and new["access_token"] in site.provider.access


@pytest.mark.parametrize("metadata", ["missing", "malformed"])
async def test_login_names_the_metadata_that_is_missing_or_malformed(tmp_path: Path, metadata: str) -> None:
    async with oauth_site(metadata=metadata) as site:  # type: ignore[arg-type]
        home = Home(tmp_path, site)
        done = await home.run("auth", "login", "notes", "--no-browser", expect=3)
        said = done.stdout.decode() + done.stderr.decode()
        assert "publishes no usable OAuth metadata" in said
        problem = "HTTP 404" if metadata == "missing" else "not valid metadata"
        assert f"protected-resource metadata (RFC 9728) at {site.base}/.well-known/oauth-protected-resource" in said
        assert (
            f"authorization-server metadata (RFC 8414) at {site.base}/.well-known/oauth-authorization-server: {problem}"
            in said
        )
        assert "Traceback" not in said
        assert not site.provider.clients  # nothing was registered
        assert not home.sign_in.path.exists()


@pytest.mark.parametrize("metadata", ["endless", "compressed"])
async def test_login_stops_reading_an_answer_no_real_server_gives(tmp_path: Path, metadata: str) -> None:
    from toolscout.upstream.oauth_client import MAX_ENCODED_ANSWER_BYTES, MAX_OAUTH_ANSWER_BYTES

    async with oauth_site(metadata=metadata) as site:  # type: ignore[arg-type]
        home = Home(tmp_path, site)
        done = await home.run("auth", "login", "notes", "--no-browser", expect=3)
        said = done.stdout.decode() + done.stderr.decode()
        limit = MAX_OAUTH_ANSWER_BYTES if metadata == "endless" else MAX_ENCODED_ANSWER_BYTES
        compressed = " compressed" if metadata == "compressed" else ""
        assert f"notes's OAuth answer from {site.base}/.well-known/" in said
        assert f"is more than {limit} bytes{compressed}" in said
        assert "nothing was kept" in said
        assert "Traceback" not in said
        assert not site.provider.clients
        assert not home.sign_in.path.exists()


async def test_a_configured_client_is_used_instead_of_registering(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthClientInformationFull

    async with oauth_site() as site:
        secret = "s3cr3t-" + "x" * 24
        home = Home(
            tmp_path,
            site,
            oauth={"clientId": "toolscout-app", "clientSecret": secret, "callbackPort": free_port(), "scopes": "read"},
        )
        port = json.loads(home.config.read_text())["mcpServers"]["notes"]["oauth"]["callbackPort"]
        site.provider.clients["toolscout-app"] = OAuthClientInformationFull(
            client_id="toolscout-app",
            client_secret=secret,
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # pyright: ignore[reportArgumentType]
            token_endpoint_auth_method="client_secret_post",
            grant_types=["authorization_code", "refresh_token"],
            scope="read",
        )
        printed = await home.login()
        assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in printed
        assert "client_id=toolscout-app" in printed
        assert list(site.provider.clients) == ["toolscout-app"]  # none registered
        shown = (await home.run("config", "show")).stdout.decode()
        assert secret not in shown
        assert secret not in home.sign_in.path.read_text()  # read from the config each time, never kept
        site.provider.expire_access_tokens()
        await home.run("execute", "notes/whoami")  # the refresh authenticates with the config's secret
        assert site.provider.refreshed == 1


def free_port() -> int:
    from benchmarks.processes import free_port as pick

    return pick()


async def test_a_refused_static_header_is_an_error_not_a_sign_in(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        config = json.loads(home.config.read_text())
        config["mcpServers"]["notes"]["headers"] = {"Authorization": "Bearer wrong-key"}
        home.config.write_text(json.dumps(config))
        done = await home.run("list", "--refresh", "--json", expect=3)
        row = next(r for r in json.loads(done.stdout)["servers"] if r["name"] == "notes")
        assert row["status"] == "error"
        assert "`Authorization` header in its `headers`" in row["error"]
        # Signing in would change nothing (the header is sent instead): refused, and status says why.
        login = await home.run("auth", "login", "notes", "--no-browser", expect=2)
        assert "notes sends its own `Authorization` header" in login.stderr.decode()
        assert not site.provider.clients
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert status[0]["state"] == "not-needed" and "`Authorization` header" in status[0]["detail"]


async def test_login_to_a_server_that_never_answers_ends_after_its_connect_timeout(tmp_path: Path) -> None:
    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:  # accepted, never answered
            await anyio.sleep_forever()

    silent = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = silent.extra(anyio.abc.SocketAttribute.local_port)
    said = ""
    status: list[dict[str, Any]] = []
    async with oauth_site() as site, silent, anyio.create_task_group() as tg:
        tg.start_soon(silent.serve, hold)
        home = Home(tmp_path, site)
        config = json.loads(home.config.read_text())
        config["mcpServers"]["mute"] = {"url": f"http://127.0.0.1:{port}/mcp", "connectTimeout": 1}
        home.config.write_text(json.dumps(config))
        done = await home.run("auth", "login", "mute", "--no-browser", expect=3)
        said = done.stderr.decode()
        status = json.loads((await home.run("auth", "status", "mute", "--json")).stdout)
        tg.cancel_scope.cancel()
    assert status[0]["state"] == "unknown" and status[0]["detail"] == "cannot reach it: ReadTimeout", status
    assert "mute did not answer within 1s (its `connectTimeout`)" in said, said
    assert "Traceback" not in said


def test_the_sdk_still_has_the_hooks_the_gateway_overrides() -> None:
    """The gateway's OAuth client (upstream/oauth_client.py) overrides and calls these of the SDK's, and
    reads and writes these fields of its context; an SDK upgrade that renames or reshapes one would
    silently bypass the gateway's storage and refresh rules."""
    import dataclasses
    import inspect

    from mcp.client.auth.oauth2 import OAuthContext

    expected = {
        "async_auth_flow": ["self", "request"],
        "_perform_authorization": ["self"],
        "_auth_flow": ["self", "request"],
        "_initialize": ["self"],
        "_handle_token_response": ["self", "response"],
        "_refresh_token": ["self"],
        "_handle_refresh_response": ["self", "response"],
    }
    for name, parameters in expected.items():
        method = getattr(OAuthClientProvider, name, None)
        assert callable(method), name
        assert list(inspect.signature(method).parameters) == parameters, name
    used = {
        "lock",
        "current_tokens",
        "token_expiry_time",
        "client_info",
        "oauth_metadata",
        "protected_resource_metadata",
        "auth_server_url",
        "client_metadata",
    }
    assert used <= {f.name for f in dataclasses.fields(OAuthContext)}


async def test_login_explains_what_it_cannot_sign_in_to(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        unknown = await home.run("auth", "login", "note", expect=2)
        assert "No server named 'note'. Did you mean 'notes'?" in unknown.stderr.decode()
        local = await home.run("auth", "login", "units", expect=2)
        assert "units is a stdio server" in local.stderr.decode()
        # Nobody comes back from the browser: the wait ends with what to do, and the sign-in kept before
        # still works.
        await home.login()
        kept = home.sign_in.path.read_bytes()
        command = ["auth", "login", "notes", "--no-browser", "--timeout", "1"]
        waited = await home.run(*command, expect=3)
        assert "No answer from the browser within 1s" in waited.stderr.decode()
        assert "Traceback" not in waited.stderr.decode()
        assert home.sign_in.path.read_bytes() == kept
        await home.run("execute", "notes/whoami")
        # A server that cannot be reached is "unknown", with why.
        config = json.loads(home.config.read_text())
        config["mcpServers"]["open"] = {"url": "http://127.0.0.1:1/mcp"}
        home.config.write_text(json.dumps(config))
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert {s["server"]: s["state"] for s in status} == {"notes": "signed-in", "open": "unknown"}
        assert "cannot reach it" in status[1]["detail"]
        offline = json.loads((await home.run("auth", "status", "--offline", "--json")).stdout)
        assert {s["server"]: s["state"] for s in offline} == {"notes": "signed-in", "open": "not-signed-in"}


def expire_locally(home: Home) -> None:
    """Make the kept access token look expired to the gateway (the server still honours it)."""
    record = json.loads(home.sign_in.path.read_text())
    record["expires_at"] = 0
    home.sign_in.path.write_text(json.dumps(record))


async def test_two_processes_refreshing_at_once_send_the_rotated_refresh_token_once(tmp_path: Path) -> None:
    from toolscout.upstream.oauth_client import upstream_oauth

    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        expire_locally(home)
        directory = home.sign_in.path.parent
        # Two connections with their own sign-in readers, as a `serve` and an `execute` have: the lock is
        # the file's (flock locks open files, so two in one process exclude each other like two processes).
        flows = [upstream_oauth("notes", site.url, None, directory=directory) for _ in range(2)]
        answers: list[int] = []

        async def ping(auth: httpx2.Auth) -> None:
            async with httpx2.AsyncClient(auth=auth, timeout=BOUND) as http:
                body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                headers = {"accept": "application/json, text/event-stream"}
                answers.append((await http.post(site.url, json=body, headers=headers)).status_code)

        async with anyio.create_task_group() as tg:
            for flow in flows:
                tg.start_soon(ping, flow)
        assert 401 not in answers and len(answers) == 2
        assert site.provider.refreshed == 1
        assert json.loads(home.sign_in.path.read_text()).get("ended") is None
        await home.run("execute", "notes/whoami")


async def test_an_authorization_server_in_trouble_leaves_the_sign_in_alone(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        expire_locally(home)
        before = json.loads(home.sign_in.path.read_text())
        for status in (503, 403):  # an outage, and a firewall in front of the token endpoint
            site.token_failure = status
            failed = await home.run("execute", "notes/whoami", "--json", expect=3)
            message = json.loads(failed.stdout)["error"]["message"]
            assert f"could not refresh its sign-in: its authorization server answered HTTP {status}" in message
            assert json.loads(home.sign_in.path.read_text()) == before  # nothing ended, nothing lost
        site.token_failure = None
        await home.run("execute", "notes/whoami")
        assert site.provider.refreshed == 1


@pytest.mark.parametrize("stored", [False, True], ids=["nothing-stored", "list-stored"])
async def test_a_remembered_failure_is_listed_until_a_new_sign_in_connects_again(tmp_path: Path, stored: bool) -> None:
    def notes_row(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
        return next(r for r in json.loads(done.stdout)["servers"] if r["name"] == "notes")

    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        if stored:
            await home.run("list", "--json")  # notes's list is stored: it must not stand in for a failure
        expire_locally(home)
        site.token_failure = 503
        failed = notes_row(await home.run("list", "--refresh", "--json", expect=3))
        assert failed["status"] == "error" and "HTTP 503" in failed["error"]
        assert "HTTP 503" in notes_row(await home.run("list", "--json", expect=3))["error"]  # remembered
        await anyio.sleep(0.05)
        kept = home.sign_in.load()
        assert kept is not None
        home.sign_in.save(kept)  # as a running serve's refresh writes it, the trouble not over
        # Written since the failure: connected again, and the failure still there is shown, not hidden.
        still = notes_row(await home.run("list", "--json", expect=3))
        assert still["status"] == "error" and "HTTP 503" in still["error"], still
        site.token_failure = None
        await home.login()
        # Without --refresh, `list` would show the failure of the sign-in this login replaced as the
        # server's state: the sign-in was written since, so the server is connected instead.
        now = notes_row(await home.run("list", "--json"))
        assert now["status"] == "connected" and "error" not in now, now


async def test_a_token_answer_that_never_ends_leaves_the_sign_in_alone(tmp_path: Path) -> None:
    from toolscout.upstream.oauth_client import MAX_OAUTH_ANSWER_BYTES

    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        expire_locally(home)
        before = json.loads(home.sign_in.path.read_text())
        site.token_endless = True
        failed = await home.run("execute", "notes/whoami", "--json", expect=3)
        message = json.loads(failed.stdout)["error"]["message"]
        assert (
            f"notes's OAuth answer from {site.base}/token (HTTP 200) is more than {MAX_OAUTH_ANSWER_BYTES}" in message
        )
        assert json.loads(home.sign_in.path.read_text()) == before  # nothing ended, nothing lost
        site.token_endless = False
        await home.run("execute", "notes/whoami")
        assert site.provider.refreshed == 1


async def test_the_configured_scopes_are_asked_for_instead_of_the_servers(tmp_path: Path) -> None:
    async with oauth_site() as site:
        # The server's challenge and metadata name only `read`; the config asks for `write` as well.
        home = Home(tmp_path, site, oauth={"scopes": ["read", "write"]})
        printed = await home.login()
        assert "&scope=read+write" in printed
        assert "scopes: read write" in printed
        (client,) = site.provider.clients.values()
        assert client.scope == "read write"  # registered for what it asks


async def test_a_tool_wanting_a_wider_sign_in_names_the_scopes_and_login_asks_for_them(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        site.write_requests = frozenset({"tools/call add"})
        failed = await home.run("execute", "notes/add", "--args", '{"a": 1, "b": 2}', "--json", expect=3)
        error = json.loads(failed.stdout)["error"]
        assert error["code"] == "SCOPE_REQUIRED", error
        assert error["scopes"] == ["read", "write"]
        assert "needs a wider sign-in to run 'add': it asks for the scopes read write" in error["message"]
        assert "(writing needs the write scope)" in error["message"]
        assert "toolscout auth login notes" in error["message"]
        kept = json.loads(home.sign_in.path.read_text())
        assert kept["wanted_scopes"] == ["write"] and kept.get("ended") is None
        await home.run("execute", "notes/whoami")  # the rest of the server works as before
        status = (await home.run("auth", "status", "notes", "--offline")).stdout.decode()
        assert "asks for more scopes (write)" in " ".join(status.split())

        printed = await home.login()
        assert "&scope=read+write" in printed  # what was granted, and what the server asked for
        kept = json.loads(home.sign_in.path.read_text())
        assert kept["tokens"]["scope"] == "read write" and kept["wanted_scopes"] == []
        assert len(site.provider.clients) == 2  # the first registration named only `read`
        done = await home.run("execute", "notes/add", "--args", '{"a": 1, "b": 2}', "--json")
        assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 3}


async def test_a_read_or_prompt_wanting_a_wider_sign_in_names_the_scopes(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        site.write_requests = frozenset({"resources/read notes://today", "prompts/get summary"})
        async with stdio_serve(home) as (client, _):
            await until_status(client, "notes", "connected")
            (resource,) = [r for r in (await client.list_resources()).resources if r.uri.endswith("notes://today")]
            (prompt,) = [p.name for p in (await client.list_prompts()).prompts if p.name.endswith("summary")]
            for ask, request, words in (
                (client.read_resource(resource.uri), "resources/read notes://today", "to read notes://today"),
                (client.get_prompt(prompt), "prompts/get summary", "to get its prompt 'summary'"),
            ):
                with pytest.raises(MCPError) as refused:
                    await ask
                data, message = refused.value.data, refused.value.message
                assert isinstance(data, dict) and data["code"] == "SCOPE_REQUIRED", message
                assert data["scopes"] == ["read", "write"] and data["request"] == request
                assert f"needs a wider sign-in {words}: it asks for the scopes read write" in message
                assert "toolscout auth login notes" in message
            assert not (await execute(client, "notes", "whoami", {})).is_error  # the rest works as before
        kept = json.loads(home.sign_in.path.read_text())
        assert kept["wanted_scopes"] == ["write"] and kept.get("ended") is None
        await home.login()
        site.write_requests = frozenset({"resources/read notes://today", "prompts/get summary"})
        async with stdio_serve(home) as (client, _):
            await until_status(client, "notes", "connected")
            read = await client.read_resource(resource.uri)
            assert "water the plants" in str(read.contents)


def test_a_request_is_named_as_the_gateway_names_what_it_sends() -> None:
    def body(method: str, params: dict[str, Any]) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()

    assert request_name(body("tools/call", {"name": "add", "arguments": {}})) == "tools/call add"
    assert request_name(body("resources/read", {"uri": "notes://today"})) == "resources/read notes://today"
    assert request_name(body("prompts/get", {"name": "summary"})) == "prompts/get summary"
    completion = {"ref": {"type": "ref/prompt", "name": "summary"}, "argument": {"name": "day", "value": "mo"}}
    assert request_name(body("completion/complete", completion)) == "completion/complete summary day"
    template = {"ref": {"type": "ref/resource", "uri": "notes://{day}"}, "argument": {"name": "day", "value": "m"}}
    assert request_name(body("completion/complete", template)) == "completion/complete notes://{day} day"
    assert request_name(body("resources/list", {})) == "resources/list"
    assert request_name(body("tools/call", {"name": 7})) == "tools/call"  # not an item the gateway names
    for unusable in (b"", b"not json", b"[1, 2]", b'{"id": 1}'):
        assert request_name(unusable) is None


async def test_a_configured_redirect_uri_is_used_as_written(tmp_path: Path) -> None:
    async with oauth_site() as site:
        port = free_port()
        redirect = f"http://localhost:{port}/oauth/callback"  # Gemini CLI's shape, as a client was registered
        home = Home(tmp_path, site, oauth={"redirectUri": redirect})
        printed = await home.login()
        assert f"&redirect_uri=http%3A%2F%2Flocalhost%3A{port}%2Foauth%2Fcallback&" in printed
        (client,) = site.provider.clients.values()
        assert [str(uri) for uri in client.redirect_uris or []] == [redirect]
        await home.run("execute", "notes/whoami")


async def test_a_redirect_uri_off_this_machine_is_refused_with_what_to_write(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site, oauth={"redirectUri": "https://app.example.com/callback"})
        done = await home.run("auth", "login", "notes", "--no-browser", expect=2)
        said = done.stdout.decode() + done.stderr.decode()
        assert "is not a loopback redirect URI: write http://127.0.0.1:PORT/PATH" in said
        assert "Traceback" not in said


async def test_the_oauth_requests_wait_a_bounded_time(tmp_path: Path) -> None:
    from toolscout.upstream.oauth_client import OAUTH_REQUEST_TIMEOUT, upstream_oauth

    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        expire_locally(home)
        auth = upstream_oauth("notes", site.url, None, directory=home.sign_in.path.parent)
        flow = auth.async_auth_flow(httpx2.Request("POST", site.url))
        refresh = await flow.__anext__()  # the SDK's request, built without the client's timeouts
        await flow.aclose()
        assert refresh.url.path == "/token"
        assert refresh.extensions["timeout"] == dict.fromkeys(
            ("connect", "read", "write", "pool"), OAUTH_REQUEST_TIMEOUT
        )
        assert refresh.headers["accept-encoding"] == "identity"


async def test_a_refresh_that_cannot_be_kept_still_serves_the_call(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        await home.login()
        expire_locally(home)
        before = home.sign_in.path.read_text()
        directory = home.sign_in.path.parent
        lock = directory / f".{home.sign_in.path.name}.lock"
        lock.unlink()  # left by the login, which keeps its sign-in under the lock; gone, it must be made again
        with unwritable(directory):
            # Without its lock nothing is refreshed (a rotated refresh token is never risked twice).
            failed = await home.run("execute", "notes/whoami", "--json", expect=3)
            message = json.loads(failed.stdout)["error"]["message"]
            assert "cannot be refreshed: its lock" in message and f"Make {directory} writable" in message
            assert site.provider.refreshed == 0
        lock.touch()  # as the login or an earlier refresh leaves it
        with unwritable(directory):
            # The old refresh token is spent by this refresh: the new tokens must not be lost with the write,
            # and the person is told, since the next process will find the kept one refused.
            done = await home.run("execute", "notes/whoami", "--json")
            assert json.loads(done.stdout)["success"] is True
            assert "! notes: its refreshed sign-in cannot be kept at" in done.stderr.decode()
            assert site.provider.refreshed == 1
            assert home.sign_in.path.read_text() == before
            refused = await home.run("execute", "notes/whoami", "--json", expect=3)
        error = json.loads(refused.stdout)["error"]
        assert error["code"] == "SIGN_IN_REQUIRED" and "refused to refresh" in error["message"], error
        assert "! notes: that its sign-in ended cannot be written to" in refused.stderr.decode()


@contextmanager
def unwritable(directory: Path) -> Generator[None]:
    """`directory` refusing new files for the block: immutable for root (whom modes do not stop), 0500 otherwise."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"running as root, and this file system has no immutable flag: {made.stderr.decode()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        return
    mode = directory.stat().st_mode
    directory.chmod(0o500)
    try:
        yield
    finally:
        directory.chmod(mode)


async def test_the_callback_takes_only_the_answer_to_its_own_authorization() -> None:
    from toolscout.upstream.sign_in import LoopbackCallback

    callback = await LoopbackCallback.bind(0)
    async with callback.serving(), httpx2.AsyncClient(timeout=BOUND) as browser:
        base = callback.redirect_uri
        callback.expect("https://auth.example.com/authorize?client_id=x&state=the-state&code_challenge=y")
        hostile = await browser.get(base, params={"error": "access_denied", "error_description": "<script>x</script>"})
        assert hostile.status_code == 400
        assert "<script>" not in hostile.text
        forged = await browser.get(base, params={"code": "forged", "state": "another"})
        assert forged.status_code == 400
        assert (await browser.get(base.replace("/callback", "/favicon.ico"))).status_code == 404
        real = await browser.get(base, params={"code": "the-code", "state": "the-state", "iss": "https://auth"})
        assert real.status_code == 200
        result = await callback.wait(BOUND, "notes")
    assert (result.code, result.state, result.iss) == ("the-code", "the-state", "https://auth")


async def test_login_failures_are_said_without_a_traceback_and_lose_nothing(tmp_path: Path) -> None:
    async with oauth_site() as site:
        home = Home(tmp_path, site)
        config = json.loads(home.config.read_text())
        config["mcpServers"]["gone"] = {"url": "http://127.0.0.1:1/mcp"}
        home.config.write_text(json.dumps(config))
        gone = await home.run("auth", "login", "gone", "--no-browser", expect=3)
        assert "Cannot reach gone at http://127.0.0.1:1/mcp" in gone.stderr.decode()
        assert "Traceback" not in gone.stderr.decode()
        # The state directory cannot take a sign-in: said before anyone is sent to the browser.
        shutil.rmtree(home.root / "state", ignore_errors=True)
        (home.root / "state").mkdir(parents=True)
        (home.root / "state" / "sign-ins").write_text("not a directory")
        printed = await home.login(expect=3)
        assert "A sign-in to notes could not be kept at" in printed and "make that directory writable" in printed
        assert "/authorize?" not in printed and not site.provider.clients
        assert "Traceback" not in printed


async def test_a_server_that_asks_for_no_sign_in_is_not_signed_in_to(tmp_path: Path) -> None:
    async with oauth_site(protected=False) as site:
        home = Home(tmp_path, site)
        status = json.loads((await home.run("auth", "status", "--json")).stdout)
        assert status[0]["state"] == "not-needed"
        login = await home.run("auth", "login", "notes", "--no-browser", expect=3)
        assert "notes answered without asking for a sign-in" in login.stderr.decode()
        assert not home.sign_in.path.exists()
        done = await home.run("execute", "notes/add", "--args", '{"a": 1, "b": 2}', "--json")
        assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 3}


async def test_a_server_over_sse_signs_in_and_refreshes_alike(tmp_path: Path) -> None:
    async with oauth_site(sse=True) as site:
        home = Home(tmp_path, site)
        config = json.loads(home.config.read_text())
        config["mcpServers"]["notes"]["transport"] = "sse"
        home.config.write_text(json.dumps(config))
        printed = await home.login()
        assert f"Signed in to notes as {SUBJECT}" in printed
        assert site.provider.access[next(iter(site.provider.access))].resource == site.url
        done = await home.run("execute", "notes/add", "--args", '{"a": 2, "b": 2}', "--json")
        assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 4}
        site.provider.expire_access_tokens()
        await home.run("execute", "notes/whoami")
        assert site.provider.refreshed == 1
        site.provider.revoke_all()
        listed = await home.run("list", "--refresh", "--json", expect=3)
        row = next(r for r in json.loads(listed.stdout)["servers"] if r["name"] == "notes")
        assert row["status"] == "needs-login"
