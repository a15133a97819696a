"""What a registration request says, checked: the body of `POST /api/v1/registry/servers` and
`/tools` (the CLI builds the same body) turned into a `ServerRegistration` or `ToolRegistration`,
and a registration's public JSON view (header values and secrets in URLs never shown).

One check for the HTTP API and the command line alike; a mistake is `RegistrationRefused` whose
message says what to send instead.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from pydantic import ValidationError

from toolscout.config.models import HttpServerConfig, SseServerConfig, server_kind
from toolscout.config.scopes import NAMESPACE_PATTERN, qualified_name
from toolscout.masking import mask_text
from toolscout.registry.base import DEFAULT_REGISTRATION_TTL, ServerRegistration, ToolRegistration
from toolscout.schemas import schema_problem

MAX_TTL_SECONDS = 30 * 24 * 3600.0
"""The longest life a registration may ask for (30 days): a forgotten one must still go some day."""
SERVER_KEYS = frozenset({"namespace", "global", "name", "url", "headers", "description", "ttlSeconds", "transport"})
TOOL_KEYS = frozenset({"namespace", "global", "name", "description", "inputSchema", "callbackUrl", "ttlSeconds"})


class RegistrationRefused(ValueError):
    """A registration request that cannot be accepted as it is (the API answers 400)."""


class NameClash(RegistrationRefused):
    """A registration whose name is taken by something else (the API answers 409): see `name_taken`."""


def _where(body: Mapping[str, Any], allowed: frozenset[str]) -> str | None:
    """The namespace the body registers into (None: global), checking `namespace` and `global`."""
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise RegistrationRefused(f"unknown key(s) {', '.join(unknown)}; the keys are {', '.join(sorted(allowed))}")
    namespace = body.get("namespace")
    is_global = body.get("global", False)
    if not isinstance(is_global, bool):
        raise RegistrationRefused('"global" must be true or false')
    if is_global:
        if namespace is not None:
            raise RegistrationRefused('send either "namespace" or "global": true, not both')
        return None
    if namespace is None:
        raise RegistrationRefused(
            '"namespace" is required (the run it belongs to), or "global": true to register into the '
            "global namespace, which every namespace sees"
        )
    if not isinstance(namespace, str) or not NAMESPACE_PATTERN.match(namespace):
        raise RegistrationRefused(f'"namespace" must be 1-64 letters, digits, "_" or "-", got {namespace!r}')
    return namespace


def _name(body: Mapping[str, Any]) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not NAMESPACE_PATTERN.match(name):
        raise RegistrationRefused(f'"name" must be 1-64 letters, digits, "_" or "-", got {name!r}')
    return name


def _description(body: Mapping[str, Any], *, required: bool = False) -> str | None:
    description = body.get("description")
    if description is None and not required:
        return None
    if not isinstance(description, str) or (required and not description.strip()):
        raise RegistrationRefused('"description" must be a string' + (" (not empty)" if required else ""))
    return description


def _expires(body: Mapping[str, Any], now: float) -> float:
    ttl = body.get("ttlSeconds")
    if ttl is None:
        return now + DEFAULT_REGISTRATION_TTL
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl <= MAX_TTL_SECONDS:
        raise RegistrationRefused(f'"ttlSeconds" must be a number of seconds above 0, at most {MAX_TTL_SECONDS:g}')
    return now + float(ttl)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _no_control_characters(key: str, text: str) -> None:
    """Refuse a control character (CR and LF above all: a request split in two) in a URL or a header."""
    found = _CONTROL.search(text)
    if found is not None:
        raise RegistrationRefused(
            f'"{key}" must not contain control characters (found {found.group()!r} at position {found.start()}); '
            "percent-encode them (%0D, %0A) if they belong there"
        )


def _endpoint(
    url: Any, headers: Any = None, transport: Any = None, *, key: str = "url"
) -> HttpServerConfig | SseServerConfig:
    if not isinstance(url, str):
        raise RegistrationRefused(f'"{key}" must be an http:// or https:// URL')
    _no_control_characters(key, url)
    if headers is not None and (
        not isinstance(headers, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[Any, Any], headers).items())
    ):
        raise RegistrationRefused('"headers" must be an object of header names to string values')
    for name, value in cast(dict[str, str], headers or {}).items():
        _no_control_characters(f"headers.{name!r}", name + value)
    if transport not in (None, "http", "sse"):
        raise RegistrationRefused(f'"transport" must be "http" (streamable HTTP) or "sse", got {transport!r}')
    entry: dict[str, Any] = {"url": url, "headers": headers or {}}
    if transport is not None:
        entry["transport"] = transport
    try:
        if server_kind(entry) == "sse":
            return SseServerConfig.model_validate(entry)
        return HttpServerConfig.model_validate(entry)
    except ValidationError as exc:
        raise RegistrationRefused(f'"{key}" {exc.errors()[0]["msg"].removeprefix("Value error, ")}') from None


def server_registration(body: Mapping[str, Any], *, now: float | None = None) -> ServerRegistration:
    """The server registration `body` asks for (the API's JSON keys), or `RegistrationRefused`."""
    at = time.time() if now is None else now
    namespace = _where(body, SERVER_KEYS)
    name = _name(body)
    endpoint = _endpoint(body.get("url"), body.get("headers"), body.get("transport"))
    return ServerRegistration(
        namespace=namespace,
        name=name,
        url=endpoint.url,
        transport="sse" if isinstance(endpoint, SseServerConfig) else "http",
        headers=dict(endpoint.headers),
        description=_description(body),
        expires_at=_expires(body, at),
        created_at=at,
    )


def _input_schema(schema: Any) -> dict[str, Any]:
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict) or cast(dict[str, Any], schema).get("type") != "object":
        raise RegistrationRefused(
            '"inputSchema" must be a JSON Schema object with "type": "object" (the tool\'s arguments), '
            'e.g. {"type": "object", "properties": {"ip": {"type": "string"}}, "required": ["ip"]}'
        )
    checked = cast(dict[str, Any], schema)
    # Before jsonschema reads it: its meta-schema check recurses, and a schema refused here must never
    # reach a validator (a combination that explodes, a $ref cycle that never ends).
    problem = schema_problem(checked)
    if problem is not None:
        raise RegistrationRefused(f'"inputSchema" cannot be accepted: this {problem}')
    try:
        validator_for(checked, default=Draft202012Validator).check_schema(checked)
    except SchemaError as exc:
        raise RegistrationRefused(f'"inputSchema" is not a valid JSON Schema: {exc.message}') from None
    return checked


def tool_registration(body: Mapping[str, Any], *, now: float | None = None) -> ToolRegistration:
    """The callback tool registration `body` asks for (the API's JSON keys), or `RegistrationRefused`."""
    at = time.time() if now is None else now
    namespace = _where(body, TOOL_KEYS)
    name = _name(body)
    description = _description(body, required=True)
    assert description is not None
    schema = _input_schema(body.get("inputSchema"))
    callback = _endpoint(body.get("callbackUrl"), key="callbackUrl").url
    return ToolRegistration(
        namespace=namespace,
        name=name,
        description=description,
        input_schema=schema,
        callback_url=callback,
        expires_at=_expires(body, at),
        created_at=at,
    )


def name_taken(
    registration: ServerRegistration | ToolRegistration,
    *,
    configured: Collection[str],
    servers: Sequence[ServerRegistration],
    tools: Sequence[ToolRegistration],
) -> str | None:
    """Why `registration` cannot be shown under its name, if it cannot: a configured server
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
    """What the API and `toolscout registry list` show of a registration: its header values never,
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
