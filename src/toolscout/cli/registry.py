"""The remote admin commands: `toolscout token` and `toolscout registry`, and the HTTP client they share.

`token create | list | revoke` issue, list and revoke tokens scoped to a namespace, for the agents
of a shared gateway. `registry add | add-tool | list | remove | remove-tool` register servers and
callback tools into a namespace at run time: a server for the gateway to connect to, or a
component's tools that the gateway calls back.

With `--url`, either asks a running gateway's HTTP API (`/api/v1/tokens`, `/api/v1/registry/...`)
with the admin key from `TOOLSCOUT_ADMIN_KEY`, one request each, the API's refusals turned into the
CLI's errors and exit codes; the change is applied by that gateway before the command returns.
Without it, the command changes this machine's embedded registry directly (`registry.path`, by
default `registry.sqlite3` beside the persistent catalog), which a gateway running from the same
file picks up: an issued token at once, a revocation or a registration within a second or so.
Either way a registration is checked the same way (registry/requests.py) and a name taken is
refused. A token's secret is printed once, by `create`; nothing stores or prints it again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast
from urllib.parse import urlsplit

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_NOT_FOUND, ConfigOption, JsonOption, Output, iso_utc, registry_config, run
from toolscout.config import GatewayConfig
from toolscout.errors import ConfigurationError, InvalidArguments, ToolscoutError
from toolscout.masking import remember_secrets

if TYPE_CHECKING:
    from toolscout.registry.base import Registry

ADMIN_KEY_VARIABLE = "TOOLSCOUT_ADMIN_KEY"
API_PREFIX = "/api/v1"
REQUEST_SECONDS = 30.0


class ApiRefused(ToolscoutError):
    """The API refused the request (`status`), for a reason its message says."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def api_base(url: str) -> str:
    """The API's base URL from what a user gives: the gateway's address, with or without `/mcp`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArguments(f"--url must be the gateway's http:// or https:// address, got {url!r}.")
    path = parts.path.rstrip("/").removesuffix("/mcp").removesuffix(API_PREFIX)
    return f"{parts.scheme}://{parts.netloc}{path}{API_PREFIX}"


def _refusal(status: int, body: Any, fallback: str) -> ToolscoutError:
    error: Any = cast(dict[str, Any], body).get("error") if isinstance(body, dict) else None
    message = str(cast(dict[str, Any], error).get("message")) if isinstance(error, dict) else fallback
    message = message.rstrip(". ")  # each answer below ends its own sentence
    if status in (401, 403):
        hint = f" Set {ADMIN_KEY_VARIABLE} to one of the gateway's auth.adminKeys."
        return ConfigurationError(f"The gateway refused the request ({status}): {message}.{hint}")
    if status == 404:
        return ApiRefused(f"{message}.", status)
    if status in (400, 409, 413):
        return InvalidArguments(f"{message}.")
    return ToolscoutError(f"The gateway answered {status}: {message}.")


async def call_api(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """Send `method` `path` (below `/api/v1`) to the gateway at `url` and return its JSON answer
    (None for 204), or raise the `ToolscoutError` saying why not."""
    import httpx2

    base = api_base(url)
    headers = {"accept": "application/json"}
    key = os.environ.get(ADMIN_KEY_VARIABLE)
    if key:
        remember_secrets([key])  # never in an error or log line, whatever the gateway echoes
        headers["authorization"] = f"Bearer {key}"
    try:
        async with httpx2.AsyncClient(timeout=REQUEST_SECONDS) as http:
            response = await http.request(method, base + path, json=body, headers=headers)
    except httpx2.HTTPError as exc:
        raise ToolscoutError(
            f"Cannot reach the gateway at {base}: {exc or type(exc).__name__}. Is `toolscout serve --transport "
            "http` running there? Without --url, the command edits this machine's registry instead."
        ) from None
    if response.status_code == 204:
        return None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not 200 <= response.status_code < 300:
        fallback = response.text[:200].strip() or response.reason_phrase
        raise _refusal(response.status_code, answer, fallback)
    return answer


T = TypeVar("T")


token_app = typer.Typer(
    name="token", help="Issue, list and revoke tokens that scope an agent to a namespace.", no_args_is_help=True
)

TokenUrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help=f"A running gateway (http://host:port): use its API, with the admin key in ${ADMIN_KEY_VARIABLE}. "
        "Without: the local registry file.",
    ),
]


def _token_expiry(timestamp: float | None) -> str:
    """Return when a token expires: ISO 8601 in UTC with a `Z`, or `never`."""
    if timestamp is None:
        return "never"
    return iso_utc(timestamp).replace("+00:00", "Z")


async def _call(output: Output, method: str, url: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The gateway API's answer (a JSON object, empty for 204), or exit saying what went wrong."""
    try:
        answer = await call_api(url, method, path, body)
    except ApiRefused as exc:
        output.fail(exc, EXIT_NOT_FOUND)
    except ToolscoutError as exc:
        output.fail(exc)
    return cast(dict[str, Any], answer) if isinstance(answer, dict) else {}


