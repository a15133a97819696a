"""What the HTTP API and the command line ask of the registry: the one the configuration names, a
token issued from a request, a server or callback tool registered from a request, and the room a
new registration needs.

A token request (`POST /api/v1/tokens`, `toolscout token create`) names the token's namespace,
servers, optional tool rules and pinned tools, its life in seconds, a label and an optional rate. A
registration request (`POST /api/v1/registry/servers` and `/tools`; the CLI builds the same body)
names its namespace or `"global": true`, a name, and the endpoint or callback to reach. Each body is
a pydantic model, checked whole before anything is stored; the first problem, in the order of the
fields, becomes one message saying which field and what to send instead: `TokenRequestError` for a
token, `RegistrationRefused` for a registration (the API answers 400).

A token's secret (`ts_...`, tagged under the registry's key) is returned once, to be shown once;
only its hash is stored. A registration's public view never shows header values, and masks anything
secret-looking in a URL.

How many registrations a registry takes is bounded: at most `registry.maxRegistrationsPerNamespace`
in one namespace and `registry.maxRegistrations` in all, checked before a new one is written (the
HTTP API and the command line alike). Each registration is an upstream the gateway keeps running, so
without a limit anyone holding the admin key could make it hold thousands of connections.
Re-registering an existing name replaces it and is never refused; only live registrations count
against a limit (expired ones not swept yet take no room), and a refusal is one read, never a write.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from toolscout.config.loader import key_hint
from toolscout.config.models import GatewayConfig, check_url, server_kind
from toolscout.config.scopes import NAMESPACE_PATTERN, Scope, qualified_name
from toolscout.masking import mask_text
from toolscout.registry.base import (
    DEFAULT_REGISTRATION_TTL,
    Registry,
    ServerRegistration,
    TokenRecord,
    ToolRegistration,
    new_secret,
    secret_hash,
)
from toolscout.schemas import schema_problem


def registry_location(config: GatewayConfig) -> str:
    """Return where the registry is, for messages (never a password)."""
    if config.registry.backend == "redis" and config.registry.url:
        from toolscout.registry.redis import redis_address

        return f"Redis at {redis_address(config.registry.url)}"
    from toolscout.registry.sqlite import registry_path

    return str(registry_path(config))


@asynccontextmanager
async def open_registry(config: GatewayConfig) -> AsyncGenerator[Registry]:
    """Open the configured registry for the block (Redis: its connection pool, closed after it)."""
    if config.registry.backend == "redis" and config.registry.url:
        from toolscout.registry.redis import RedisRegistry

        async with RedisRegistry(config.registry.url, prefix=config.registry.key_prefix) as registry:
            yield registry
        return
    from toolscout.registry.sqlite import SqliteRegistry, registry_path

    yield SqliteRegistry(registry_path(config))


class _Body(BaseModel):
    """A request body: camelCase keys only, nothing unknown, no value converted from another type."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", strict=True, frozen=True)


def _unknown_keys(exc: ValidationError) -> list[str]:
    return sorted(str(error["loc"][0]) for error in exc.errors() if error["type"] == "extra_forbidden")


RequestBody = _Body
"""For other request bodies (registry/pipeline.py): camelCase keys, nothing unknown, nothing converted."""
unknown_keys = _unknown_keys
"""The keys a request body has that its model does not (sorted)."""


def _validators_words(error: ErrorDetails) -> str | None:
    """Return the message a validator of ours raised, already saying what to send; None for pydantic's own."""
    return error["msg"].removeprefix("Value error, ") if error["type"] == "value_error" else None


def _given(error: ErrorDetails) -> Any:
    """Return what the body held for the field in error (None where it held nothing)."""
    return None if error["type"] == "missing" else error["input"]


# Tokens


MAX_TOKEN_TTL_SECONDS = 366 * 24 * 3600
"""A token lives a year at most: tokens are meant to be short-lived (a run's), and one that is
forgotten should not work for ever."""
MAX_LABEL_CHARS = 100
_LABEL_REQUIRED = "label is required: a name for the token in the audit log and the token list"

