"""The multi-tenant pipeline's request bodies, read onto toolscout's registrations and tokens.

A run's pipeline registers what its agent may use under the run's id, then asks for the agent's token:

* `register-component` `{runId, nodeId, toolName, description, inputSchema, callbackUrl, ttlSeconds?}`:
  a component offered as one tool, a callback tool named `toolName`;
* `register-local` `{runId, nodeId, toolName, endpoint, serverId?, description?, headers?, transport?,
  ttlSeconds?}`: an MCP endpoint the run started, a server whose tools are `{toolName}__{tool}` under
  `toolNames: registered`;
* `generate-token` `{runId, allowedNodeIds, ttlSeconds?, label?}`: a token for the run's namespace
  allowing those node ids, each by itself or as a group's prefix (`aws-mcp-group` allows
  `aws-mcp-group-aws-cloudtrail`).

`runId` is the namespace, `nodeId` the registration's name (its identity: registering a node id again
replaces it, as the pipeline's hash field is overwritten), and `allowedNodeIds` the token's `servers`.
A body is checked in two steps: the pipeline's own keys here (their names in every message), then the
rest by the registration's own checks (registry/requests.py), whose message names `endpoint` where it
says `url`. `run_view` is the debugging view of one run: its registrations by node id, with the
fields the pipeline's registry keeps for each (`nodeId`, `toolName`, `type`, `endpoint`, `serverId`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError, field_validator

from toolscout.config.scopes import NAMESPACE_PATTERN
from toolscout.masking import mask_text
from toolscout.registry.base import DEFAULT_REGISTRATION_TTL, ServerRegistration, ToolRegistration
from toolscout.registry.requests import (
    MAX_TOKEN_TTL_SECONDS,
    RegistrationRefused,
    RequestBody,
    TokenRequestError,
    server_registration,
    tool_registration,
    unknown_keys,
)

if TYPE_CHECKING:
    from toolscout.registry.base import Registry

COMPONENT = "component"
LOCAL_MCP = "local-mcp"
"""The pipeline's words for a registration's `type`: a callback tool, a server's endpoint."""
_NAMES = '1-64 letters, digits, "_" or "-"'


class _RunNode(RequestBody):
    """The keys every registration of a run's node has."""

    run_id: str
    node_id: str
    tool_name: str | None = None

    @field_validator("run_id", "node_id", "tool_name")
    @classmethod
    def _name_like(cls, value: str | None, info: Any) -> str | None:
        if value is not None and not NAMESPACE_PATTERN.match(value):
            key = {"run_id": "runId", "node_id": "nodeId", "tool_name": "toolName"}[info.field_name]
            raise ValueError(f'"{key}" must be {_NAMES}, got {value!r}')
        return value


class _ComponentNode(_RunNode):
    description: Any = None
    input_schema: Any = None
    callback_url: Any = None
    ttl_seconds: Any = None


class _LocalNode(_RunNode):
    endpoint: Any = None
    server_id: str | None = None
    description: Any = None
    headers: Any = None
    transport: Any = None
    ttl_seconds: Any = None

    @field_validator("server_id")
    @classmethod
    def _server_id_like(cls, value: str | None) -> str | None:
        if value is not None and not NAMESPACE_PATTERN.match(value):
            raise ValueError(f'"serverId" must be {_NAMES}, got {value!r}')
        return value


def _keys(model: type[RequestBody]) -> str:
    return ", ".join(sorted(field.alias or name for name, field in model.model_fields.items()))


def _node(model: type[_RunNode], body: Mapping[str, Any], what: str) -> Any:
    try:
        return model.model_validate(dict(body))
    except ValidationError as exc:
        unknown = unknown_keys(exc)
        if unknown:
            raise RegistrationRefused(f"unknown key(s) {', '.join(unknown)}; {what} has {_keys(model)}") from None
        error = exc.errors()[0]
        if error["type"] == "value_error":
            raise RegistrationRefused(error["msg"].removeprefix("Value error, ")) from None
        key = str(error["loc"][0])
        if error["type"] == "missing":
            raise RegistrationRefused(f'"{key}" is required: {what} has {_keys(model)}') from None
        raise RegistrationRefused(f'"{key}" must be a string of {_NAMES}') from None


def _given(body: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: body[key] for key in keys if body.get(key) is not None}


def component_registration(body: Mapping[str, Any], *, now: float | None = None) -> ToolRegistration:
    """Return the callback tool a `register-component` body asks for, or `RegistrationRefused`."""
    node: _ComponentNode = _node(_ComponentNode, body, "a component's registration")
    mine = {"namespace": node.run_id, "name": node.node_id}
    registration = tool_registration(
        {**mine, **_given(body, "description", "inputSchema", "callbackUrl", "ttlSeconds")}, now=now
    )
    return dataclasses.replace(registration, tool_name=node.tool_name or node.node_id)


