"""Secrets never leave toolscout: planted in a config whose upstreams fail, then looked for everywhere.

A real `toolscout serve` (stdio, driven by `mcp.Client`) fronts upstreams that fail with secrets
in hand: a stdio child that echoes its arguments and environment to stderr and exits, a command
string with a token in it, an HTTP URL and an SSE URL that refuse the connection, each with an OAuth
client secret (written literally, as a `${VAR}`, and as one left unset in a disabled server). The planted
values must not appear in the gateway's log (stderr, at the default level and at DEBUG), in
`list_mcp_servers` or `execute_tool` errors, in the audit log, in `toolscout list` or in
`toolscout config show` (text and --json); and what is left must still say which host, path and
argument a message is about.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from benchmarks.processes import free_port
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from tests.helpers.cli_sandbox import make_sandbox
from tests.helpers.paths import PYTHON
from toolscout.config.models import ModeName
from toolscout.config.secrets import config_secrets, mask_server
from toolscout.gateway.core import Gateway
from toolscout.masking import MASK, install_log_masking, mask_args, mask_text, remember_secrets
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

PLANTED = {
    "url_password": "urlPassw0rd-Q1x",
    "url_api_key": "qApiKey-7731zz",
    "url_token": "qToken-99x8y7",
    "url_key": "qKey-31337abc",
    "url_secret": "qSecret-4242zz",
    "sse_access_token": "sseAccess-55ab",
    "sse_sig": "sseSig-0099aa",
    "flag_api_key": "flagApiKey-1a2b3c",
    "flag_password": "flagPassw0rd-9z",
    "flag_token": "flagToken-8y7x6w",
    "anthropic": "sk-ant-api03-PLANTEDanthropic0123456789",
    "github": "ghp_PLANTEDgithub0123456789abcdef",
    "github_pat": "github_pat_PLANTED0123456789abcdefgh",
    "slack": "xoxb-1234567890-PLANTEDslack",
    "aws": "AKIAPLANTED0AWS12345",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PLANTEDjwtSig",
    "command_token": "cmdToken-5150ab",
    "env_secret": "envSecret-ab12cd34",
    "env_reference": "refSecret-77qq88",
    "header_bearer": "hdrBearer-3141592",
    "header_key": "hdrKey-2718281",
    "stderr_bearer": "stderrBearer-161803",
    "oauth_secret": "oauthSecret-6b5a4c3d",
    "oauth_reference": "oauthRefSecret-9e8f7a",
}
"""24 secrets, each distinct so that a leak names itself."""

# The child a misconfigured server is: it says what it was given (as real servers do in their
# usage errors) and exits. `--help` is not a secret flag: the next value stays, unless it is known.
ECHOER = (
    "import os, sys; "
    "print('usage error: unexpected arguments', ' '.join(sys.argv[1:]), file=sys.stderr); "
    "print('GITHUB_TOKEN is', os.environ['GITHUB_TOKEN'], file=sys.stderr); "
    "print('request had Authorization: Bearer ' + os.environ['STDERR_BEARER'], file=sys.stderr); "
    "sys.exit(3)"
)


def planted_config(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The config, and the environment whose `${PLANTED_API_TOKEN}` and `${PLANTED_CLIENT_SECRET}` it uses."""
    s = PLANTED
    http_port, sse_port = free_port(), free_port()  # nothing listens: the connection is refused
    config = {
        "mcpServers": {
            "echoer": {
                "command": PYTHON,
                "args": [
                    "-c",
                    ECHOER,
                    "--api-key",
                    s["flag_api_key"],
                    f"--password={s['flag_password']}",
                    "--token",
                    s["flag_token"],
                    s["anthropic"],
                    "--github",
                    s["github"],
                    s["github_pat"],
                    s["slack"],
                    s["aws"],
                    s["jwt"],
                    "${PLANTED_API_TOKEN}",
                ],
                "env": {"GITHUB_TOKEN": s["env_secret"], "STDERR_BEARER": s["stderr_bearer"]},
            },
            "cmdline": {"command": f"/nonexistent/bin/mcp-server --token={s['command_token']}"},
            "remote": {
                "url": (
                    f"http://planted-user:{s['url_password']}@127.0.0.1:{http_port}/mcp"
                    f"?api_key={s['url_api_key']}&token={s['url_token']}&page=2&key={s['url_key']}"
                    f"&secret={s['url_secret']}"
                ),
                "headers": {"Authorization": f"Bearer {s['header_bearer']}", "X-Api-Key": s["header_key"]},
                "oauth": {"clientId": "planted-client", "clientSecret": s["oauth_secret"], "scopes": ["read"]},
                "connectTimeout": 5,
            },
            "stream": {
                "type": "sse",
                "url": f"http://127.0.0.1:{sse_port}/sse?access_token={s['sse_access_token']}&sig={s['sse_sig']}",
                "oauth": {"clientId": "planted-sse-client", "clientSecret": "${PLANTED_CLIENT_SECRET}"},
                "connectTimeout": 5,
            },
            # Disabled because its secret is not at hand: the unset variable's stand-in is no value to show.
            "dormant": {
                "url": f"http://127.0.0.1:{http_port}/mcp",
                "oauth": {"clientId": "dormant-client", "clientSecret": "${PLANTED_UNSET_SECRET}"},
                "disabled": True,
            },
            "units": {"command": PYTHON, "args": ["-m", "toolscout.demo.units"]},
        },
        "audit": {"path": str(tmp_path / "audit.jsonl")},
    }
    path = tmp_path / "toolscout.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path, {"PLANTED_API_TOKEN": s["env_reference"], "PLANTED_CLIENT_SECRET": s["oauth_reference"]}


