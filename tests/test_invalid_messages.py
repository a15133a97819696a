"""Lines that are not valid JSON-RPC messages get their JSON-RPC error, on stdio and over HTTP, and
the gateway goes on serving: a real `toolscout serve` fed raw bytes.

Before, on stdio, the SDK dropped such a line, and a client waiting on the request's id waited forever.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import pytest
from benchmarks.processes import SERVE_READY, running

from tests.helpers.paths import PYTHON
from toolscout.serve.stdio import top_level_id

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
DEEP = 100_000
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def deep(request_id: int) -> str:
    """A ping whose params nest `DEEP` arrays deep (the id comes first)."""
    return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "ping", "params": {{"a": {"[" * DEEP}{"]" * DEEP}}}}}'


# Each malformed line, and what it must be answered with: (code, id) per answer.
CASES: dict[str, tuple[str, list[tuple[int, Any]]]] = {
    "batch": (
        json.dumps([{"jsonrpc": "2.0", "id": 10, "method": "ping"}, {"jsonrpc": "2.0", "id": "11", "method": "ping"}]),
        [(INVALID_REQUEST, 10), (INVALID_REQUEST, "11")],
    ),
    "jsonrpc 1.0": (json.dumps({"jsonrpc": "1.0", "id": 12, "method": "ping"}), [(INVALID_REQUEST, 12)]),
    "100k nesting": (deep(13), [(PARSE_ERROR, 13)]),
    "5,000-digit id": ('{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "ping"}', [(PARSE_ERROR, None)]),
    "method not a string": (json.dumps({"jsonrpc": "2.0", "id": 14, "method": 5}), [(INVALID_REQUEST, 14)]),
    "params not an object": (
        json.dumps({"jsonrpc": "2.0", "id": 15, "method": "tools/list", "params": "all"}),
        [(INVALID_REQUEST, 15)],
    ),
    "id a float": (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}), [(INVALID_REQUEST, None)]),
    "id a boolean": (json.dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}), [(INVALID_REQUEST, None)]),
    "not JSON": ("hello", [(PARSE_ERROR, None)]),
    "JSON cut short": ('{"jsonrpc": "2.0", "id": 16, "method": "ping", "params": {', [(PARSE_ERROR, 16)]),
    "a malformed response": (json.dumps({"jsonrpc": "1.0", "id": 17, "result": {}}), []),  # never answered
}


def serve_over_stdio(tmp_path: Path, lines: list[str]) -> tuple[list[dict[str, Any]], str]:
    """`toolscout serve` (no upstreams) fed `lines` after the handshake and a closing ping (id 99):
    its answers (but the handshake's) and its stderr."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
    raw = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), *lines, json.dumps(ping)]
    done = subprocess.run(
        [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--log-level", "debug"],
        input="".join(line + "\n" for line in raw).encode(),
        capture_output=True,
        env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
        check=False,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answers[0]["id"] == 1 and "result" in answers[0], answers[0]
    return answers[1:], stderr


def test_each_malformed_request_on_stdio_gets_its_json_rpc_error_and_serving_goes_on(tmp_path: Path) -> None:
    answers, stderr = serve_over_stdio(tmp_path, [line for line, _ in CASES.values()])
    assert "Traceback" not in stderr, stderr
    assert {"jsonrpc": "2.0", "id": 99, "result": {}} in answers  # still serving after them all
    errors = [answer for answer in answers if answer["id"] != 99]
    assert all(set(e) == {"jsonrpc", "id", "error"} and e["error"]["message"] for e in errors), errors
    got = Counter((e["error"]["code"], json.dumps(e["id"])) for e in errors)
    expected = Counter((code, json.dumps(request_id)) for _, want in CASES.values() for code, request_id in want)
    assert got == expected, [(name, e) for name, e in zip(CASES, errors, strict=False)]


def test_the_id_of_an_object_too_deep_to_parse_is_read_in_one_pass_without_recursion() -> None:
    nested = "[" * DEEP + "]" * DEEP
    assert top_level_id(deep(7)) == 7
    assert top_level_id(f'{{"params": {{"id": 1, "a": {nested}}}, "id": "x\\u0041"}}') == "xA"  # only the top level's
    assert top_level_id('{"id": 12345678901234567890}') is None  # longer than MAX_ID_DIGITS
    assert top_level_id('{"id": 1.5}') is None
    assert top_level_id('{"a": "never closed') is None
    assert top_level_id(nested) is None


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_http_face_answers_the_same_lines_with_a_json_rpc_error(tmp_path: Path, era: str) -> None:
    # The SDK's own answers, checked: every one a JSON-RPC error, none a crash; the gateway serves on.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--transport", "http", "--port", "0"]
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": era,
    }
    async with running(command, ready=SERVE_READY) as served, httpx2.AsyncClient(timeout=60) as http:
        url = served.match.group(1)
        for name, (line, want) in CASES.items():
            if not want:
                continue  # a response posted alone: the SDK accepts it (202), as the spec has it
            response = await http.post(url, content=line.encode(), headers=headers)
            assert 400 <= response.status_code < 500, (name, response.status_code, response.text)
            body = response.json()
            assert body["jsonrpc"] == "2.0" and body["id"] in (None, want[0][1]), (name, body)
            assert body["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS), (name, body)
        # Still serving: a well-formed handshake goes through.
        response = await http.post(url, json=INITIALIZE, headers={**headers, "MCP-Protocol-Version": "2025-11-25"})
        assert response.status_code == 200, response.text
    assert "Traceback" not in "\n".join(served.stderr), served.stderr