def local_registration(body: Mapping[str, Any], *, now: float | None = None) -> ServerRegistration:
    """Return the server a `register-local` body asks for, or `RegistrationRefused`."""
    node: _LocalNode = _node(_LocalNode, body, "an endpoint's registration")
    if node.endpoint is None:
        raise RegistrationRefused('"endpoint" is required: the MCP endpoint\'s URL, e.g. "http://localhost:9001/mcp"')
    fields = {"url": node.endpoint, **_given(body, "description", "headers", "transport", "ttlSeconds")}
    try:
        registration = server_registration({"namespace": node.run_id, "name": node.node_id, **fields}, now=now)
    except RegistrationRefused as exc:
        raise RegistrationRefused(str(exc).replace('"url"', '"endpoint"')) from None
    return dataclasses.replace(registration, tool_name=node.tool_name or node.node_id, server_id=node.server_id)


class _TokenForRun(RequestBody):
    run_id: str
    allowed_node_ids: list[str] = Field(min_length=1)
    ttl_seconds: float = Field(default=DEFAULT_REGISTRATION_TTL, gt=0, le=MAX_TOKEN_TTL_SECONDS, allow_inf_nan=False)
    label: str | None = None


_TOKEN_PROBLEMS = {
    "runId": f'"runId" is required: the run the token is for ({_NAMES})',
    "allowedNodeIds": '"allowedNodeIds" must be a list of at least one node id (a node, or a group\'s prefix)',
    "ttlSeconds": f'"ttlSeconds" must be a number of seconds above 0, at most {MAX_TOKEN_TTL_SECONDS}',
    "label": '"label" must be a string',
}


def run_token_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return the token request (`POST /api/v1/tokens`'s body) a `generate-token` body stands for, or
    `TokenRequestError`: the run's namespace, its allowed node ids as servers, an hour unless
    `ttlSeconds` says otherwise, and a label naming the run unless one is given."""
    try:
        request = _TokenForRun.model_validate(dict(body))
    except ValidationError as exc:
        unknown = unknown_keys(exc)
        if unknown:
            keys = _keys(_TokenForRun)
            raise TokenRequestError(f"unknown key(s) {', '.join(unknown)}; generate-token has {keys}") from None
        raise TokenRequestError(_TOKEN_PROBLEMS[str(exc.errors()[0]["loc"][0])]) from None
    for node_id in request.allowed_node_ids:
        if not NAMESPACE_PATTERN.match(node_id):
            raise TokenRequestError(f'"allowedNodeIds" entries must be {_NAMES}, got {node_id!r}')
    if not NAMESPACE_PATTERN.match(request.run_id):
        raise TokenRequestError(f'"runId" must be {_NAMES}, got {request.run_id!r}')
    return {
        "namespace": request.run_id,
        "servers": list(request.allowed_node_ids),
        "ttlSeconds": request.ttl_seconds,
        "label": request.label or f"run {request.run_id}",
    }


async def run_registrations(registry: Registry, run_id: str) -> tuple[list[ServerRegistration], list[ToolRegistration]]:
    """Return one run's servers and callback tools from `registry`, those expired but not swept yet left out."""
    now = time.time()
    servers = [r for r in await registry.servers(run_id) if not r.expired(now)]
    tools = [r for r in await registry.tools(run_id) if not r.expired(now)]
    return servers, tools


def run_view(
    run_id: str,
    servers: Sequence[ServerRegistration],
    tools: Sequence[ToolRegistration],
    status: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Return one run's registrations as the pipeline's registry keeps them, by node id (`status`: how
    each one's upstream is doing, by node id, added where given). An endpoint's URL is masked."""
    entries: dict[str, dict[str, Any]] = {}
    for tool in tools:
        entries[tool.name] = {
            "nodeId": tool.name,
            "toolName": tool.tool_name or tool.name,
            "type": COMPONENT,
            "description": tool.description,
            "callbackUrl": mask_text(tool.callback_url),
            "expiresAt": tool.expires_at,
        }
    for server in servers:  # a server wins a node id both have, as the gateway serves it
        entries[server.name] = {
            "nodeId": server.name,
            "toolName": server.tool_name or server.name,
            "type": LOCAL_MCP,
            "endpoint": mask_text(server.url),
            "serverId": server.server_id,
            "description": server.description,
            "expiresAt": server.expires_at,
        }
    for node_id, entry in entries.items():
        entry.update((status or {}).get(node_id, {}))
    return {"runId": run_id, "tools": dict(sorted(entries.items()))}