def leaked(text: str) -> list[str]:
    planted = [name for name, value in PLANTED.items() if value in text]
    return planted + ["placeholder"] * ("placeholder-for-unset" in text)


def as_text(result: types.CallToolResult) -> str:
    blocks = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return json.dumps(result.structured_content) + "\n".join(blocks)


@pytest.mark.anyio
@pytest.mark.parametrize("level", ["info", "debug"])
async def test_no_planted_secret_leaves_the_gateway(tmp_path: Path, level: str) -> None:
    config, variables = planted_config(tmp_path)
    sandbox = make_sandbox(tmp_path)
    env = {**sandbox.env(), **variables}
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "toolscout", "serve", "--config", str(config), "--log-level", level], env=env
    )
    log = tmp_path / "gateway.log"
    answers: list[str] = []
    with anyio.fail_after(60), log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            failing = {"echoer", "cmdline", "remote", "stream"}
            servers: dict[str, Any] = {}
            while {name for name, s in servers.items() if s["status"] == "error"} != failing:
                # The echoer is tried again at once after it fails: ask until each is seen failed.
                listed = await client.call_tool("list_mcp_servers", {})
                answers.append(as_text(listed))
                servers = {s["name"]: s for s in cast(dict[str, Any], listed.structured_content)["servers"]}
            for server in ("echoer", "cmdline", "remote", "stream"):
                failed = await client.call_tool("execute_tool", {"server": server, "tool": "x", "arguments": {}})
                assert failed.is_error
                answers.append(as_text(failed))
            # An agent passing configured secrets on: the audit log masks them by value.
            passed_on = f"m {PLANTED['env_secret']} {PLANTED['oauth_secret']}"
            arguments = {"value": 1, "from_unit": "km", "to_unit": passed_on}
            executed = await client.call_tool(
                "execute_tool", {"server": "units", "tool": "convert_units", "arguments": arguments}
            )
            # (Its answer is the upstream's, to the client that sent the value: passed on as it came.)
            assert executed.is_error
    logged = log.read_text(encoding="utf-8")
    answered = "\n".join(answers)
    audited = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")

    assert leaked(logged) == [], logged
    assert leaked(answered) == [], answered
    assert leaked(audited) == [], audited
    # The client secrets are shown as present, not as what they are; the client ids stay.
    for server, client_id in (("remote", "planted-client"), ("stream", "planted-sse-client")):
        assert servers[server]["config"]["oauth"] == {"clientId": client_id, "clientSecret": MASK} | (
            {"scopes": ["read"]} if server == "remote" else {}
        )
    # What each failure was about is still there: the child's stderr and arguments, host, path, flags.
    assert "usage error: unexpected arguments" in servers["echoer"]["error"]
    assert f"GITHUB_TOKEN is {MASK}" in servers["echoer"]["error"]
    assert "/nonexistent/bin/mcp-server --token=" in servers["cmdline"]["error"]
    for fragment in ("--api-key", "--password=", "--token", "--github", f"http://{MASK}@127.0.0.1:", "/mcp?api_key="):
        assert fragment in logged, fragment
    assert "&page=2&key=" in logged and "/sse?access_token=" in logged
    assert f"&secret={MASK})" in logged  # the message's closing parenthesis stays
    if level == "debug":  # the child's stderr lines are logged as they come, too
        assert "request had Authorization: Bearer " in logged


