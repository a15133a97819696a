"""The audit log: one JSON line per execution through a real gateway, redaction, rotation, crashes, `audit tail`."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client

from tests.helpers.cli_sandbox import Sandbox, make_sandbox
from tests.helpers.mode_calls import call_in_mode
from tests.helpers.paths import PYTHON
from tests.servers.kitchen import Kitchen
from toolscout.config import GatewayConfig, ToolRule
from toolscout.config.models import AuditConfig, ModeName
from toolscout.config.rules import RuleSet
from toolscout.errors import ToolscoutError
from toolscout.gateway.audit import MAX_STRING_CHARS, REDACTED, AuditLog, Redactor
from toolscout.gateway.core import Gateway
from toolscout.masking import secret_name as secret_key
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
KEYS = ["time", "client", "server", "tool", "arguments", "durationMs", "outcome", "code"]


def lines_of(path: Path) -> list[bytes]:
    """The file's lines, after checking it ends with a complete one."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in the middle of a line: {data[-80:]!r}"
    return data.splitlines() if data else []


def records(path: Path) -> list[dict[str, Any]]:
    """Every record of `path` and its backups, oldest first; each line must be a whole JSON object."""
    files = [*sorted(path.parent.glob(path.name + ".*"), key=lambda p: -int(p.suffix[1:])), path]
    found: list[dict[str, Any]] = []
    for file in files:
        for line in lines_of(file):
            record = json.loads(line)
            assert list(record) == KEYS
            found.append(record)
    return found


def file_sizes(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.iterdir()}


async def write(log: AuditLog, count: int, *, start: int = 0, **extra: Any) -> None:
    for i in range(start, start + count):
        await log.record(server="s", tool="t", arguments={"i": i, **extra}, duration_ms=1.0, outcome="ok")


@asynccontextmanager
async def audited_gateway(audit: AuditLog, *, call_timeout: float = 30.0) -> AsyncGenerator[Gateway]:
    kitchen = Kitchen()
    specs = [UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), call_timeout=call_timeout)]
    rules = RuleSet([ToolRule(pattern=["delete_*"], enabled=False)])
    async with Gateway(specs, rules=rules, audit=audit) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        yield gateway


# Through the gateway