_NonEmpty = Annotated[str, Field(min_length=1)]


class TokenRequestError(ValueError):
    """A token request that cannot be issued; the message says what to change."""


class TokenRequest(_Body):
    """The body of a token request, its fields in the order they are checked."""

    namespace: str
    servers: list[_NonEmpty] = Field(min_length=1)
    tools: list[str | dict[str, Any]] = Field(default_factory=list[str | dict[str, Any]])
    pinned_tools: list[_NonEmpty] | None = None
    ttl_seconds: float = Field(gt=0, le=MAX_TOKEN_TTL_SECONDS, allow_inf_nan=False)
    label: str
    requests_per_minute: int | None = Field(default=None, ge=1)
    can_register: bool = False

    @field_validator("tools", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        # Any empty value (null, "", {}) has always meant no tool rules.
        return value or []

    @field_validator("pinned_tools")
    @classmethod
    def _pinned_are_qualified(cls, pinned: list[str] | None) -> list[str] | None:
        for name in pinned or []:
            server, _, tool = name.partition("/")
            if not server or not tool:
                raise ValueError(f"pinnedTools entry {name!r} must be written server/tool")
        return pinned

    @field_validator("label")
    @classmethod
    def _label_is_printable(cls, label: str) -> str:
        if not label.strip():
            raise ValueError(_LABEL_REQUIRED)
        if len(label) > MAX_LABEL_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in label):
            raise ValueError(f"label must be at most {MAX_LABEL_CHARS} characters, without control characters")
        return label


TOKEN_FIELDS = tuple(field.alias or name for name, field in TokenRequest.model_fields.items())
"""The keys of a token request, in the order they are checked and named in a refusal."""


def _token_problem(error: ErrorDetails) -> str:
    """Say what is wrong with one field of a token request, and what to write instead."""
    said = _validators_words(error)
    if said is not None:
        return said
    field, kind, got = str(error["loc"][0]), error["type"], _given(error)
    if field == "namespace":
        return "namespace is required: the run (the pipeline's run id) the token belongs to"
    if field == "servers" and kind == "too_short" and len(error["loc"]) == 1:
        return 'servers must name at least one server (a name, a group prefix, or "*" for all)'
    if field in ("servers", "pinnedTools"):
        return f"{field} must be a list of non-empty strings"
    if field == "tools":
        return 'tools must be a list of patterns ("!*delete*") or toolRules entries'
    if field == "ttlSeconds" and got is None:
        return "ttlSeconds is required: how many seconds the token lives (a run's length)"
    if field == "ttlSeconds" and kind == "less_than_equal":
        return f"ttlSeconds may be at most {MAX_TOKEN_TTL_SECONDS} (366 days), got {got!r}"
    if field == "ttlSeconds":
        return f"ttlSeconds must be a positive number of seconds, got {got!r}"
    if field == "label":
        return _LABEL_REQUIRED
    if field == "canRegister":
        return f"canRegister must be true or false, got {got!r}"
    return f"requestsPerMinute must be a whole number of at least 1, got {got!r}"