def test_config_show_and_list_mask_every_planted_secret(tmp_path: Path) -> None:
    config, variables = planted_config(tmp_path)
    sandbox = make_sandbox(tmp_path)

    def run(*args: str) -> str:
        done = subprocess.run(
            [PYTHON, "-m", "toolscout", *args, "--config", str(config)],
            cwd=sandbox.cwd,
            env={**sandbox.env(), **variables},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return done.stdout + done.stderr

    shown, shown_json, listed = run("config", "show"), run("config", "show", "--json"), run("list")
    status, status_json = run("config", "show", "--status"), run("config", "show", "--status", "--json")
    for output in (shown, shown_json, listed, status, status_json):
        assert leaked(output) == [], output
    assert "--api-key" in shown and "/nonexistent/bin/mcp-server --token=" in shown and "127.0.0.1" in shown
    servers = json.loads(shown_json)["config"]["mcpServers"]
    assert servers["echoer"]["args"][2:5] == ["--api-key", MASK, f"--password={MASK}"]
    assert servers["echoer"]["args"][-1] == "${PLANTED_API_TOKEN}"  # where it lives, as written
    assert servers["remote"]["headers"] == {"Authorization": MASK, "X-Api-Key": MASK}
    # The client secret as the headers are: masked when literal, a reference as written, set or not.
    assert servers["remote"]["oauth"] == {"clientId": "planted-client", "clientSecret": MASK, "scopes": ["read"]}
    assert servers["stream"]["oauth"]["clientSecret"] == "${PLANTED_CLIENT_SECRET}"
    assert servers["dormant"]["oauth"]["clientSecret"] == "${PLANTED_UNSET_SECRET}"
    assert json.loads(status_json)["config"]["mcpServers"] == servers
    assert "echoer" in listed and "cmdline" in listed


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "cannot connect: https://bob:hunter2pass@api.example.com/v1/mcp (refused)",
            "cannot connect: https://••••••@api.example.com/v1/mcp (refused)",
        ),
        (
            "GET https://x.io/a?apikey=abc123def&q=cats&Signature=zzzz9999",
            "GET https://x.io/a?apikey=••••••&q=cats&Signature=••••••",
        ),
        ("wss://x.io/ws?auth=abcdefgh#access_token=ya29xyzxyz", "wss://x.io/ws?auth=••••••#access_token=••••••"),
        ("stdio: srv --api-key 'a b c' --port 8080", "stdio: srv --api-key •••••• --port 8080"),
        ("stdio: srv '--password=a b' --verbose", "stdio: srv '--password=••••••' --verbose"),
        (
            "srv --client-secret=s3cr3tvalue --key k3y-v4lue --keyfile /etc/k.pem",
            "srv --client-secret=•••••• --key •••••• --keyfile /etc/k.pem",
        ),
        ("failed: password=hunter2, user=bob", "failed: password=••••••, user=bob"),
        ("Authorization: Bearer abcdefgh12345678", "Authorization: Bearer ••••••"),
        ("key sk-proj-abcdefghijklmnopqrstuvwx used", "key •••••• used"),
        ("AKIAIOSFODNN7EXAMPLE / xoxp-1234567890-abc", "•••••• / ••••••"),
        (  # toolscout's issued tokens: tagged (64 characters after ts_) and issued before tags (43)
            "token ts_" + "Ab-_9" * 12 + "Zz0q, then ts_" + "x-Y_7" * 8 + "abc.",
            "token ••••••, then ••••••.",
        ),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- ok", "•••••• ok"),
        ("card 4242-4242-4242-4242 at 1764057600000 ms", "card •••••• at 1764057600000 ms"),
        ("auth0: connecting again in 1.0s", "auth0: connecting again in 1.0s"),
        ("url ${API_URL}?token=${TOKEN} --token ${T}", "url ${API_URL}?token=${TOKEN} --token ${T}"),
        # A secret word, a space, a value that looks like a credential: no `=` or `:` needed.
        ("retry with token s3cr3tT0ken-9x8y7z6w now", "retry with token •••••• now"),
        ("the API key AbCd1234EfGh5678 was rejected", "the API key •••••• was rejected"),
        ("use api_key 0123abcd4567efgh, access key AK1234567890XY", "use api_key ••••••, access key ••••••"),
        ("my password is Hunter2Hunter2.", "my password is ••••••."),
        ("client secret 'cs-9f8e7d6c5b4a' expired", "client secret '••••••' expired"),
        ("PASSWORD p4ssw0rd-long and Token ab12cd34ef", "PASSWORD •••••• and Token ••••••"),
        ("passphrase correct-horse-42-battery", "passphrase ••••••"),
    ],
)
def test_mask_text_hides_the_secret_and_keeps_the_rest(text: str, kept: str) -> None:
    assert mask_text(text) == kept


