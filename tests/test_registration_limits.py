"""Registrations are bounded and cheap, on a real `toolscout serve --transport http`
child: a flood stops at `registry.maxRegistrationsPerNamespace` and `registry.maxRegistrations` with a
429 naming the limit (through the API, the command line with `--url` and the command line writing the
local registry alike), and what one registration does in the gateway does not grow with how many
there are (counted from the gateway's own debug lines, never timed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from benchmarks.processes import free_port, served_gateway, servers, write_config
from mcp import Client

from tests.helpers.paths import PYTHON

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ip": {"type": "string"}}}


def tool_body(namespace: str, name: str, url: str) -> dict[str, Any]:
    description = "Look an IP address up."
    return {"namespace": namespace, "name": name, "description": description, "inputSchema": SCHEMA, "callbackUrl": url}


async def cli(*args: str) -> tuple[int, str, str]:
    done = await anyio.run_process([PYTHON, "-m", "toolscout", *args], check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_a_registration_flood_stops_at_the_limits_named_in_the_refusal(tmp_path: Path) -> None:
    limits = {"maxRegistrationsPerNamespace": 4, "maxRegistrations": 6}
    config = write_config(tmp_path, registry={"path": str(tmp_path / "registry.sqlite3"), **limits})
    url = f"http://127.0.0.1:{free_port()}/tool"
    async with served_gateway(config) as gateway, Client(gateway.mcp_url) as client:
        for n in range(4):
            created = await gateway.api("POST", "/registry/tools", tool_body("run-1", f"t{n}", url))
            assert created.status_code == 201, created.text
        over = await gateway.api("POST", "/registry/tools", tool_body("run-1", "t4", url))
        assert over.status_code == 429, over.text
        assert over.json()["error"]["code"] == "TOO_MANY_REGISTRATIONS"
        message = over.json()["error"]["message"]
        assert "namespace 'run-1' already has 4 registrations" in message
        assert "registry.maxRegistrationsPerNamespace: 4" in message
        server = {"namespace": "run-1", "name": "s", "url": f"http://127.0.0.1:{free_port()}/mcp"}
        assert (await gateway.api("POST", "/registry/servers", server)).status_code == 429  # servers count too
        # Re-registering replaces: never refused, at the limit or not.
        assert (await gateway.api("POST", "/registry/tools", tool_body("run-1", "t0", url))).status_code == 201

        for n in range(2):
            created = await gateway.api("POST", "/registry/tools", tool_body("run-2", f"t{n}", url))
            assert created.status_code == 201, created.text
        over = await gateway.api("POST", "/registry/tools", tool_body("run-3", "t0", url))
        assert over.status_code == 429, over.text
        assert "the registry already has 6 registrations" in over.json()["error"]["message"]
        assert "registry.maxRegistrations: 6" in over.json()["error"]["message"]

        # The command line says the same, through the gateway and writing the local registry itself.
        add = ["registry", "add-tool", "t9", "-n", "run-3", "--callback-url", url, "--description", "Look it up."]
        code, _, err = await cli(*add, "--url", gateway.base_url)
        assert code != 0, err
        assert "registry.maxRegistrations: 6" in err
        code, _, err = await cli(*add, "--config", str(config))
        assert code == 1, err
        assert "registry.maxRegistrations: 6" in err
        assert "Traceback" not in err

        # Removing one makes room again; and the gateway answered its clients all along.
        assert (await gateway.api("DELETE", "/registry/tools/run-2/t1")).status_code == 204
        assert (await gateway.api("POST", "/registry/tools", tool_body("run-3", "t0", url))).status_code == 201
        listed = await servers(client)
        assert {"units", "run-1.t0", "run-1.t3", "run-2.t0", "run-3.t0"} <= set(listed)
        assert "run-1.t4" not in listed
    assert "Traceback" not in "\n".join(gateway.process.stderr)


APPLIED = re.compile(r"registration (\S+) applied: (\d+) read from the registry; (.*)$")


def applied_lines(stderr: list[str]) -> list[tuple[str, ...]]:
    return [m.groups() for line in stderr if (m := APPLIED.search(line))]


async def test_what_a_registration_does_does_not_grow_with_their_number(tmp_path: Path) -> None:
    """Each POST reads at most the entries under its own name and starts its own upstream only,
    whether it is the first registration or the 60th (on main, each one re-read and compared all)."""
    count = 60
    config = write_config(tmp_path, registry={"path": str(tmp_path / "registry.sqlite3"), "maxRegistrations": 100})
    url = f"http://127.0.0.1:{free_port()}/tool"
    async with served_gateway(config, "--log-level", "debug") as gateway:
        for n in range(count):
            namespace = f"run-{n % 3}"  # (the per-namespace limit, 50, is not in the way)
            created = await gateway.api("POST", "/registry/tools", tool_body(namespace, f"t{n}", url))
            assert created.status_code == 201, created.text
        # Re-registering one reads the one entry it replaces, and restarts nothing (only its life changed).
        assert (await gateway.api("POST", "/registry/tools", tool_body("run-0", "t0", url))).status_code == 201
        assert (await gateway.api("DELETE", "/registry/tools/run-1/t1")).status_code == 204
        with anyio.fail_after(30):  # the log is written by a thread of its own: its last lines may lag
            while len(applied := applied_lines(gateway.process.stderr)) < count + 2:  # noqa: ASYNC110 - a child's log
                await anyio.sleep(0.05)
    assert applied[:count] == [(f"run-{n % 3}.t{n}", "0", f"added run-{n % 3}.t{n}") for n in range(count)]
    assert applied[count:] == [("run-0.t0", "1", "no change"), ("run-1.t1", "0", "removed run-1.t1")]


def test_the_limits_are_in_the_config_and_checked() -> None:
    from pydantic import ValidationError

    from toolscout.config.models import GatewayConfig

    config = GatewayConfig.model_validate({"registry": {"maxRegistrationsPerNamespace": 3, "maxRegistrations": 9}})
    assert (config.registry.max_registrations_per_namespace, config.registry.max_registrations) == (3, 9)
    assert GatewayConfig().registry.max_registrations == 500
    with pytest.raises(ValidationError):
        GatewayConfig.model_validate({"registry": {"maxRegistrations": 0}})
    assert json.dumps(GatewayConfig().registry.max_registrations_per_namespace) == "50"