@pytest.mark.anyio
async def test_every_execution_is_recorded_whatever_its_outcome(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"  # the directory is created on open
    calls: list[tuple[str, str, dict[str, Any], str, str | None]] = [
        ("kitchen", "get_weather", {"city": "Paris"}, "ok", None),
        ("kitchen", "fail_politely", {}, "isError", None),
        ("kitchen", "get_weather", {"city": 3, "api_key": "k-123"}, "error", "VALIDATION_ERROR"),
        ("kitchen", "get_wether", {"city": "Paris"}, "error", "TOOL_NOT_FOUND"),
        ("kitchn", "get_weather", {}, "error", "SERVER_NOT_FOUND"),
        ("kitchen", "delete_city", {"city": "Paris"}, "error", "TOOL_DISABLED"),
        ("kitchen", "protocol_error", {}, "error", "TOOL_EXECUTION_ERROR"),
        ("kitchen", "wait_forever", {}, "error", "TIMEOUT"),
    ]
    async with audited_gateway(AuditLog(path), call_timeout=0.5) as gateway:
        for count, (server, tool, arguments, outcome, code) in enumerate(calls, 1):
            if code is None:
                result = await gateway.execute(server, tool, arguments, client=f"client-{count}")
                assert ("isError" if result.is_error else "ok") == outcome
            else:
                with pytest.raises(ToolscoutError) as raised:
                    await gateway.execute(server, tool, arguments, client=f"client-{count}")
                assert raised.value.code == code
            # Flushed per line: the record is in the file by the time execute returns or raises.
            assert len(lines_of(path)) == count

    found = records(path)
    assert [(r["server"], r["tool"], r["outcome"], r["code"]) for r in found] == [
        (server, tool, outcome, code) for server, tool, _, outcome, code in calls
    ]
    assert [r["client"] for r in found] == [f"client-{i}" for i in range(1, len(calls) + 1)]
    assert all(TIME.match(r["time"]) for r in found)
    assert found[0]["arguments"] == {"city": "Paris"}
    assert found[2]["arguments"] == {"city": 3, "api_key": REDACTED}
    assert all(isinstance(r["durationMs"], float) and r["durationMs"] >= 0 for r in found)
    assert found[-1]["durationMs"] >= 450  # the timeout's 0.5 s, give or take the clock's grain


@pytest.mark.anyio
async def test_arguments_are_redacted_at_any_depth_and_by_configured_patterns(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    redactor = Redactor(keys=["*_id", "/^x-/"], patterns=[r"acct-\d{6}"])
    github = "ghp_" + "A1b2" * 9
    arguments: dict[str, Any] = {
        "values": [1, 2],
        "Authorization": "Basic dXNlcjpwYXNz",
        "options": {
            "headers": [{"X-Api-Key": "abc"}, {"x-trace": "t-1"}, {"Accept": "text/plain"}],
            "db": {"connection": "postgres://admin:hunter2@db:5432/app", "passwd": None, "useAuth": True},
        },
        "note": f"use {github} or sk-{'z' * 32}; Bearer abcdefgh12345678; account acct-123456",
        "user_id": 42,
        "author": "Jane",
        "max_tokens": 100,
    }
    async with audited_gateway(AuditLog(path, redactor=redactor)) as gateway:
        await gateway.execute("kitchen", "render_chart", arguments)
    (recorded,) = records(path)
    assert recorded["arguments"] == {
        "values": [1, 2],
        "Authorization": REDACTED,
        "options": {
            "headers": [{"X-Api-Key": REDACTED}, {"x-trace": REDACTED}, {"Accept": "text/plain"}],
            "db": {"connection": f"postgres://{REDACTED}@db:5432/app", "passwd": None, "useAuth": True},
        },
        "note": f"use {REDACTED} or {REDACTED}; Bearer {REDACTED}; account {REDACTED}",
        "user_id": REDACTED,
        "author": "Jane",  # `auth` counts only as a word of its own
        "max_tokens": REDACTED,  # `token` anywhere in a name: erring on the side of hiding
    }


def test_secret_key_names() -> None:
    secret = ["password", "Passwd", "api_key", "apiKey", "API-KEY", "x-api-key", "authorization", "auth", "Cookie"]
    secret += ["credentials", "private_key", "aws_access_key_id", "sessionId", "clientSecret", "refresh_token", "pwd"]
    plain = ["author", "authority", "city", "path", "compass", "passenger", "user", "keyword", "description"]
    assert [k for k in secret if not secret_key(k)] == []
    assert [k for k in plain if secret_key(k)] == []


def test_long_strings_are_cut_and_odd_values_stay_json() -> None:
    redacted = Redactor()({"content": "x" * 20_000, "ratio": float("nan"), "deep": [[[[{"token": "t"}]]]]})
    assert redacted["content"].startswith("x" * 10_000) and redacted["content"].endswith("…[+10000 chars]")
    assert redacted["ratio"] == "nan"
    assert redacted["deep"] == [[[[{"token": REDACTED}]]]]


def test_config_builds_the_log(tmp_path: Path) -> None:
    config = GatewayConfig.model_validate(
        {"audit": {"path": str(tmp_path / "a.jsonl"), "maxBytes": 4096, "backups": 2, "redactKeys": ["ssn"]}}
    )
    gateway = Gateway.from_config(config)
    assert gateway.audit is not None
    assert (gateway.audit.path, gateway.audit.max_bytes, gateway.audit.backups) == (tmp_path / "a.jsonl", 4096, 2)
    assert gateway.audit.redact({"ssn": "123", "name": "x"}) == {"ssn": REDACTED, "name": "x"}
    assert Gateway.from_config(GatewayConfig.model_validate({"audit": {"enabled": False}})).audit is None
    if sys.platform.startswith("linux"):  # conftest points XDG_STATE_HOME at a directory of the tests' own
        assert AuditConfig().path == os.path.join(os.environ["XDG_STATE_HOME"], "toolscout", "audit.jsonl")


@pytest.mark.anyio
async def test_an_unwritable_log_never_fails_a_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    audit = AuditLog(blocker / "audit.jsonl")  # cannot be created, even by root
    with caplog.at_level(logging.WARNING, logger="toolscout.gateway.audit"):
        async with audited_gateway(audit) as gateway:
            for _ in range(3):
                result = await gateway.execute("kitchen", "get_weather", {"city": "Oslo"})
                assert not result.is_error
            with pytest.raises(ToolscoutError):
                await gateway.execute("kitchen", "get_weather", {})
    warnings = [r for r in caplog.records if r.name == "toolscout.gateway.audit"]
    assert len(warnings) == 1 and "cannot write the audit log" in warnings[0].getMessage()


# The file


@pytest.mark.anyio
async def test_rotation_keeps_every_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    async with AuditLog(path, max_bytes=2048, backups=10) as log:
        await write(log, 60, pad="x" * 40)
    found = records(path)
    assert [r["arguments"]["i"] for r in found] == list(range(60))
    sizes = file_sizes(tmp_path)
    assert len(sizes) >= 3, sizes  # rotated at least twice
    assert all(size <= 2048 for size in sizes.values())


@pytest.mark.anyio
async def test_rotation_drops_only_the_oldest_beyond_backups(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    async with AuditLog(path, max_bytes=1024, backups=2) as log:
        await write(log, 100)
    assert sorted(file_sizes(tmp_path)) == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    kept = [r["arguments"]["i"] for r in records(path)]
    assert kept == list(range(kept[0], 100))  # the newest, without a gap


@pytest.mark.anyio
async def test_a_file_cut_mid_line_gets_its_fragment_ended(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"time": "2026-01-01T00:00:00.000Z", "ser')
    async with AuditLog(path, fsync=True) as log:
        await write(log, 1)
    fragment, line = lines_of(path)
    assert fragment.startswith(b'{"time"') and json.loads(line)["arguments"] == {"i": 0}


CHILD = """
import sys
import anyio
from pathlib import Path
from toolscout.gateway.audit import AuditLog

async def main() -> None:
    log = AuditLog(Path(sys.argv[1]), max_bytes=int(sys.argv[2]), backups=1000)
    log.open()
    i, stop = 0, int(sys.argv[3])
    while stop < 0 or i < stop:
        arguments = {"i": i, "pad": "x" * (i % 300)}
        await log.record(server=sys.argv[4], tool="t", arguments=arguments, duration_ms=1.0, outcome="ok")
        i += 1
        if i == 2000:
            print("written", flush=True)

anyio.run(main)
"""


@asynccontextmanager
async def _child(process: anyio.abc.Process) -> AsyncGenerator[anyio.abc.Process]:
    """`process`, killed on the way out if a failed test left it running."""
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def _wait_for_line(process: anyio.abc.Process, wanted: str) -> None:
    assert process.stdout is not None
    seen = ""
    async for chunk in TextReceiveStream(process.stdout):
        seen += chunk
        if wanted in seen:
            return
    raise AssertionError(f"the child ended without printing {wanted!r}")


@pytest.mark.anyio
async def test_a_killed_writer_leaves_only_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    # Never stops by itself: it is killed while writing, after a few rotations.
    command = [PYTHON, "-c", CHILD, str(path), "100000", "-1", "writer"]
    async with _child(await anyio.open_process(command, stderr=subprocess.DEVNULL)) as process:
        with anyio.fail_after(60):
            await _wait_for_line(process, "written")
        process.send_signal(signal.SIGKILL)
        with anyio.fail_after(10):
            await process.wait()
    assert process.returncode == -signal.SIGKILL
    assert len(file_sizes(tmp_path)) >= 3  # rotated while it ran

    data = path.read_bytes()
    if not data.endswith(b"\n"):
        # Linux lets SIGKILL stop a write() between two pages, so the very last line may be cut
        # short; it is never mixed with another, and the next writer ends it before adding its own.
        # (A crash inside the gateway cannot do even this: it never happens inside a write.)
        async with AuditLog(path, max_bytes=10**9) as log:
            await write(log, 1, start=-1)
        *complete, _fragment, last = path.read_bytes().splitlines()
        path.write_bytes(b"".join(line + b"\n" for line in [*complete, last]))
        assert json.loads(last)["arguments"]["i"] == -1
    numbers = [r["arguments"]["i"] for r in records(path) if r["arguments"]["i"] >= 0]
    assert len(numbers) >= 2000 and numbers == list(range(len(numbers)))  # nothing lost before the kill


@pytest.mark.anyio
async def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    each = 3000
    async with anyio.create_task_group() as group:
        for name in ("a", "b", "c"):
            command = [PYTHON, "-c", CHILD, str(path), str(10**9), str(each), name]
            group.start_soon(_run_to_completion, command)
    found = records(path)
    for name in ("a", "b", "c"):
        assert [r["arguments"]["i"] for r in found if r["server"] == name] == list(range(each))


@pytest.mark.anyio
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks to see a blocked flock")
async def test_opening_waits_for_a_line_being_written(tmp_path: Path) -> None:
    # Another writer is inside its write: the first half of its line is in, the second not yet.
    # A log opening now must not take that half for a cut fragment and end it with its own
    # newline, which would leave an empty line once the second half lands.
    import fcntl

    path = tmp_path / "audit.jsonl"
    async with AuditLog(path) as earlier:
        await write(earlier, 1)
    line = path.read_bytes()
    other = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(other, fcntl.LOCK_SH)
        os.write(other, line[:40])
        later = AuditLog(path)
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, later.open)
            blocked = f"-> FLOCK  ADVISORY  WRITE {os.getpid()} "
            with anyio.fail_after(10):
                while blocked not in await anyio.Path("/proc/locks").read_text():  # noqa: ASYNC110 - the kernel's lock table signals nothing
                    await anyio.sleep(0.01)
            os.write(other, line[40:])
            fcntl.flock(other, fcntl.LOCK_UN)
        await write(later, 1, start=1)
        later.close()
    finally:
        os.close(other)
    assert [r["arguments"]["i"] for r in records(path)] == [0, 0, 1]


async def _run_to_completion(command: Sequence[str]) -> None:
    with anyio.fail_after(60):
        done = await anyio.run_process(command)
    assert done.returncode == 0, done.stderr


# `toolscout audit tail`


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = make_sandbox(tmp_path)
    box.write("work/toolscout.yaml", f"mcpServers: {{}}\naudit:\n  path: {tmp_path / 'log' / 'audit.jsonl'}\n")
    return box


def _fill(path: Path, count: int, **kwargs: Any) -> None:
    async def main() -> None:
        async with AuditLog(path, **kwargs) as log:
            await write(log, count)

    anyio.run(main)


def test_tail_without_a_log_says_so(sandbox: Sandbox) -> None:
    done = sandbox.run("audit", "tail")
    assert done.returncode == 0, done.stderr
    assert f"No executions recorded yet at {sandbox.root / 'log' / 'audit.jsonl'}" in done.stderr
    assert done.stdout == ""
    # Without any configuration, the default path in the user state directory is read.
    (sandbox.cwd / "toolscout.yaml").unlink()
    default = sandbox.run("audit", "tail", "--json")
    assert default.returncode == 0, default.stderr
    assert str(sandbox.home / ".local" / "state" / "toolscout" / "audit.jsonl") in default.stderr
    assert sandbox.run("audit", "tail", "--config", "missing.yaml").returncode == 2


def test_tail_shows_the_last_records_across_rotations(sandbox: Sandbox) -> None:
    path = sandbox.root / "log" / "audit.jsonl"
    _fill(path, 30, max_bytes=1024)
    assert (path.parent / "audit.jsonl.1").exists()

    shown = sandbox.run("audit", "tail", "-n", "3")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["time", "(UTC)", "client", "tool", "outcome", "ms", "arguments"]
    assert [line.split()[-1] for line in lines[1:]] == ['{"i":27}', '{"i":28}', '{"i":29}']
    assert all(" s/t " in line and " ok " in line for line in lines[1:])

    data = [json.loads(line) for line in sandbox.run("audit", "tail", "-n", "25", "--json").stdout.splitlines()]
    assert [r["arguments"]["i"] for r in data] == list(range(5, 30))  # from the current file and backups
    everything = sandbox.run("audit", "tail", "-n", "1000", "--json").stdout.splitlines()
    assert len(everything) == 30


def test_tail_skips_a_corrupt_line_with_a_warning(sandbox: Sandbox) -> None:
    path = sandbox.root / "log" / "audit.jsonl"
    _fill(path, 3)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][:25] + b"\n" + lines[2] + b'{"time": "2026')  # cut by hand
    done = sandbox.run("audit", "tail", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert [json.loads(line)["arguments"]["i"] for line in done.stdout.splitlines()] == [0, 2]
    assert done.stderr.count("Skipped a corrupt line") == 2


def test_cli_execute_is_audited(sandbox: Sandbox) -> None:
    path = sandbox.root / "log" / "audit.jsonl"
    sandbox.write(
        "work/toolscout.yaml",
        f"mcpServers:\n  units:\n    command: {PYTHON}\n    args: [-m, toolscout.demo.units]\naudit:\n  path: {path}\n",
    )
    arguments = '{"value": 2, "from_unit": "km", "to_unit": "m"}'
    assert sandbox.run("execute", "units", "convert_units", "--args", arguments).returncode == 0
    assert sandbox.run("execute", "units", "convert_units", "--args", '{"value": "far"}').returncode == 1
    data = [json.loads(line) for line in sandbox.run("audit", "tail", "--json").stdout.splitlines()]
    assert [(r["tool"], r["outcome"], r["code"]) for r in data] == [
        ("convert_units", "ok", None),
        ("convert_units", "error", "VALIDATION_ERROR"),
    ]
    assert data[0]["arguments"] == json.loads(arguments)


@pytest.mark.anyio
async def test_tail_follow_prints_new_records_across_rotations(sandbox: Sandbox) -> None:
    path = sandbox.root / "log" / "audit.jsonl"
    # Ctrl-C as at a terminal: a test run started in the background (a CI runner, `cmd &` in a script)
    # has SIGINT ignored, which a child inherits, and a process that ignores Ctrl-C never sees it.
    tail = ["-m", "toolscout", "audit", "tail", "--follow", "--json", "-n", "1"]
    as_at_a_terminal = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    )
    command = [PYTHON, "-c", as_at_a_terminal, PYTHON, *tail]
    # Enough backups that no file rotates away before the follower (it polls) has read it, however
    # slow the machine: this is about following rotations, not about losing old backups.
    async with AuditLog(path, max_bytes=1024, backups=100) as log:
        await write(log, 1)
        process = await anyio.open_process(command, cwd=sandbox.cwd, env=sandbox.env(), stderr=subprocess.STDOUT)
        async with _child(process):
            assert process.stdout is not None
            printed = _Lines(process.stdout)
            with anyio.fail_after(60):
                assert (await printed.next())["arguments"] == {"i": 0}  # the last record, then new ones
                await write(log, 1, start=1)
                assert (await printed.next())["arguments"] == {"i": 1}
                await write(log, 30, start=2)  # rotates several times
                assert [(await printed.next())["arguments"]["i"] for _ in range(30)] == list(range(2, 32))
            assert (path.parent / "audit.jsonl.2").exists()
            process.send_signal(signal.SIGINT)  # Ctrl-C
            with anyio.fail_after(60):
                rest = await printed.rest()
                await process.wait()
    assert process.returncode == 0, rest
    assert rest == ""  # no traceback, no "Aborted."


class _Lines:
    """JSON lines from a child's stdout, one at a time."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream) -> None:
        self._text = TextReceiveStream(stream)
        self._buffer = ""

    async def next(self) -> dict[str, Any]:
        while "\n" not in self._buffer:
            self._buffer += await self._text.receive()
        line, self._buffer = self._buffer.split("\n", 1)
        return json.loads(line)

    async def rest(self) -> str:
        """Everything else the child prints until it exits."""
        async for chunk in self._text:
            self._buffer += chunk
        return self._buffer


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["discovery", "passthrough"])
async def test_calls_through_the_mcp_face_name_their_client(tmp_path: Path, mode: ModeName) -> None:
    path = tmp_path / "audit.jsonl"
    agent = types.Implementation(name="my-agent", version="1")
    async with (
        audited_gateway(AuditLog(path)) as gateway,
        Client(build_server(gateway, mode), mode="legacy", client_info=agent) as client,
    ):
        await call_in_mode(client, mode, "kitchen", "get_weather", {"city": "Paris", "token": "t-1"})
    [record] = records(path)
    assert record["client"] == "my-agent (connection)"
    assert record["arguments"] == {"city": "Paris", "token": REDACTED}


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "tool"), [("discovery", "execute_tool"), ("compact", "exec")])
async def test_an_execution_refused_for_its_own_arguments_is_audited(tmp_path: Path, mode: ModeName, tool: str) -> None:
    path = tmp_path / "audit.jsonl"
    keys = ("server", "tool") if mode == "discovery" else ("server_name", "tool_name")
    malformed = {keys[0]: "kitchen", keys[1]: "get_weather", "arguments": {"password": "p"}, "bogus": 1}
    async with audited_gateway(AuditLog(path)) as gateway, Client(build_server(gateway, mode), mode="legacy") as client:
        refused = await client.call_tool(tool, malformed)
    assert refused.is_error
    [record] = records(path)
    assert (record["server"], record["tool"], record["outcome"], record["code"]) == (
        "kitchen",
        "get_weather",
        "error",
        "INVALID_ARGUMENTS",
    )
    assert record["arguments"] == {"password": REDACTED}


@pytest.mark.anyio
async def test_personal_and_one_time_secrets_and_secrets_inside_strings_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    arguments: dict[str, Any] = {
        "pin": "4821",
        "ssn": "123-45-6789",
        "card": "4111 1111 1111 1111",
        "cardNumber": 4111111111111111,
        "sig": "a1b2c3",
        "mfa_code": "123456",
        "otp": "654321",
        "totp": "111222",
        "key": "k-1",
        "stripe_key": "k-2",
        "apikey": "k-3",
        "note": "paid with 5500-0000-0000-0004; password=hunter2, token: abc123, see https://u:p4ss@h.io/x?sig=zz&page=2",
        # Kept: which key (key_id), where it is (keyPath), words that merely contain `key`, and numbers
        # that are not card numbers (a millisecond timestamp; a 16-digit run that fails Luhn).
        "key_id": "kid-7",
        "keyPath": "/etc/k.pem",
        "keyword": "cats",
        "monkey": "george",
        "at": 1764057600000,
        "order": "4111 1111 1111 1112",
    }
    async with audited_gateway(AuditLog(path)) as gateway:
        await gateway.execute("kitchen", "render_chart", arguments)
    (recorded,) = records(path)
    secret = ("pin", "ssn", "card", "cardNumber", "sig", "mfa_code", "otp", "totp", "key", "stripe_key", "apikey")
    assert recorded["arguments"] == {
        **dict.fromkeys(secret, REDACTED),
        "note": f"paid with {REDACTED}; password={REDACTED}, token: {REDACTED}, "
        f"see https://{REDACTED}@h.io/x?sig={REDACTED}&page=2",
        **{k: arguments[k] for k in ("key_id", "keyPath", "keyword", "monkey", "at", "order")},
    }


@pytest.mark.anyio
async def test_a_secret_after_a_word_and_a_space_is_redacted_and_prose_kept(tmp_path: Path) -> None:
    """A secret after a word and a space, `token <value>` (no `=` or `:`), inside an argument string,
    through a real client's call."""
    path = tmp_path / "audit.jsonl"
    secrets = ("s3cr3tT0ken-9x8y7z6w", "AbCd1234EfGh5678", "Hunter2Hunter2")
    arguments = {
        "note": f"retry with token {secrets[0]} please",
        "header": f"the api key {secrets[1]} and my password is {secrets[2]}.",
        "prose": "token count 1234, the token limit is 5, password reset sent",
    }
    async with (
        audited_gateway(AuditLog(path)) as gateway,
        Client(build_server(gateway, "discovery"), mode="legacy") as client,
    ):
        with anyio.fail_after(30):
            result = await client.call_tool(
                "execute_tool", {"server": "kitchen", "tool": "render_chart", "arguments": arguments}
            )
    assert not result.is_error
    (recorded,) = records(path)
    assert recorded["arguments"] == {
        "note": f"retry with token {REDACTED} please",
        "header": f"the api key {REDACTED} and my password is {REDACTED}.",
        "prose": arguments["prose"],
    }
    written = path.read_text(encoding="utf-8")
    assert not any(secret in written for secret in secrets)


HOSTILE = "evil\x1b[2J\x1b]0;owned\x07\nfake row\r\x9b31m\u202etxt.exe\x7f"
"""A client name (and a tool name) made to clear the terminal, set its title, forge a row, recolour
it with an 8-bit CSI and reverse the rest of the line."""


@pytest.mark.anyio
async def test_tail_escapes_control_characters_in_names_clients_chose(sandbox: Sandbox) -> None:
    path = sandbox.root / "log" / "audit.jsonl"
    agent = types.Implementation(name=HOSTILE, version="1")
    async with (
        audited_gateway(AuditLog(path)) as gateway,
        Client(build_server(gateway, "discovery"), mode="legacy", client_info=agent) as client,
    ):
        await client.call_tool("execute_tool", {"server": "kitchen", "tool": "get_weather", "arguments": {"city": "x"}})
        await client.call_tool("execute_tool", {"server": "kitchen", "tool": HOSTILE, "arguments": {"q": "\u202e\x9b"}})
    assert [r["client"].startswith("evil\x1b[2J") for r in records(path)] == [True, True]

    shown = await anyio.to_thread.run_sync(sandbox.run, "audit", "tail")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.split("\n")
    assert lines[-1] == "" and len(lines) == 4, shown.stdout  # the header and one row per call, nothing forged
    for raw in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\x7f"):
        assert raw not in shown.stdout, repr(raw)
    assert "evil\\x1b[2J" in lines[1] and "kitchen/evil\\x1b[2J\\x1b]0;owned\\x07\\nfake" in lines[2]
    assert "\\u202e" in lines[2]  # in the arguments, escaped too


def test_a_secret_across_the_cut_of_a_long_string_is_hidden_whole() -> None:
    token = "sk-" + "Q" * 40
    for offset in (-30, -3, 0, 5):  # the token starting before, at and after the cut
        text = "x" * (MAX_STRING_CHARS + offset) + " " + token + " " + "y" * 50_000
        cut = Redactor()({"content": text})["content"]
        assert "sk-Q" not in cut and "QQQQ" not in cut, offset
        assert cut.endswith(f"…[+{len(text) - MAX_STRING_CHARS} chars]")


@pytest.mark.anyio
async def test_every_record_is_one_line_for_any_reader_and_safe_to_cat(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    odd = "a\u2028b\u2029c\x85d\x9b31m\u202eexe\x7f\x1b[2J\n"  # line breaks str.splitlines knows, C1, bidi, C0
    async with AuditLog(path) as log:
        for _ in range(3):
            await log.record(
                server="s", tool=odd, arguments={"q": odd}, duration_ms=1.0, outcome="ok", client=f"agent {odd}"
            )
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()  # what Python (and JavaScript's line readers) take for lines
    assert len(lines) == 3
    for raw in ("\u2028", "\u2029", "\x85", "\x9b", "\u202e", "\x7f", "\x1b", "\r"):
        assert raw not in text, repr(raw)
    assert all(json.loads(line)["tool"] == odd and json.loads(line)["arguments"] == {"q": odd} for line in lines)