@pytest.mark.parametrize(
    "prose",
    [
        "token count 1234, and the token limit is 5",
        "count tokens before the token budget runs out; token 12345678 of 99999999",
        "send a password reset link; the secret sauce; api key rotation",
        "the token auto-refreshes daily, the password expired yesterday",
        "secret santa-exchange planner, token-based auth, passwords hashed",
        "Returns basic information and bearer authentication details",
        "Token is required. Password must be 8 characters.",
    ],
)
def test_mask_text_leaves_prose_about_secrets_alone(prose: str) -> None:
    assert mask_text(prose) == prose
    assert mask_text(prose, colon=True) == prose


def test_configured_secrets_are_masked_by_value_wherever_they_appear() -> None:
    from toolscout.config import GatewayConfig

    config = GatewayConfig.model_validate(
        {
            "mcpServers": {
                "a": {
                    "command": "srv",
                    "args": ["--user-token", "opaque-value-1"],
                    "env": {"DB_PASSWORD": "pw-value-2"},
                },
                "b": {"url": "http://h/mcp", "headers": {"X-Custom": "header-value-3", "Accept": "text/event-stream"}},
                "c": {"url": "http://h/mcp", "oauth": {"clientId": "app-id-6", "clientSecret": "client-value-5"}},
            }
        }
    )
    found = config_secrets(config, {"MY_TOKEN": "env-value-4", "HOME": "/home/me"})
    assert found >= {"opaque-value-1", "pw-value-2", "header-value-3", "env-value-4", "client-value-5"}
    assert "text/event-stream" not in found and "/home/me" not in found and "app-id-6" not in found
    remember_secrets(found)
    said = "upstream said: opaque-value-1 / pw-value-2 / header-value-3 / env-value-4 / client-value-5 / app-id-6"
    assert mask_text(said) == f"upstream said: {MASK} / {MASK} / {MASK} / {MASK} / {MASK} / app-id-6"
    remember_secrets(["pass/word with space"])  # and as a URL would carry it
    assert mask_text("GET /login?p=pass%2Fword%20with%20space") == f"GET /login?p={MASK}"