def _locally(config: Path | None, output: Output, work: Callable[[Registry], Awaitable[T]]) -> T:
    """Return `work` done on the registry the configuration names (its file, or Redis), or exit
    saying why it cannot be."""
    from toolscout.registry.requests import open_registry, registry_location

    settings = registry_config(config, output)

    async def opened() -> T:
        async with open_registry(settings) as registry:
            return await work(registry)

    try:
        return run(opened)
    except (sqlite3.Error, OSError) as exc:
        output.fail(
            ToolscoutError(
                f"cannot use the token registry {registry_location(settings)}: {exc}. Set registry.path in the "
                "config to a file this user may write, or use --url to ask the running gateway."
            )
        )


@token_app.command()
def create(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="The run (the pipeline's run id) it belongs to.")],
    server: Annotated[
        list[str],
        typer.Option("--server", "-s", help="A server it may use: a name, a group prefix, or * (repeat for more)."),
    ],
    label: Annotated[str, typer.Option("--label", "-l", help="Its name in the audit log and the token list.")],
    ttl: Annotated[float, typer.Option("--ttl", help="Seconds until it expires.")] = 3600.0,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", help="A tool pattern narrowing further, e.g. '!*delete*' (repeat).")
    ] = None,
    pin: Annotated[
        list[str] | None, typer.Option("--pin", help="server/tool shown natively in its tools/list (repeat).")
    ] = None,
    rate: Annotated[
        int | None, typer.Option("--rate", help="Requests a minute it may make (requestsPerMinute).")
    ] = None,
    can_register: Annotated[
        bool,
        typer.Option(
            "--can-register", help="It may register servers and tools into its own namespace, and issue its tokens."
        ),
    ] = False,
    url: TokenUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Issue a token and print it, once."""
    output = Output(as_json)
    request: dict[str, Any] = {"namespace": namespace, "servers": server, "ttlSeconds": ttl, "label": label}
    if tool:
        request["tools"] = tool
    if pin:
        request["pinnedTools"] = pin
    if rate is not None:
        request["requestsPerMinute"] = rate
    if can_register:
        request["canRegister"] = True
    if url is not None:
        answer = cast(dict[str, Any], run(_call, output, "POST", url, "/tokens", request))
        token_id, secret, expires = str(answer["id"]), str(answer["token"]), answer.get("expiresAt")
    else:
        from toolscout.registry.requests import TokenRequestError, issue_token

        try:
            record, secret = _locally(config, output, lambda registry: issue_token(registry, request))
        except TokenRequestError as exc:
            output.fail(InvalidArguments(str(exc)))
        token_id, expires = record.id, record.expires_at
    if as_json:
        output.data({"id": token_id, "token": secret, "expiresAt": expires})
        return
    output.note(f"Token {token_id} ({label}) for namespace {namespace}, expires {_token_expiry(expires)}.")
    output.note("It is shown only now: give it to the agent (Authorization: Bearer ...) or store it safely.")
    typer.echo(secret)


@token_app.command("list")
def list_tokens(url: TokenUrlOption = None, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """The tokens issued and not yet swept (never their secrets)."""
    output = Output(as_json)
    if url is not None:
        tokens = cast(list[dict[str, Any]], run(_call, output, "GET", url, "/tokens")["tokens"])
    else:
        tokens = [record.public() for record in _locally(config, output, lambda registry: registry.tokens())]
    if as_json:
        output.data({"tokens": tokens})
        return
    if not tokens:
        output.print("No tokens. `toolscout token create` issues one.")
        return
    for token in tokens:
        servers = ", ".join(token.get("servers") or [])
        output.print(
            escape(
                f"{token['id']}  {token.get('label')}  namespace {token['namespace']}  servers {servers}"
                f"  expires {_token_expiry(token.get('expiresAt'))}"
            )
        )


@token_app.command()
def revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (`toolscout token list`).")],
    url: TokenUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a token: it is refused from the next request on."""
    output = Output(as_json)
    if url is not None:
        run(_call, output, "DELETE", url, f"/tokens/{token_id}")
    elif not _locally(config, output, lambda registry: registry.revoke_token(token_id)):
        output.fail(ToolscoutError(f"no token {token_id!r}; `toolscout token list` lists them"), EXIT_NOT_FOUND)
    if as_json:
        output.data({"success": True, "id": token_id})
    else:
        output.print(f"Revoked {escape(token_id)}.")


