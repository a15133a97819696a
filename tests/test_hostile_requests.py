"""Hostile admin API requests, on a real `toolscout serve --transport http` child:
a URL or header with CR/LF in a registration, and a body nested 100,000 deep, are each a 400 naming
the problem (never 201, 500 or a misleading 503), with no traceback in the gateway's log; the
command line refuses the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.processes import served_gateway, write_config

from tests.helpers.paths import PYTHON
from toolscout.serve.api import MAX_BODY_DEPTH

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
INJECTED = ["http://127.0.0.1:9/mcp\r\nX-Injected: 1", "http://127.0.0.1:9/mcp\nHost: elsewhere", "http://a\r/b"]


async def cli(*args: str) -> tuple[int, str, str]:
    done = await anyio.run_process([PYTHON, "-m", "toolscout", *args], check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_a_url_or_header_with_cr_or_lf_is_refused_naming_the_problem(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    async with served_gateway(config) as gateway:
        for url in INJECTED:
            server = {"namespace": "run-1", "name": "s", "url": url}
            tool = {"namespace": "run-1", "name": "t", "description": "d", "inputSchema": SCHEMA, "callbackUrl": url}
            for path, body, key in (("/registry/servers", server, "url"), ("/registry/tools", tool, "callbackUrl")):
                answer = await gateway.api("POST", path, body)
                assert answer.status_code == 400, (url, answer.text)
                message = answer.json()["error"]["message"]
                assert f'"{key}" must not contain control characters' in message
                assert "percent-encode them" in message
        header = {"namespace": "run-1", "name": "s", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "1\r\nX-B: 2"}}
        answer = await gateway.api("POST", "/registry/servers", header)
        assert answer.status_code == 400, answer.text
        assert "must not contain control characters" in answer.json()["error"]["message"]
        listed = await gateway.api("GET", "/registry/servers")
        assert listed.json()["servers"] == []
        code, _, err = await cli("registry", "add", "s", INJECTED[0], "-n", "run-1", "--config", str(config))
        assert code == 1
        assert '"url" must not contain control characters' in err
    assert "Traceback" not in "\n".join(gateway.process.stderr)


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("path", ["/tokens", "/registry/servers", "/registry/tools"])
async def test_a_body_nested_too_deep_is_a_400_naming_the_problem(tmp_path: Path, path: str) -> None:
    async with served_gateway(write_config(tmp_path)) as gateway:
        for body in (b"[" * 100_000 + b"]" * 100_000, nested(100_000), nested(MAX_BODY_DEPTH + 1)):
            answer = await gateway.api("POST", path, content=body)
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"] == {
                "code": "INVALID_JSON",
                "message": f"the request body nests objects and arrays more than {MAX_BODY_DEPTH} deep",
            }
        # Deep but within the limit: read, and judged on what it says.
        answer = await gateway.api("POST", path, content=nested(MAX_BODY_DEPTH - 1))
        assert answer.status_code == 400, answer.text
        assert "deep" not in answer.json()["error"]["message"]
    stderr = "\n".join(gateway.process.stderr)
    assert "Traceback" not in stderr
    assert "RecursionError" not in stderr