def test_every_log_record_is_masked_whatever_its_handler(caplog: pytest.LogCaptureFixture) -> None:
    install_log_masking()
    remember_secrets(["known-secret-value"])
    log = logging.getLogger("toolscout.test")
    with caplog.at_level(logging.DEBUG):
        log.debug("connecting to %s with %s", "https://u:p4ssword@h/mcp", "known-secret-value")
        try:
            raise RuntimeError("token=abcdef123456 rejected")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text
    assert "p4ssword" not in text and "known-secret-value" not in text and "abcdef123456" not in text, text
    assert f"connecting to https://{MASK}@h/mcp with {MASK}" in text and f"token={MASK} rejected" in text


def test_mask_args_and_mask_server() -> None:
    assert mask_args(["--token", "abcdefgh", "--port", "80", "-p", "8080", "--keyfile", "k.pem"]) == [
        "--token",
        MASK,
        "--port",
        "80",
        "-p",
        "8080",
        "--keyfile",
        "k.pem",
    ]
    entry = {"command": "srv --api-key=abc12345", "args": ["--password", "${PW}"], "env": {"A": "b"}, "cwd": "/x"}
    assert mask_server(entry) == {
        "command": f"srv --api-key={MASK}",
        "args": ["--password", "${PW}"],
        "env": {"A": MASK},
        "cwd": "/x",
    }
    # `oauth.clientSecret` is hidden whole, as an `env` value is; a reference says where it lives.
    oauth = {"clientId": "app", "clientSecret": "plain-words", "redirectUri": "http://127.0.0.1:8765/cb"}
    remote = {"url": "https://h/mcp", "oauth": oauth}
    assert mask_server(remote) == {"url": "https://h/mcp", "oauth": {**oauth, "clientSecret": MASK}}
    referenced = {"url": "https://h/mcp", "oauth": {"clientId": "app", "clientSecret": "${APP_SECRET}"}}
    assert mask_server(referenced) == referenced


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["discovery", "passthrough"])
async def test_an_upstream_error_quoting_a_configured_credential_reaches_the_client_masked(mode: ModeName) -> None:
    credential = "cfg-credential-8086"

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="fetch", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # An upstream that quotes the credential it was configured with in its refusal.
        raise MCPError(code=types.INVALID_PARAMS, message=f"key {credential} lacks scope: repo")

    upstream: Server[Any] = Server("api", on_list_tools=list_tools, on_call_tool=call_tool)
    remember_secrets([credential])  # as loading a config whose header holds it does
    async with Gateway([UpstreamSpec("api", InProcessUpstream(upstream))]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        async with Client(build_server(gateway, mode), mode="legacy") as client:
            if mode == "discovery":
                result = await client.call_tool("execute_tool", {"server": "api", "tool": "fetch", "arguments": {}})
                said = as_text(result)
            else:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("fetch", {})
                said = refused.value.error.message
    assert credential not in said and f"key {MASK} lacks scope: repo" in said, said


def test_a_failure_stored_in_clear_by_an_older_toolscout_is_listed_masked(tmp_path: Path) -> None:
    from toolscout.config import load_config
    from toolscout.config.models import config_hash
    from toolscout.gateway.store import CatalogStore, Failure

    sandbox = make_sandbox(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/mcp"
    store = tmp_path / "catalog.sqlite3"
    config = sandbox.write(
        "work/toolscout.json",
        json.dumps({"mcpServers": {"remote": {"url": url}}, "catalogCache": {"path": str(store)}}),
    )
    server = load_config(config).mcp_servers["remote"]
    reason = "cannot connect (http: http://bob:storedPassw0rd-1@127.0.0.1/mcp?token=storedToken-2)"
    CatalogStore(store).save_failures([Failure("remote", config_hash(server), time.time(), reason)])
    listed = sandbox.run("list", "--config", str(config))
    shown = listed.stdout + listed.stderr
    assert "cannot connect (http: http://" in shown, shown
    assert "storedPassw0rd-1" not in shown and "storedToken-2" not in shown, shown