registry_app = typer.Typer(
    name="registry",
    help="Servers and callback tools registered at run time into a namespace (a run of a multi-tenant pipeline).",
    no_args_is_help=True,
)

RegistryUrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="A running gateway's address (http://host:port): use its HTTP API, with the admin key in "
        "$TOOLSCOUT_ADMIN_KEY. Without it: this machine's registry, which a running gateway picks up.",
    ),
]
NamespaceOption = Annotated[
    str | None, typer.Option("--namespace", "-n", help="The namespace (a run's id) it belongs to.")
]
GlobalOption = Annotated[
    bool, typer.Option("--global", help="Register into the global namespace instead, seen from every namespace.")
]
TtlOption = Annotated[
    float | None, typer.Option("--ttl", help="Seconds until the registration expires (default 3600).")
]


def _where(namespace: str | None, is_global: bool) -> dict[str, Any]:
    """The body's namespace keys, or `InvalidArguments` unless exactly one of the two is given."""
    if (namespace is not None) == is_global:
        raise InvalidArguments("name the namespace (--namespace NS), or --global for the global namespace.")
    return {"global": True} if is_global else {"namespace": namespace}


def _path(kind: str, namespace: str | None, name: str) -> str:
    return f"/registry/{kind}/{namespace}/{name}" if namespace is not None else f"/registry/{kind}/{name}"


def _fail(output: Output, error: ToolscoutError) -> NoReturn:
    code = EXIT_NOT_FOUND if isinstance(error, ApiRefused) and error.status == 404 else None
    output.fail(error, code)


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise InvalidArguments(f"--header must be NAME: VALUE, got {value!r}.")
        headers[name.strip()] = text.strip()
    return headers


def _schema(text: str) -> Any:
    source = "--input-schema"
    if text.startswith("@"):
        source = text[1:]
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidArguments(f"cannot read the input schema from {source}: {exc.strerror or exc}.") from None
    from toolscout.serve.api import MAX_BODY_DEPTH
    from toolscout.serve.stdio import too_deep

    if too_deep(text, MAX_BODY_DEPTH):  # (Python's parser recurses: refused before it runs, as the API does)
        raise InvalidArguments(f"{source} nests objects and arrays more than {MAX_BODY_DEPTH} deep.")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidArguments(f"{source} is not JSON ({exc}); give a JSON Schema object, or @FILE.") from None


