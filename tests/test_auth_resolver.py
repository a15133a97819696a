"""The bearer resolver, the rate limiter, token requests, the `auth` config and its masking, and the
audit line's label and namespace: real objects (a real SQLite registry, Starlette requests), clocks
the tests move by hand where expiry and rates are concerned."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request

from toolscout.config.http import AuthConfig
from toolscout.config.loader import check_config_text, parse_config
from toolscout.config.scopes import UNSCOPED, Scope, scoped
from toolscout.config.secrets import config_secrets, mask_auth
from toolscout.errors import ConfigurationError
from toolscout.gateway.audit import AuditLog
from toolscout.masking import MASK, mask_text
from toolscout.registry.requests import TokenRequestError, issue_token, token_request
from toolscout.registry.sqlite import SqliteRegistry
from toolscout.serve.auth import (
    TOKEN_RECHECK_SECONDS,
    TOKENS_CHECK_SECONDS,
    BearerPrincipals,
    Principal,
    PrincipalRefused,
    RateLimiter,
)

pytestmark = pytest.mark.anyio

ADMIN = "admin-key-0123456789abcdef"
CLIENT = "client-key-0123456789abcdef"
AUTH = AuthConfig.model_validate(
    {
        "adminKeys": [ADMIN],
        "keys": [
            {
                "key": CLIENT,
                "label": "ci",
                "namespace": "default",
                "servers": ["notes", "aws-mcp-group"],
                "tools": ["!*delete*"],
                "pinnedTools": ["notes/create_note"],
                "requestsPerMinute": 2,
            }
        ],
    }
)
KEY = bytes(32)
"""A tagging key for tokens made without a registry."""
TOKEN_REQUEST: dict[str, Any] = {"namespace": "run-1", "servers": ["notes"], "ttlSeconds": 60, "label": "run one"}


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def request(credential: str | None = None, path: str = "/mcp", scheme: str = "Bearer") -> Request:
    headers = [(b"authorization", f"{scheme} {credential}".encode())] if credential is not None else []
    return Request({"type": "http", "method": "POST", "path": path, "headers": headers, "client": ("10.0.0.9", 5)})


async def refusal(principals: BearerPrincipals, req: Request) -> tuple[int, dict[str, str], dict[str, Any]]:
    with pytest.raises(PrincipalRefused) as caught:
        await principals.resolve(req)
    response: Any = caught.value.response
    return response.status_code, dict(response.headers), json.loads(response.body)


async def test_admin_and_client_keys_are_their_principals() -> None:
    principals = BearerPrincipals(AUTH)
    admin = await principals.resolve(request(ADMIN))
    assert admin.admin and admin.scope == UNSCOPED and admin.address == "10.0.0.9"
    client = await principals.resolve(request(CLIENT))
    assert not client.admin
    assert client.scope == Scope.of(
        namespace="default",
        servers=["notes", "aws-mcp-group"],
        tools=["!*delete*"],
        pinned_tools=["notes/create_note"],
        label="ci",
    )
    assert client.subject is not None and CLIENT not in client.subject and ADMIN not in (admin.subject or "")


async def test_a_missing_or_wrong_credential_is_401_in_the_shape_of_each_path() -> None:
    principals = BearerPrincipals(AUTH)
    status, headers, body = await refusal(principals, request())
    challenge = headers["www-authenticate"]
    assert status == 401 and challenge.startswith('Bearer realm="toolscout", error_description="')
    assert "error=" not in challenge and "Authorization: Bearer <credential>" in challenge  # shown by OAuth clients
    assert body["error"] == "invalid_token" and "Authorization: Bearer" in body["error_description"]
    # Another scheme is no bearer credential at all.
    status, headers, _ = await refusal(principals, request(ADMIN, scheme="Basic"))
    assert status == 401 and "error=" not in headers["www-authenticate"]
    status, headers, body = await refusal(principals, request("not-a-key-at-all"))
    challenge = headers["www-authenticate"]
    assert status == 401 and challenge.startswith('Bearer realm="toolscout", error="invalid_token", error_description=')
    assert "bearer credential is not valid" in challenge
    assert "not-a-key-at-all" not in json.dumps(body)
    # The API's own error shape off /mcp.
    status, headers, body = await refusal(principals, request("ts_unknown", path="/api/v1/tokens"))
    assert status == 401 and body["error"]["code"] == "UNAUTHORIZED"
    assert headers["www-authenticate"].startswith("Bearer")


async def test_tokens_expire_and_are_revoked_on_the_next_request(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "registry.sqlite3")
    wall, mono = Clock(), Clock()
    principals = BearerPrincipals(AUTH, registry, clock=wall, monotonic=mono)
    record, secret = await issue_token(registry, {**TOKEN_REQUEST, "ttlSeconds": 10}, now=wall.now)
    seen = await principals.resolve(request(secret))
    assert not seen.admin and seen.scope == record.scope() and seen.scope.label == "run one"
    # Expiry: the record is cached, yet the very next request after the expiry is refused.
    wall.now += 9.999
    await principals.resolve(request(secret))
    wall.now += 0.001
    status, headers, _ = await refusal(principals, request(secret))
    assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]

    # Revocation through this gateway (the API tells the resolver): refused at once, cache or not.
    other, other_secret = await issue_token(registry, TOKEN_REQUEST, now=wall.now)
    await principals.resolve(request(other_secret))
    assert await registry.revoke_token(other.id)
    principals.token_revoked(other.id)
    assert (await refusal(principals, request(other_secret)))[0] == 401

    # Revocation by another process sharing the file: seen once the cached record is re-read.
    third, third_secret = await issue_token(registry, TOKEN_REQUEST, now=wall.now)
    await principals.resolve(request(third_secret))
    assert await SqliteRegistry(registry.path).revoke_token(third.id)
    mono.now += TOKEN_RECHECK_SECONDS
    assert (await refusal(principals, request(third_secret)))[0] == 401


async def test_authentication_turns_on_once_the_registry_holds_a_token(tmp_path: Path) -> None:
    registry = SqliteRegistry(tmp_path / "registry.sqlite3")
    mono = Clock()
    principals = BearerPrincipals(AuthConfig(), registry, monotonic=mono)
    assert not await principals.check_tokens()
    anonymous = await principals.resolve(request())
    assert anonymous == Principal(address="10.0.0.9", admin=True)
    # Another process issues a token: within TOKENS_CHECK_SECONDS no request goes without one.
    _, secret = await issue_token(SqliteRegistry(registry.path), TOKEN_REQUEST)
    mono.now += TOKENS_CHECK_SECONDS
    assert (await refusal(principals, request()))[0] == 401
    assert not (await principals.resolve(request(secret))).admin
    assert principals.on
    # A gateway started with a token in its registry authenticates from the first request.
    restarted = BearerPrincipals(AuthConfig(), registry)
    assert await restarted.check_tokens()


async def test_a_principal_over_its_rate_gets_429_with_retry_after() -> None:
    mono = Clock()
    principals = BearerPrincipals(AUTH, monotonic=mono)
    await principals.resolve(request(CLIENT))
    await principals.resolve(request(CLIENT))
    status, headers, body = await refusal(principals, request(CLIENT))
    assert status == 429 and headers["retry-after"] == "30"  # 2 a minute: one more in 30 s
    assert body["error"]["code"] == -32000 and "requestsPerMinute" in body["error"]["message"]
    status, _, body = await refusal(principals, request(CLIENT, path="/api/v1/tokens"))
    assert status == 429 and body["error"]["code"] == "RATE_LIMITED"
    # Admin keys have no rate; the client's bucket refills with time.
    await principals.resolve(request(ADMIN))
    mono.now += 30
    await principals.resolve(request(CLIENT))


def test_the_rate_limiter_refills_continuously_up_to_a_minute() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    assert [limiter.take("a", 60) for _ in range(60)] == [None] * 60
    assert limiter.take("a", 60) == 1
    assert limiter.take("b", 60) is None  # buckets are per principal
    clock.now += 0.5
    assert limiter.take("a", 60) == 1  # half a request back: still one second to wait
    clock.now += 0.5
    assert limiter.take("a", 60) is None
    clock.now += 3600
    assert [limiter.take("a", 60) for _ in range(61)].count(None) == 60  # never more than a minute's worth


def test_token_requests_are_checked_field_by_field() -> None:
    record, secret = token_request({**TOKEN_REQUEST, "tools": ["!*delete*"], "pinnedTools": ["notes/a"]}, 100.0, KEY)
    assert secret.startswith("ts_") and record.expires_at == 160.0 and record.secret_hash != secret
    assert secret not in json.dumps(record.public()) and "secret" not in json.dumps(record.public()).lower()
    bad: list[tuple[dict[str, Any], str]] = [
        ({**TOKEN_REQUEST, "ttl": 5}, "unknown field 'ttl'"),
        ({**TOKEN_REQUEST, "namespce": "x"}, "did you mean 'namespace'"),
        ({k: v for k, v in TOKEN_REQUEST.items() if k != "namespace"}, "namespace is required"),
        ({**TOKEN_REQUEST, "namespace": "a.b"}, "namespace 'a.b' must be"),
        ({**TOKEN_REQUEST, "servers": []}, "at least one server"),
        ({**TOKEN_REQUEST, "servers": "notes"}, "servers must be a list"),
        ({**TOKEN_REQUEST, "ttlSeconds": 0}, "ttlSeconds must be a positive"),
        ({**TOKEN_REQUEST, "ttlSeconds": -3}, "ttlSeconds must be a positive"),
        ({**TOKEN_REQUEST, "ttlSeconds": True}, "ttlSeconds must be a positive"),
        ({**TOKEN_REQUEST, "ttlSeconds": 10**9}, "at most"),
        ({k: v for k, v in TOKEN_REQUEST.items() if k != "ttlSeconds"}, "ttlSeconds is required"),
        ({**TOKEN_REQUEST, "label": ""}, "label is required"),
        ({**TOKEN_REQUEST, "label": "a\nb"}, "control characters"),
        ({**TOKEN_REQUEST, "tools": ["/[/"]}, "tools"),
        ({**TOKEN_REQUEST, "tools": [{"pattern": ["x"], "nope": 1}]}, "tools:"),
        ({**TOKEN_REQUEST, "pinnedTools": ["create_note"]}, "server/tool"),
        ({**TOKEN_REQUEST, "requestsPerMinute": 0}, "requestsPerMinute"),
    ]
    for data, expected in bad:
        with pytest.raises(TokenRequestError, match=expected.replace("(", r"\(")):
            token_request(data, 0.0, KEY)


def _config(auth: dict[str, Any], env: dict[str, str]) -> Any:
    return parse_config(json.dumps({"auth": auth}), "json", "test.json", env)


def test_auth_config_errors_are_clear_and_never_echo_a_key() -> None:
    short = "short-secret"
    cases: list[tuple[dict[str, Any], dict[str, str], str]] = [
        ({"adminKeys": ["${MISSING_KEY}"]}, {}, "auth.adminKeys[0]: environment variable MISSING_KEY is not set"),
        ({"adminKeys": [short]}, {}, "at least 16 characters"),
        ({"keys": [{"key": short, "label": "x", "namespace": "n"}]}, {}, "at least 16 characters"),
        ({"adminKeys": [ADMIN, ADMIN]}, {}, "configured twice"),
        ({"keys": [{"key": CLIENT, "label": "x", "namespace": "a b"}]}, {}, "auth.keys[0] (x): namespace 'a b'"),
        ({"keys": [{"key": CLIENT, "label": "x", "namespace": "n", "tools": ["/[/"]}]}, {}, "auth.keys[0].tools"),
        ({"keys": [{"key": CLIENT, "label": "x", "namespace": "n", "pinnedTools": ["x"]}]}, {}, "server/tool"),
        ({"keys": [{"key": CLIENT, "label": "x", "namespace": "n", "tools": [{"pattern": []}]}]}, {}, "auth.keys[0]"),
        ({"adminKey": [ADMIN]}, {}, "did you mean 'adminKeys'"),
    ]
    for auth, env, expected in cases:
        with pytest.raises(ConfigurationError) as caught:
            _config(auth, env)
        assert expected in caught.value.message, caught.value.message
        assert short not in caught.value.message and ADMIN not in caught.value.message


def test_configured_keys_are_masked_everywhere() -> None:
    env = {"TOOLSCOUT_ADMIN_KEY": ADMIN, "CI_AGENT_KEY": CLIENT}
    written = {
        "adminKeys": ["${TOOLSCOUT_ADMIN_KEY}"],
        "keys": [{"key": "${CI_AGENT_KEY}", "label": "ci", "namespace": "default"}],
    }
    config = _config(written, env)
    assert {ADMIN, CLIENT} <= config_secrets(config)
    dumped = config.model_dump(by_alias=True, exclude_none=True)["auth"]
    shown = json.dumps(mask_auth(dumped, written))
    assert "${TOOLSCOUT_ADMIN_KEY}" in shown and "${CI_AGENT_KEY}" in shown and ADMIN not in shown
    literal = mask_auth(dumped, {"adminKeys": [ADMIN], "keys": [{"key": CLIENT}]})
    assert literal["adminKeys"] == [MASK] and literal["keys"][0]["key"] == MASK
    # Issued tokens have a shape of their own, masked wherever text is.
    _, secret = token_request(TOKEN_REQUEST, time.time(), KEY)
    assert secret not in mask_text(f"got Authorization {secret} from a client")


async def test_audit_lines_carry_the_label_and_namespace_never_the_credential(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    async with audit:
        await audit.record(server="notes", tool="t", arguments={}, duration_ms=1, outcome="ok")
        with scoped(Scope.of(namespace="run-1", servers=["notes"], label="run one")):
            await audit.record(server="notes", tool="t", arguments={}, duration_ms=1, outcome="ok")
    plain, labelled = (json.loads(line) for line in audit.path.read_text().splitlines())
    assert "label" not in plain and "namespace" not in plain
    assert (labelled["label"], labelled["namespace"]) == ("run one", "run-1")


def test_a_config_with_unset_key_variables_is_still_checked_and_edited(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that only read or edit the file (`token` without `--url`, `config show`) do not need
    the keys' variables set where they run."""
    for name in ("TOOLSCOUT_ADMIN_KEY", "CI_AGENT_KEY", "K"):
        monkeypatch.delenv(name, raising=False)
    text = json.dumps(
        {
            "auth": {
                "adminKeys": ["${TOOLSCOUT_ADMIN_KEY}", "${K}"],
                "keys": [{"key": "${CI_AGENT_KEY}", "label": "ci", "namespace": "default"}],
            }
        }
    )
    config = check_config_text(text, "json", "test.json")
    assert len(config.auth.admin_keys) == 2 and len(config.auth.keys) == 1


async def test_a_tokens_own_rate_applies_to_it_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    registry = SqliteRegistry(tmp_path / "registry.sqlite3")
    principals = BearerPrincipals(AUTH, registry)
    _, slow = await issue_token(registry, {**TOKEN_REQUEST, "requestsPerMinute": 1})
    _, fast = await issue_token(registry, TOKEN_REQUEST)
    await principals.resolve(request(slow))
    status, headers, _ = await refusal(principals, request(slow))
    assert status == 429 and headers["retry-after"] == "60"
    for _ in range(5):
        await principals.resolve(request(fast))
    # Refusals are logged (once a minute per address), the credential never.
    assert any("over the rate of run one" in r.getMessage() for r in caplog.records)
    assert all(slow not in r.getMessage() for r in caplog.records)


async def test_a_registry_that_cannot_be_read_is_503_not_a_crash() -> None:
    principals = BearerPrincipals(AUTH, SqliteRegistry(Path("/proc/no-such-dir/registry.sqlite3")))
    status, headers, body = await refusal(principals, request("ts_" + "x" * 43))
    assert status == 503 and headers["retry-after"] == "1" and "try again" in body["error"]["message"]
    assert (await principals.resolve(request(ADMIN))).admin  # keys need no registry