def token_request(data: Mapping[str, Any], now: float, key: bytes) -> tuple[TokenRecord, str]:
    """Return the record to store and the secret to show once, for the token `data` asks for, issued
    at `now` and tagged under the registry's `key`.

    Raises:
        TokenRequestError: a field is unknown, missing or wrong.
    """
    try:
        request = TokenRequest.model_validate(dict(data))
    except ValidationError as exc:
        unknown = _unknown_keys(exc)
        if unknown:
            hints = [f"{name!r}{key_hint(name, TOKEN_FIELDS)}" for name in unknown]
            raise TokenRequestError(
                f"unknown field {', '.join(hints)}; a token request has {', '.join(TOKEN_FIELDS)}"
            ) from None
        raise TokenRequestError(_token_problem(exc.errors()[0])) from None
    pinned = request.pinned_tools or []
    try:
        Scope.of(
            namespace=request.namespace,
            servers=request.servers,
            tools=request.tools,
            pinned_tools=pinned,
            label=request.label,
        )
    except ValidationError as exc:
        raise TokenRequestError(f"tools: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    except ValueError as exc:  # the namespace's own message names it; a pattern's does not
        message = str(exc)
        raise TokenRequestError(message if message.startswith("namespace") else f"tools: {message}") from None
    secret = new_secret(key)
    record = TokenRecord(
        id="tok_" + secrets.token_hex(8),
        namespace=request.namespace,
        servers=tuple(request.servers),
        tools=tuple(request.tools),
        pinned_tools=tuple(pinned),
        label=request.label,
        expires_at=now + request.ttl_seconds,
        created_at=now,
        requests_per_minute=request.requests_per_minute,
        secret_hash=secret_hash(secret),
        tagged=True,
        can_register=request.can_register,
    )
    return record, secret


async def issue_token(registry: Registry, data: Mapping[str, Any], now: float | None = None) -> tuple[TokenRecord, str]:
    """Check `data` (`token_request`), store the token in `registry`, and return it with its secret."""
    record, secret = token_request(data, time.time() if now is None else now, await registry.token_key())
    await registry.add_token(record)
    return record, secret


# Registrations


MAX_TTL_SECONDS = 30 * 24 * 3600.0
"""The longest life a registration may ask for (30 days): a forgotten one must still go some day."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SCHEMA_SHAPE = (
    '"inputSchema" must be a JSON Schema object with "type": "object" (the tool\'s arguments), '
    'e.g. {"type": "object", "properties": {"ip": {"type": "string"}}, "required": ["ip"]}'
)


class RegistrationRefused(ValueError):
    """A registration request that cannot be accepted as it is (the API answers 400)."""


class NameClash(RegistrationRefused):
    """A registration whose name is taken by something else (the API answers 409): see `name_taken`."""


class TooManyRegistrations(RegistrationRefused):
    """A new registration over a limit (the API answers 429); the message names the limit and its key."""


def _no_control_characters(key: str, text: str) -> None:
    """Refuse a control character (CR and LF above all: a request split in two) in a URL or a header."""
    found = _CONTROL.search(text)
    if found is not None:
        raise ValueError(
            f'"{key}" must not contain control characters (found {found.group()!r} at position {found.start()}); '
            "percent-encode them (%0D, %0A) if they belong there"
        )


def _endpoint_url(key: str, url: str) -> str:
    """Check an endpoint's URL: no control characters, and http:// or https:// with a host."""
    _no_control_characters(key, url)
    try:
        return check_url(url)
    except ValueError as exc:
        raise ValueError(f'"{key}" {exc}') from None


class _Registration(_Body):
    """What every registration body holds: where it registers, under which name, and for how long."""

    is_global: bool = Field(default=False, alias="global")
    namespace: str | None = Field(default=None, validate_default=True)
    name: str

    @field_validator("namespace", mode="before")
    @classmethod
    def _namespace_or_global(cls, namespace: Any, info: ValidationInfo) -> Any:
        is_global = info.data.get("is_global")  # absent when `global` itself was wrong, which is said first
        if is_global is True and namespace is not None:
            raise ValueError('send either "namespace" or "global": true, not both')
        if is_global is False and namespace is None:
            raise ValueError(
                '"namespace" is required (the run it belongs to), or "global": true to register into the '
                "global namespace, which every namespace sees"
            )
        return namespace

    @field_validator("namespace", "name")
    @classmethod
    def _name_like(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not NAMESPACE_PATTERN.match(value):
            raise ValueError(f'"{info.field_name}" must be 1-64 letters, digits, "_" or "-", got {value!r}')
        return value


_Lifetime = Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False)] | None
"""A registration's `ttlSeconds`, the last key checked; unset: `DEFAULT_REGISTRATION_TTL`."""


def _expiry(ttl_seconds: float | None, now: float) -> float:
    return now + (DEFAULT_REGISTRATION_TTL if ttl_seconds is None else ttl_seconds)


