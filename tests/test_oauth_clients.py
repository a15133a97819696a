"""What an OAuth-aware client shown toolscout's 401 tells its user: the real MCP
Inspector CLI against a real `toolscout serve` with keys, without and with a wrong credential, in CI
mode (`--stored-auth-only`) and interactively (a terminal: it starts OAuth discovery). Each time
what it prints names the bearer credential toolscout wants; the OAuth discovery paths say this
gateway does not use OAuth."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from benchmarks.processes import served_gateway, write_config

from tests.helpers.paths import NPM_DIR, node_path

pytestmark = pytest.mark.anyio

ADMIN = "admin-oauth-clients-0123456789abcdef"
WRONG = "ts_" + "w" * 64
BEARER = "Authorization: Bearer <credential>"


async def inspector(url: str, *args: str, terminal: bool = False) -> str:
    """What the Inspector CLI prints (stdout and stderr) listing `url`'s tools; `terminal`: run as a
    person would, its stdin and stderr a terminal (it then starts OAuth itself)."""
    command = ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", url, "--method", "tools/list", *args]
    env = {**os.environ, "PATH": node_path(), "MCP_INSPECTOR_SECRET_STORE": "memory", "BROWSER": "true"}
    leader, follower = pty.openpty() if terminal else (-1, -1)
    try:
        with anyio.fail_after(120):
            done = await anyio.run_process(
                command,
                env=env,
                cwd=NPM_DIR,
                check=False,
                stdin=follower if terminal else subprocess.DEVNULL,
                stderr=follower if terminal else subprocess.PIPE,
            )
        printed = done.stdout.decode() + (done.stderr or b"").decode()
        if terminal:
            os.set_blocking(leader, False)
            with contextlib.suppress(BlockingIOError, OSError):  # nothing was written to the terminal
                printed += os.read(leader, 1 << 20).decode(errors="replace")
    finally:
        if terminal:
            os.close(leader)
            os.close(follower)
    return printed


async def test_the_inspector_is_told_to_send_a_bearer_credential_not_to_do_oauth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TS_OAUTH_ADMIN", ADMIN)
    config = write_config(tmp_path, auth={"adminKeys": ["${TS_OAUTH_ADMIN}"]})
    async with served_gateway(config) as gateway, httpx2.AsyncClient(timeout=30) as http:
        # Where an OAuth client looks first: answered before authentication, saying what to send.
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"):
            answer = await http.get(gateway.base_url + path)
            assert answer.status_code == 404 and "does not use OAuth" in answer.json()["error_description"]
        challenge = (await http.post(gateway.mcp_url, json={})).headers["www-authenticate"]
        assert "error_description=" in challenge and BEARER in challenge

        for credential in ((), ("--header", f"Authorization: Bearer {WRONG}")):
            printed = await inspector(gateway.mcp_url, *credential, "--stored-auth-only")
            assert BEARER in printed and "not OAuth" in printed, printed
        printed = await inspector(gateway.mcp_url, terminal=True)  # it starts OAuth: what it is told
        assert "does not use OAuth" in printed and BEARER in printed, printed
        assert "units" not in printed and "execute_tool" not in printed
        assert (await http.get(gateway.api_url + "/tokens")).status_code == 401  # nothing else opened up
