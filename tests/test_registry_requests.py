"""Registration bodies (the HTTP API's and the CLI's): what is accepted, what is refused and how the
refusal reads, and which names clash."""

from __future__ import annotations

from typing import Any

import pytest

from toolscout.registry.base import DEFAULT_REGISTRATION_TTL, ServerRegistration, ToolRegistration
from toolscout.registry.requests import (
    MAX_TTL_SECONDS,
    RegistrationRefused,
    name_taken,
    public_view,
    server_registration,
    tool_registration,
)

NOW = 1_000_000.0
SERVER: dict[str, Any] = {
    "namespace": "run-1",
    "name": "aws-mcp-group-aws-cloudtrail",
    "url": "http://127.0.0.1:9001/mcp",
}
TOOL: dict[str, Any] = {
    "namespace": "run-1",
    "name": "abuseipdb",
    "description": "Check an IP.",
    "inputSchema": {"type": "object", "properties": {"ip": {"type": "string"}}},
    "callbackUrl": "https://worker.internal/abuseipdb",
}


def test_a_server_registration_takes_its_defaults() -> None:
    registration = server_registration(SERVER, now=NOW)
    assert registration == ServerRegistration(
        namespace="run-1",
        name="aws-mcp-group-aws-cloudtrail",
        url="http://127.0.0.1:9001/mcp",
        transport="http",
        headers={},
        description=None,
        expires_at=NOW + DEFAULT_REGISTRATION_TTL,
        created_at=NOW,
    )


def test_a_server_registration_with_every_key() -> None:
    body = {
        **SERVER,
        "headers": {"Authorization": "Bearer s3cret-value"},
        "description": "CloudTrail",
        "ttlSeconds": 60,
        "transport": "sse",
    }
    registration = server_registration(body, now=NOW)
    assert registration.transport == "sse"
    assert (registration.expires_at, registration.description) == (NOW + 60, "CloudTrail")
    view = public_view(registration)
    assert view["headers"] == ["Authorization"]  # never a header's value
    assert "s3cret" not in repr(view)
    assert view["shownAs"] == "run-1.aws-mcp-group-aws-cloudtrail"


def test_an_sse_url_is_sse_unless_told_otherwise() -> None:
    assert server_registration({**SERVER, "url": "http://h:1/sse"}).transport == "sse"
    assert server_registration({**SERVER, "url": "http://h:1/sse", "transport": "http"}).transport == "http"


def test_global_registration() -> None:
    body = {k: v for k, v in SERVER.items() if k != "namespace"}
    assert server_registration({**body, "global": True}).namespace is None
    assert public_view(server_registration({**body, "global": True}))["shownAs"] == SERVER["name"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"namespace": None}, '"namespace" is required'),
        ({"global": True}, 'either "namespace" or "global": true, not both'),
        ({"global": "yes"}, '"global" must be true or false'),
        ({"namespace": "run.1"}, '"namespace" must be 1-64 letters'),
        ({"namespace": 7}, '"namespace" must be 1-64 letters'),
        ({"name": "a b"}, '"name" must be 1-64 letters'),
        ({"name": "x" * 65}, '"name" must be 1-64 letters'),
        ({"url": "ftp://h/mcp"}, '"url" must be an http:// or https:// URL'),
        ({"url": None}, '"url" must be an http:// or https:// URL'),
        ({"headers": {"a": 1}}, '"headers" must be an object'),
        ({"headers": ["a"]}, '"headers" must be an object'),
        ({"transport": "stdio"}, '"transport" must be "http"'),
        ({"ttlSeconds": 0}, '"ttlSeconds" must be a number of seconds above 0'),
        ({"ttlSeconds": "60"}, '"ttlSeconds" must be'),
        ({"ttlSeconds": True}, '"ttlSeconds" must be'),
        ({"ttlSeconds": MAX_TTL_SECONDS + 1}, '"ttlSeconds" must be'),
        ({"description": 3}, '"description" must be a string'),
        ({"endpoint": "http://h/mcp"}, "unknown key(s) endpoint; the keys are description, global, headers"),
    ],
)
def test_a_bad_server_body_is_refused_saying_what_to_send(change: dict[str, Any], said: str) -> None:
    body = {k: v for k, v in {**SERVER, **change}.items() if v is not None or k not in ("namespace",)}
    with pytest.raises(RegistrationRefused) as refused:
        server_registration(body)
    assert said in str(refused.value)


def test_a_tool_registration() -> None:
    registration = tool_registration(TOOL, now=NOW)
    assert registration == ToolRegistration(
        namespace="run-1",
        name="abuseipdb",
        description="Check an IP.",
        input_schema=TOOL["inputSchema"],
        callback_url="https://worker.internal/abuseipdb",
        expires_at=NOW + DEFAULT_REGISTRATION_TTL,
        created_at=NOW,
    )
    assert public_view(registration)["callbackUrl"] == "https://worker.internal/abuseipdb"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"inputSchema": None}, '"inputSchema" must be a JSON Schema object with "type": "object"'),
        ({"inputSchema": {"type": "string"}}, '"type": "object"'),
        ({"inputSchema": {"type": "object", "properties": {"ip": {"type": "strin"}}}}, "not a valid JSON Schema"),
        ({"inputSchema": {"type": "object", "required": "ip"}}, "not a valid JSON Schema"),
        ({"description": ""}, '"description" must be a string (not empty)'),
        ({"description": None}, '"description" must be a string (not empty)'),
        ({"callbackUrl": "worker/abuseipdb"}, '"callbackUrl" must be an http:// or https:// URL'),
        ({"url": "http://h/"}, "unknown key(s) url"),
    ],
)
def test_a_bad_tool_body_is_refused_saying_what_to_send(change: dict[str, Any], said: str) -> None:
    with pytest.raises(RegistrationRefused) as refused:
        tool_registration({**TOOL, **change})
    assert said in str(refused.value)


def test_names_clash_with_configured_servers_and_with_the_other_kind_only() -> None:
    server = server_registration(SERVER)
    tool = tool_registration({**TOOL, "name": SERVER["name"]})
    other_namespace = tool_registration({**TOOL, "namespace": "run-2", "name": SERVER["name"]})
    assert name_taken(server, configured=set(), servers=[server], tools=[other_namespace]) is None  # a replacement
    said = name_taken(server, configured=set(), servers=[], tools=[tool])
    assert said is not None
    assert "'run-1.aws-mcp-group-aws-cloudtrail' is already registered as a callback tool" in said
    said = name_taken(tool, configured=set(), servers=[server], tools=[])
    assert said is not None
    assert "already registered as a server" in said
    glob = server_registration({"global": True, "name": "notes", "url": "http://h/mcp"})
    said = name_taken(glob, configured={"notes"}, servers=[], tools=[])
    assert said is not None
    assert "'notes' is the name of a configured server" in said
    namespaced = server_registration({**SERVER, "name": "notes"})
    assert name_taken(namespaced, configured={"notes"}, servers=[], tools=[]) is None  # shown as run-1.notes