class ServerRequest(_Registration):
    """The body of a server registration, its fields in the order they are checked."""

    url: str
    headers: dict[str, str] | None = None
    transport: Literal["http", "sse"] | None = None
    description: str | None = None
    ttl_seconds: _Lifetime = None

    @field_validator("url")
    @classmethod
    def _url_reaches_a_server(cls, url: str) -> str:
        return _endpoint_url("url", url)

    @field_validator("headers")
    @classmethod
    def _headers_are_one_line(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        for name, value in (headers or {}).items():
            _no_control_characters(f"headers.{name!r}", name + value)
        return headers


class ToolRequest(_Registration):
    """The body of a callback tool registration, its fields in the order they are checked."""

    description: str
    input_schema: dict[str, Any]
    callback_url: str
    ttl_seconds: _Lifetime = None

    @field_validator("description")
    @classmethod
    def _description_says_something(cls, description: str) -> str:
        if not description.strip():
            raise ValueError('"description" must be a string (not empty)')
        return description

    @field_validator("input_schema")
    @classmethod
    def _schema_is_usable(cls, schema: dict[str, Any]) -> dict[str, Any]:
        from jsonschema import Draft202012Validator, SchemaError
        from jsonschema.validators import validator_for

        if schema.get("type") != "object":
            raise ValueError(_SCHEMA_SHAPE)
        # Before jsonschema reads it: its meta-schema check recurses, and a schema refused here must never
        # reach a validator (a combination that explodes, a $ref cycle that never ends).
        problem = schema_problem(schema)
        if problem is not None:
            raise ValueError(f'"inputSchema" cannot be accepted: this {problem}')
        try:
            validator_for(schema, default=Draft202012Validator).check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f'"inputSchema" is not a valid JSON Schema: {exc.message}') from None
        return schema

    @field_validator("callback_url")
    @classmethod
    def _callback_reaches_a_server(cls, url: str) -> str:
        return _endpoint_url("callbackUrl", url)


def _registration_problem(error: ErrorDetails, *, tool: bool) -> str:
    """Say what is wrong with one key of a registration body, and what to send instead."""
    said = _validators_words(error)
    if said is not None:
        return said
    key, got = str(error["loc"][0]), _given(error)
    if key in ("namespace", "name"):
        return f'"{key}" must be 1-64 letters, digits, "_" or "-", got {got!r}'
    if key == "transport":
        return f'"transport" must be "http" (streamable HTTP) or "sse", got {got!r}'
    if key == "ttlSeconds":
        return f'"ttlSeconds" must be a number of seconds above 0, at most {MAX_TTL_SECONDS:g}'
    if key == "description":
        return '"description" must be a string' + (" (not empty)" if tool else "")
    return {
        "global": '"global" must be true or false',
        "url": '"url" must be an http:// or https:// URL',
        "callbackUrl": '"callbackUrl" must be an http:// or https:// URL',
        "headers": '"headers" must be an object of header names to string values',
        "inputSchema": _SCHEMA_SHAPE,
    }[key]


Request = TypeVar("Request", bound=_Registration)


def _checked(model: type[Request], body: Mapping[str, Any]) -> Request:
    """Return `body` as a `model`, or `RegistrationRefused` saying its first problem."""
    try:
        return model.model_validate(dict(body))
    except ValidationError as exc:
        unknown = _unknown_keys(exc)
        if unknown:
            keys = sorted(field.alias or name for name, field in model.model_fields.items())
            raise RegistrationRefused(f"unknown key(s) {', '.join(unknown)}; the keys are {', '.join(keys)}") from None
        raise RegistrationRefused(_registration_problem(exc.errors()[0], tool=model is ToolRequest)) from None