async def _local_put(config: GatewayConfig, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    from toolscout.registry.base import ServerRegistration
    from toolscout.registry.requests import (
        NameClash,
        RegistrationRefused,
        check_room,
        name_taken,
        open_registry,
        public_view,
        server_registration,
        tool_registration,
    )

    async with open_registry(config) as registry:
        try:
            registration = server_registration(body) if kind == "servers" else tool_registration(body)
            servers = await registry.servers(registration.namespace)
            tools = await registry.tools(registration.namespace)
            reason = name_taken(registration, configured=set(config.mcp_servers), servers=servers, tools=tools)
            if reason is not None:
                raise NameClash(reason)
            same = servers if isinstance(registration, ServerRegistration) else tools
            replaces = any(other.name == registration.name for other in same)
            limits = config.registry.max_registrations_per_namespace, config.registry.max_registrations
            await check_room(registry, registration, replaces=replaces, per_namespace=limits[0], total=limits[1])
        except RegistrationRefused as exc:
            raise InvalidArguments(f"{exc}.") from None
        if isinstance(registration, ServerRegistration):
            await registry.put_server(registration)
        else:
            await registry.put_tool(registration)
    return public_view(registration)


async def _put(url: str | None, config: GatewayConfig, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if url is not None:
        return await call_api(url, "POST", f"/registry/{kind}", body)
    return await _local_put(config, kind, body)


def _registration_expiry(entry: dict[str, Any]) -> str:
    at = entry.get("expiresAt")
    if at is None:
        return "never expires"
    left = at - time.time()
    return "expired" if left <= 0 else f"expires in {left / 60:.0f} min" if left >= 90 else f"expires in {left:.0f} s"


def _line(entry: dict[str, Any]) -> str:
    target = entry.get("url") or entry.get("callbackUrl") or ""
    state = entry.get("status")
    status = ""
    if state is not None:
        count = f", {entry['toolCount']} tools" if "toolCount" in entry else ""
        status = f"  {state}{count}" + (f" ({entry['error']})" if entry.get("error") else "")
    return f"  {escape(entry['shownAs'])}  {escape(target)}{escape(status)}  [dim]{_registration_expiry(entry)}[/dim]"


def _added(output: Output, entry: dict[str, Any], url: str | None) -> None:
    if output.json_mode:
        output.data(entry)
        return
    where = "on the gateway" if url is not None else "in this machine's registry"
    output.print(f"Registered {escape(entry['shownAs'])} {where} ({_registration_expiry(entry)}).")
    if url is None:
        output.note("A running `toolscout serve` of this config picks it up within seconds.")


@registry_app.command()
def add(
    name: Annotated[str, typer.Argument(help="Its name in the namespace (letters, digits, _ and -).")],
    endpoint: Annotated[str, typer.Argument(help="The MCP endpoint: http(s)://host:port/mcp (or .../sse).")],
    namespace: NamespaceOption = None,
    is_global: GlobalOption = False,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="A header sent to the endpoint, NAME: VALUE.")
    ] = None,
    description: Annotated[str | None, typer.Option(help="What the server is for.")] = None,
    transport: Annotated[str | None, typer.Option(help="http (streamable HTTP) or sse; default from the URL.")] = None,
    ttl: TtlOption = None,
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register an MCP server (streamable HTTP or SSE) into a namespace."""
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    try:
        body: dict[str, Any] = {**_where(namespace, is_global), "name": name, "url": endpoint}
        body.update({"headers": _headers(header or []), "description": description, "ttlSeconds": ttl})
        if transport is not None:
            body["transport"] = transport
        entry = run(_put, url, gateway_config, "servers", {k: v for k, v in body.items() if v is not None})
    except ToolscoutError as exc:
        _fail(output, exc)
    _added(output, entry, url)


@registry_app.command("add-tool")
def add_tool(
    name: Annotated[str, typer.Argument(help="The tool's name (letters, digits, _ and -).")],
    callback_url: Annotated[str, typer.Option("--callback-url", help="Where its arguments are POSTed as JSON.")],
    description: Annotated[str, typer.Option(help="What the tool does (what search finds it by).")],
    input_schema: Annotated[
        str, typer.Option("--input-schema", help="Its arguments' JSON Schema (an object), or @FILE.")
    ] = '{"type": "object", "properties": {}}',
    namespace: NamespaceOption = None,
    is_global: GlobalOption = False,
    ttl: TtlOption = None,
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register a callback tool: calling it POSTs its arguments to a URL that answers an MCP tool result."""
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    try:
        body: dict[str, Any] = {**_where(namespace, is_global), "name": name, "description": description}
        body.update({"inputSchema": _schema(input_schema), "callbackUrl": callback_url, "ttlSeconds": ttl})
        entry = run(_put, url, gateway_config, "tools", {k: v for k, v in body.items() if v is not None})
    except ToolscoutError as exc:
        _fail(output, exc)
    _added(output, entry, url)


async def _local_list(config: GatewayConfig, namespace: str | None) -> dict[str, list[dict[str, Any]]]:
    from toolscout.registry.requests import open_registry, public_view

    every = namespace is None
    now = time.time()
    async with open_registry(config) as registry:
        servers = [public_view(s) for s in await registry.servers(namespace, every=every) if not s.expired(now)]
        tools = [public_view(t) for t in await registry.tools(namespace, every=every) if not t.expired(now)]
    return {"servers": servers, "tools": tools}


async def _list(url: str | None, config: GatewayConfig, namespace: str | None) -> dict[str, list[dict[str, Any]]]:
    if url is None:
        return await _local_list(config, namespace)
    query = f"?namespace={namespace}" if namespace is not None else ""
    servers = await call_api(url, "GET", f"/registry/servers{query}")
    tools = await call_api(url, "GET", f"/registry/tools{query}")
    return {"servers": servers["servers"], "tools": tools["tools"]}


@registry_app.command("list")
def list_registrations(
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Only this namespace's.")] = None,
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The registered servers and callback tools (with --url: each with its status on the gateway)."""
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    if namespace is not None:
        _check_namespace(namespace, "--namespace", output)
    try:
        found = run(_list, url, gateway_config, namespace)
    except ToolscoutError as exc:
        _fail(output, exc)
    if output.json_mode:
        output.data(found)
        return
    for kind, title in (("servers", "Servers"), ("tools", "Callback tools")):
        output.print(f"{title}:")
        if not found[kind]:
            output.print("  (none)")
        for entry in found[kind]:
            output.print(_line(entry))


def _check_namespace(value: str, label: str, output: Output) -> None:
    """Fail with what a namespace (a run's id) may hold unless `value` is one; `label` names the argument."""
    from toolscout.config.scopes import NAMESPACE_PATTERN

    if not NAMESPACE_PATTERN.match(value):
        output.fail(InvalidArguments(f"{label} must be 1-64 letters, digits, _ or -, got {value!r}."))


async def _run_view(url: str | None, config: GatewayConfig, run_id: str) -> dict[str, Any]:
    if url is not None:
        return await call_api(url, "GET", f"/internal/mcp/runs/{run_id}/tools")
    from toolscout.registry.pipeline import run_registrations, run_view
    from toolscout.registry.requests import open_registry

    async with open_registry(config) as registry:
        servers, tools = await run_registrations(registry, run_id)
    return run_view(run_id, servers, tools)


@registry_app.command("run")
def run_listing(
    run_id: Annotated[str, typer.Argument(help="The run's id (its namespace).")],
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """One run's registrations by node id, as the multi-tenant pipeline keeps them (nodeId, toolName,
    type, endpoint, serverId; with --url: each with its status on the gateway)."""
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    _check_namespace(run_id, "RUN_ID", output)
    try:
        found = run(_run_view, url, gateway_config, run_id)
    except ToolscoutError as exc:
        _fail(output, exc)
    if output.json_mode:
        output.data(found)
        return
    output.print(f"Run {run_id}:")
    if not found["tools"]:
        output.print("  (nothing registered)")
    for node_id, entry in found["tools"].items():
        where = entry.get("endpoint") or entry.get("callbackUrl") or ""
        status = f" [{entry['status']}]" if entry.get("status") else ""
        server = f" serverId={entry['serverId']}" if entry.get("serverId") else ""
        output.print(f"  {node_id}  toolName={entry['toolName']}  type={entry['type']}{server}  {where}{status}")


async def _remove(url: str | None, config: GatewayConfig, kind: str, namespace: str | None, name: str) -> bool:
    if url is not None:
        await call_api(url, "DELETE", _path(kind, namespace, name))
        return True
    from toolscout.registry.requests import open_registry

    async with open_registry(config) as registry:
        if kind == "servers":
            return await registry.remove_server(namespace, name)
        return await registry.remove_tool(namespace, name)


def _removal(
    kind: str, name: str, namespace: str | None, is_global: bool, url: str | None, config: Path | None, as_json: bool
) -> None:
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    try:
        _where(namespace, is_global)
        gone = run(_remove, url, gateway_config, kind, namespace, name)
    except ToolscoutError as exc:
        _fail(output, exc)
    what = "server" if kind == "servers" else "callback tool"
    where = f"namespace {namespace}" if namespace is not None else "the global namespace"
    if not gone:
        output.fail(ApiRefused(f"No {what} {name!r} is registered in {where}.", 404), EXIT_NOT_FOUND)
    if output.json_mode:
        output.data({"removed": True, "kind": what, "namespace": namespace, "name": name})
    else:
        output.print(f"Removed the {what} {escape(name)} from {escape(where)}.")


@registry_app.command()
def remove(
    name: Annotated[str, typer.Argument(help="The registered server's name.")],
    namespace: NamespaceOption = None,
    is_global: GlobalOption = False,
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Unregister a server (its connection stops)."""
    _removal("servers", name, namespace, is_global, url, config, as_json)


@registry_app.command("remove-tool")
def remove_tool(
    name: Annotated[str, typer.Argument(help="The registered callback tool's name.")],
    namespace: NamespaceOption = None,
    is_global: GlobalOption = False,
    url: RegistryUrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Unregister a callback tool."""
    _removal("tools", name, namespace, is_global, url, config, as_json)
