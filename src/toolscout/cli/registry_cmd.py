"""`toolscout registry add | add-tool | list | remove | remove-tool`: servers and callback tools
registered at run time into a namespace (spec 002's register-local and register-component).

With `--url`, through a running gateway's HTTP API (`/api/v1/registry/...`, the admin key from
`TOOLSCOUT_ADMIN_KEY`): applied by that gateway before the command returns. Without it, in this
machine's embedded registry (`registry.path`, beside the persistent catalog), which a running
`toolscout serve` of the same config picks up within a second or so. Either way the request is
checked the same way (registry/requests.py) and a name taken is refused.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.markup import escape

from toolscout.cli.api_client import ApiRefused, call_api
from toolscout.cli.common import EXIT_NOT_FOUND, ConfigOption, JsonOption, Output, registry_config, run
from toolscout.config import GatewayConfig
from toolscout.errors import InvalidArguments, ToolscoutError

registry_app = typer.Typer(
    name="registry",
    help="Servers and callback tools registered at run time into a namespace (spec 002).",
    no_args_is_help=True,
)

UrlOption = Annotated[
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


def register(app: typer.Typer) -> None:
    app.add_typer(registry_app)


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
    from toolscout.registry.limits import check_room
    from toolscout.registry.opening import open_registry
    from toolscout.registry.requests import (
        NameClash,
        RegistrationRefused,
        name_taken,
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


def _expires(entry: dict[str, Any]) -> str:
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
    return f"  {escape(entry['shownAs'])}  {escape(target)}{escape(status)}  [dim]{_expires(entry)}[/dim]"


def _added(output: Output, entry: dict[str, Any], url: str | None) -> None:
    if output.json_mode:
        output.data(entry)
        return
    where = "on the gateway" if url is not None else "in this machine's registry"
    output.print(f"Registered {escape(entry['shownAs'])} {where} ({_expires(entry)}).")
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
    url: UrlOption = None,
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
    url: UrlOption = None,
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
    from toolscout.registry.opening import open_registry
    from toolscout.registry.requests import public_view

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
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """The registered servers and callback tools (with --url: each with its status on the gateway)."""
    output = Output(as_json)
    gateway_config = registry_config(config, output)
    if namespace is not None:
        from toolscout.config.scopes import NAMESPACE_PATTERN

        if not NAMESPACE_PATTERN.match(namespace):
            output.fail(InvalidArguments(f"--namespace must be 1-64 letters, digits, _ or -, got {namespace!r}."))
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


async def _remove(url: str | None, config: GatewayConfig, kind: str, namespace: str | None, name: str) -> bool:
    if url is not None:
        await call_api(url, "DELETE", _path(kind, namespace, name))
        return True
    from toolscout.registry.opening import open_registry

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
    url: UrlOption = None,
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
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Unregister a callback tool."""
    _removal("tools", name, namespace, is_global, url, config, as_json)