def server_registration(body: Mapping[str, Any], *, now: float | None = None) -> ServerRegistration:
    """Return the server registration `body` asks for (the API's JSON keys), or `RegistrationRefused`."""
    at = time.time() if now is None else now
    request = _checked(ServerRequest, body)
    endpoint = {"url": request.url, **({"transport": request.transport} if request.transport else {})}
    return ServerRegistration(
        namespace=request.namespace,
        name=request.name,
        url=request.url,
        transport="sse" if server_kind(endpoint) == "sse" else "http",
        headers=dict(request.headers or {}),
        description=request.description,
        expires_at=_expiry(request.ttl_seconds, at),
        created_at=at,
    )


def tool_registration(body: Mapping[str, Any], *, now: float | None = None) -> ToolRegistration:
    """Return the callback tool registration `body` asks for (the API's JSON keys), or `RegistrationRefused`."""
    at = time.time() if now is None else now
    request = _checked(ToolRequest, body)
    return ToolRegistration(
        namespace=request.namespace,
        name=request.name,
        description=request.description,
        input_schema=request.input_schema,
        callback_url=request.callback_url,
        expires_at=_expiry(request.ttl_seconds, at),
        created_at=at,
    )


def name_taken(
    registration: ServerRegistration | ToolRegistration,
    *,
    configured: Collection[str],
    servers: Sequence[ServerRegistration],
    tools: Sequence[ToolRegistration],
) -> str | None:
    """Return why `registration` cannot be shown under its name, if it cannot: a configured server
    (`configured`: the names of the servers the gateway runs besides registrations) has it, or a
    registration of the other kind (a server for a tool, a tool for a server) does. One of the same
    kind, namespace and name is replaced by it, never a clash."""
    shown = qualified_name(registration.namespace, registration.name)
    if shown in configured:
        return f"{shown!r} is the name of a configured server; register under another name or namespace"
    others: Sequence[ServerRegistration | ToolRegistration] = (
        tools if isinstance(registration, ServerRegistration) else servers
    )
    kind = "callback tool" if isinstance(registration, ServerRegistration) else "server"
    for other in others:
        if other.namespace == registration.namespace and other.name == registration.name:
            return (
                f"{shown!r} is already registered as a {kind}; remove that registration first, "
                "or register under another name"
            )
    return None


def public_view(registration: ServerRegistration | ToolRegistration) -> dict[str, Any]:
    """Return what the API and `toolscout registry list` show of a registration: its header values never,
    and anything secret-looking in a URL masked."""
    out: dict[str, Any] = {
        "namespace": registration.namespace,
        "name": registration.name,
        "shownAs": qualified_name(registration.namespace, registration.name),
    }
    if isinstance(registration, ServerRegistration):
        out["url"] = mask_text(registration.url)
        out["transport"] = registration.transport
        if registration.headers:
            out["headers"] = sorted(registration.headers)  # the names only
        out["description"] = registration.description
    else:
        out["description"] = registration.description
        out["inputSchema"] = dict(registration.input_schema)
        out["callbackUrl"] = mask_text(registration.callback_url)
    out["expiresAt"] = registration.expires_at
    return out


# Room for a new registration


async def check_room(
    registry: Registry,
    registration: ServerRegistration | ToolRegistration,
    *,
    replaces: bool,
    per_namespace: int,
    total: int,
) -> None:
    """Refuse (`TooManyRegistrations`) a new `registration` that would put its namespace over
    `per_namespace` or the registry over `total`; `replaces`: one of that kind and name is there already."""
    if replaces:
        return
    inside, every = await registry.counts(registration.namespace, time.time())
    if inside < per_namespace and every < total:
        return
    where = f"namespace {registration.namespace!r}" if registration.namespace is not None else "the global namespace"
    if inside >= per_namespace:
        raise TooManyRegistrations(
            f"{where} already has {inside} registrations, its limit (registry.maxRegistrationsPerNamespace: "
            f"{per_namespace}); remove one, let one expire, or raise the limit in the gateway's config"
        )
    if every >= total:
        raise TooManyRegistrations(
            f"the registry already has {every} registrations, its limit (registry.maxRegistrations: {total}); "
            "remove some, let them expire, or raise the limit in the gateway's config"
        )
