"""`toolscout token create | list | revoke`: tokens scoped to a namespace, for agents of a shared gateway.

With `--url`, a running gateway's HTTP API (`/api/v1/tokens`) is asked, with the admin key in
`TOOLSCOUT_ADMIN_KEY`; without, the embedded registry the gateway serves from (`registry.path`, by
default `registry.sqlite3` beside the persistent catalog) is changed directly, which a gateway
running from the same file sees (an issued token at once, a revocation within a second).
The token's secret is printed once, by `create`; nothing stores or prints it again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer
from rich.markup import escape

from toolscout.cli.api_client import ADMIN_KEY_VARIABLE
from toolscout.cli.common import EXIT_NOT_FOUND, ConfigOption, JsonOption, Output, registry_config, run
from toolscout.errors import InvalidArguments, ToolscoutError

if TYPE_CHECKING:
    from toolscout.registry.base import Registry

T = TypeVar("T")


token_app = typer.Typer(
    name="token", help="Issue, list and revoke tokens that scope an agent to a namespace.", no_args_is_help=True
)

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help=f"A running gateway (http://host:port): use its API, with the admin key in ${ADMIN_KEY_VARIABLE}. "
        "Without: the local registry file.",
    ),
]


def register(app: typer.Typer) -> None:
    app.add_typer(token_app)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


async def _call(output: Output, method: str, url: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The gateway API's answer (a JSON object, empty for 204), or exit saying what went wrong."""
    from toolscout.cli.api_client import ApiRefused, call_api

    try:
        answer = await call_api(url, method, path, body)
    except ApiRefused as exc:
        output.fail(exc, EXIT_NOT_FOUND)
    except ToolscoutError as exc:
        output.fail(exc)
    return cast(dict[str, Any], answer) if isinstance(answer, dict) else {}


def _locally(config: Path | None, output: Output, work: Callable[[Registry], Awaitable[T]]) -> T:
    """`work` done on the registry the configuration names (its file, or Redis), or exit saying why it cannot be."""
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
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="The run (spec 002's run id) it belongs to.")],
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
    url: UrlOption = None,
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
    output.note(f"Token {token_id} ({label}) for namespace {namespace}, expires {_when(expires)}.")
    output.note("It is shown only now: give it to the agent (Authorization: Bearer ...) or store it safely.")
    typer.echo(secret)


@token_app.command("list")
def list_tokens(url: UrlOption = None, config: ConfigOption = None, as_json: JsonOption = False) -> None:
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
                f"  expires {_when(token.get('expiresAt'))}"
            )
        )


@token_app.command()
def revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (`toolscout token list`).")],
    url: UrlOption = None,
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
