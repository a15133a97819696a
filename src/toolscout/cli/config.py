"""The commands about the config file and what it keeps: `config`, `rules` and `cache`.

`config show | validate | sources | path` show, check and locate the configuration (`config import`
is cli/setup.py's). `rules hide | show | status` set which tools are visible by editing toolRules in
the config file itself: an edit keeps the file's formatting and comments and leaves a timestamped
backup, and a rule added by `hide` or `show` goes first, so it wins over what was there (the first
rule that sets `enabled` decides). `cache show | clear` look at and empty the persistent catalog
(each server's last known tools); neither connects to a server, and both work without a
configuration file (then on the default file in the user cache directory).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape
from rich.text import Text

from toolscout.cli.common import (
    EXIT_CONFIG,
    EXIT_INVALID,
    ConfigOption,
    JsonOption,
    Output,
    connected,
    iso_utc,
    load,
    run,
)
from toolscout.cli.setup import discover_here, import_command
from toolscout.config import (
    CONFIG_ENV_VAR,
    GatewayConfig,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    find_config,
)
from toolscout.config.edit import ConfigDocument
from toolscout.config.loader import check_config_file, check_config_text, environment_for, read_raw
from toolscout.config.locations import candidate_paths
from toolscout.config.models import CatalogCacheConfig, ExitCodes
from toolscout.config.rule_edits import about_tools, check_pattern, hide, show, tool_whitelist
from toolscout.config.secrets import mask_auth, mask_server
from toolscout.errors import ConfigurationError, InvalidArguments, ToolscoutError, Unavailable
from toolscout.render.text import counted

if TYPE_CHECKING:
    from toolscout.gateway.store import CatalogStore

_KINDS = {StdioServerConfig: "stdio", HttpServerConfig: "http", SseServerConfig: "sse"}

config_app = typer.Typer(name="config", help="Show, check and locate the configuration.", no_args_is_help=True)


def _rule_text(rule: dict[str, Any]) -> str:
    patterns = ", ".join(rule["pattern"])
    scope = f" (server {rule['server']})" if rule.get("server") else ""
    enabled = rule.get("enabled")
    verdict = "enabled" if enabled is True else "disabled" if enabled is False else "no change"
    tags = f", tags: [{', '.join(rule['tags'])}]" if rule.get("tags") else ""
    return f"{patterns}{scope} → {verdict}{tags}"


def _effective(config: GatewayConfig, raw: dict[str, Any]) -> dict[str, Any]:
    """The validated configuration with defaults, values as written where they were references, secrets masked."""
    dumped = config.model_dump(by_alias=True, exclude_none=True, exclude={"schema_url"})
    raw_servers = cast(dict[str, Any], raw.get("mcpServers") or {})
    servers: dict[str, Any] = {}
    for name, entry in cast(dict[str, dict[str, Any]], dumped["mcpServers"]).items():
        entry.pop("kind", None)
        written = cast(dict[str, Any], raw_servers.get(name) or {})
        for key in ("env", "headers"):
            if key in entry and isinstance(written.get(key), dict):
                entry[key] = {**entry[key], **{k: v for k, v in written[key].items() if "${" in str(v)}}
        oauth, written_oauth = entry.get("oauth"), written.get("oauth")
        if isinstance(oauth, dict) and isinstance(written_oauth, dict):
            # The model takes `client_secret` as well as `clientSecret`; the dump says `clientSecret`.
            as_written = cast(dict[str, Any], written_oauth)
            secret = as_written.get("clientSecret", as_written.get("client_secret"))
            if isinstance(secret, str) and "${" in secret:
                entry["oauth"] = {**cast(dict[str, Any], oauth), "clientSecret": secret}
        # A reference says where a secret lives; its value is not printed (masked, should it show).
        for key in ("command", "url"):
            if isinstance(written.get(key), str) and "${" in written[key]:
                entry[key] = written[key]
        args = written.get("args")
        if isinstance(args, list) and len(cast(list[Any], args)) == len(entry.get("args", [])):
            pairs = zip(cast(list[Any], args), entry["args"], strict=True)
            entry["args"] = [w if isinstance(w, str) and "${" in w else a for w, a in pairs]
        servers[name] = mask_server(entry)
    dumped["mcpServers"] = servers
    dumped["auth"] = mask_auth(dumped["auth"], cast(dict[str, Any], raw.get("auth") or {}))
    return dumped


@config_app.command("show")
def config_show(
    config: ConfigOption = None,
    status: Annotated[
        bool,
        typer.Option(
            "--status",
            help="Add how many servers are connected and how many tools they have, answered as `toolscout list` "
            "answers (the stored catalog, a running serve, else the servers connected now).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print the effective configuration, with secrets masked: its sources, servers, rules and caches."""
    output = Output(as_json)
    gateway_config, source = load(config, output, lenient=True)
    assert source is not None
    effective = _effective(gateway_config, read_raw(source.path))
    sources = _sources(source.path, gateway_config)
    totals = _totals(config, output) if status else None
    if as_json:
        extra: dict[str, Any] = {"totals": totals} if totals is not None else {}
        output.data({"path": str(source.path), "config": effective, "sources": sources, **extra})
        return
    output.print("MCP Discovery Configuration:\n")
    output.print(f"File: {escape(str(source.path))} (from {escape(source.origin)})")
    output.print(f"Mode: {gateway_config.mode}\n")
    # The meta-tools are the discovery: every mode but passthrough has them (or smart mode's one tool).
    shown = "Disabled (passthrough lists every tool natively)" if gateway_config.mode == "passthrough" else "Enabled"
    output.print(f"Status: {shown}")
    output.print(f"Cache: {escape(_cache_line(gateway_config))}\n")
    output.print(f"Sources ({len(sources)}):")
    for entry in sources:
        mark = "[green]✓[/green]" if entry["exists"] else "[red]✗[/red]"
        if entry["inUse"]:
            note = " - in use" if entry["exists"] else " - in use, not found"
        else:
            note = "" if entry["exists"] else " - not found"
        output.print(f"  {mark} {escape(entry['name'])} ({escape(_home_relative(entry['path']))}){note}")
    servers = cast(dict[str, dict[str, Any]], effective["mcpServers"])
    output.print(f"\nServers ({len(servers)}):")
    for name, entry in servers.items():
        mark = "[dim]-[/dim]" if entry.get("disabled") else "[green]✓[/green]"
        where = " ".join([entry["command"], *entry.get("args", [])]) if "command" in entry else entry["url"]
        kind = _KINDS[type(gateway_config.mcp_servers[name])]
        output.print(
            f"  {mark} [bold]{escape(name)}[/bold] ({kind}): {escape(where)}"
            + (" — disabled" if entry.get("disabled") else "")
        )
        for key in ("env", "headers"):
            for k, v in cast(dict[str, str], entry.get(key, {})).items():
                output.print(f"      {key} {escape(k)}={escape(v)}")
    rules = cast(list[dict[str, Any]], effective["toolRules"])
    output.print(f"\nTool Rules ({len(rules)}):")
    for index, rule in enumerate(rules, 1):
        output.print(f"  {index}. {escape(_rule_text(rule))}")
    output.print("")
    if totals is None:
        disabled = sum(1 for s in servers.values() if s.get("disabled"))
        output.print(
            f"Servers: {len(servers)} configured"
            + (f", {disabled} disabled" if disabled else "")
            + " [dim](--status adds how many are connected, and their tools)[/dim]"
        )
        return
    output.print(f"Servers: {totals['configured']} configured, {totals['connected']} connected")
    output.print(f"Tools: {totals['tools']} total, {totals['enabled']} enabled")
    if totals["stored"]:
        output.print(
            f"[dim](tools of {escape(', '.join(totals['stored']))} as last listed; `toolscout list "
            "--refresh` asks the servers)[/dim]"
        )


def _cache_line(config: GatewayConfig) -> str:
    """The caches a config keeps: the servers' tool lists (`cache`), the persistent catalog, and smart
    mode's matches, each with its TTL."""
    lists = config.cache
    listed = f"tool lists relisted after {lists.ttl:g}s" if lists.enabled else "tool lists asked for every time"
    catalog = config.catalog_cache
    ttl = config.smart.cache.tool_match_ttl
    if not catalog.enabled:
        return f"Disabled (catalogCache: false; every start waits for the servers; {listed})"
    where = f" at {catalog.path}" if catalog.path else ""
    return (
        f"Enabled (the catalog{where}, kept until a server's entry changes; {listed}; "
        f"smart mode's matches TTL: {ttl:g}s)"
    )


def _sources(used: Path, config: GatewayConfig) -> list[dict[str, Any]]:
    """Where servers come from: the config file in use and the files its `sources` name (both served),
    then each MCP client's other files for this user (those `toolscout config import` reads; a
    project's only when it exists)."""
    from toolscout.client_configs import CLIENTS
    from toolscout.client_configs.installer import Place
    from toolscout.config.sources import source_path

    found: list[dict[str, Any]] = [{"name": "toolscout", "path": str(used), "exists": True, "inUse": True}]
    seen: set[Path] = {used.resolve()}
    for source in config.sources:
        path = source_path(source, used)
        seen.add(path.resolve())
        found.append({"name": source.type, "path": str(path), "exists": path.is_file(), "inUse": True})
    place = Place.here()
    for fmt in CLIENTS.values():
        for location in fmt.locations(home=place.home, cwd=place.cwd, platform=place.platform, env=place.env):
            exists = location.path.is_file()
            if (location.scope != "user" and not exists) or location.path.resolve() in seen:
                continue
            seen.add(location.path.resolve())
            found.append({"name": fmt.id, "path": str(location.path), "exists": exists, "inUse": False})
    return found


def _home_relative(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def _totals(config: Path | None, output: Output) -> dict[str, Any]:
    """How many servers are connected and how many tools they have, as `toolscout list` finds them."""
    from toolscout.cli.answers import answers

    gateway_config, source = load(config, output)

    async def body() -> list[dict[str, Any]]:
        async with answers(gateway_config, source and source.path, output) as found:
            return await found.servers()

    try:
        rows: list[dict[str, Any]] = run(body)
    except ToolscoutError as exc:
        output.fail(exc)
    return {
        "configured": len(rows),
        # Listed when last asked counts: a stored catalog is one the server gave when it connected.
        "connected": sum(1 for r in rows if r["status"] == "connected" or (r["status"] == "idle" and r.get("stale"))),
        "tools": sum(r["toolCount"] for r in rows),
        "enabled": sum(r["enabledCount"] for r in rows),
        "stored": [r["name"] for r in rows if r.get("stale")],
    }


def _warnings(config: GatewayConfig, path: Path) -> list[str]:
    """Things that are valid but probably not what the user meant."""
    found: list[str] = []
    names = set(config.mcp_servers)
    for index, rule in enumerate(config.tool_rules, 1):
        if rule.server and not any(c in rule.server for c in "*?[{") and rule.server not in names:
            found.append(f"toolRules[{index - 1}]: no server named {rule.server!r}, so this rule never applies")
    env = environment_for(path)
    for name, server in config.mcp_servers.items():
        if isinstance(server, StdioServerConfig) and not server.disabled:
            search_path = server.env.get("PATH", env.get("PATH", os.defpath))
            if shutil.which(server.command, path=search_path) is None:
                found.append(
                    f"mcpServers.{name}.command: {server.command!r} is not on PATH; the server will fail to start"
                )
    return found


@config_app.command("validate")
def config_validate(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Check the configuration (exit 2 with precise messages when it is invalid)."""
    output = Output(as_json)
    gateway_config, source = load(config, output)
    assert source is not None
    warnings = _warnings(gateway_config, source.path)
    disabled = sum(1 for s in gateway_config.mcp_servers.values() if s.disabled)
    if as_json:
        output.data(
            {
                "valid": True,
                "path": str(source.path),
                "servers": len(gateway_config.mcp_servers),
                "disabled": disabled,
                "toolRules": len(gateway_config.tool_rules),
                "warnings": warnings,
            }
        )
        return
    output.print(
        f"[green]✓[/green] {escape(str(source.path))} is valid: {counted(len(gateway_config.mcp_servers), 'server')}"
        + (f" ({disabled} disabled)" if disabled else "")
        + f", {counted(len(gateway_config.tool_rules), 'tool rule')}."
    )
    for warning in warnings:
        output.print(f"[yellow]![/yellow] {escape(warning)}")


@config_app.command("sources")
def config_sources(as_json: JsonOption = False) -> None:
    """Where configuration is looked for, which file is used, and which MCP clients' configs exist to import."""
    output = Output(as_json)
    lookup: list[dict[str, Any]] = []
    if os.environ.get(CONFIG_ENV_VAR):
        env_path = Path(os.environ[CONFIG_ENV_VAR]).expanduser()
        lookup.append({"path": str(env_path), "origin": f"${CONFIG_ENV_VAR}", "exists": env_path.is_file()})
    lookup += [{"path": str(c.path), "origin": c.origin, "exists": c.path.is_file()} for c in candidate_paths()]
    try:
        used: str | None = str(find_config().path)
    except ConfigurationError:
        used = None
    configured = _configured_sources(Path(used)) if used is not None else []
    clients = [
        {"client": fmt.id, "name": fmt.display_name, "path": str(loc.path), "scope": loc.scope}
        for fmt, loc in discover_here()
    ]
    if as_json:
        output.data({"used": used, "lookup": lookup, "sources": configured, "clients": clients})
        return
    output.print("Configuration files (first found is used):")
    for entry in lookup:
        mark = "[green]✓[/green]" if entry["exists"] else "[dim]✗[/dim]"
        used_mark = "  [bold]← in use[/bold]" if entry["path"] == used else ""
        state = "" if entry["exists"] else " — not found"
        output.print(f"  {mark} {escape(entry['path'])} ({escape(entry['origin'])}){state}{used_mark}")
    if configured:
        output.print(f"\nSources its servers are also read from ({len(configured)}):")
        for entry in configured:
            where = f"{escape(entry['type'])} ({escape(entry['path'])})"
            if not entry["found"]:
                output.print(f"  [dim]✗[/dim] {where} — not found")
            elif "error" in entry:
                output.print(f"  [red]✗[/red] {where} — {escape(entry['error'])}")
            else:
                output.print(f"  [green]✓[/green] {where}: {escape(', '.join(entry['servers']) or 'no servers')}")
    output.print(f"\nMCP client configurations ({len(clients)} found, importable with `toolscout config import`):")
    for entry in clients:
        output.print(f"  [green]✓[/green] {escape(entry['client'])} ({entry['scope']}): {escape(entry['path'])}")


def _configured_sources(path: Path) -> list[dict[str, Any]]:
    """Each source the configuration at `path` names: its file, whether it exists, and its servers
    (or why they cannot be read); nothing when the configuration itself cannot be read."""
    from toolscout.config.loader import check_config_file
    from toolscout.config.sources import read_source, source_path

    try:
        config = check_config_file(path)
    except ConfigurationError:
        return []  # (`config validate` says why)
    found: list[dict[str, Any]] = []
    for source in config.sources:
        where = source_path(source, path)
        entry: dict[str, Any] = {"type": source.type, "path": str(where), "found": where.is_file()}
        if entry["found"]:
            try:
                entry["servers"] = list(read_source(source.type, where))
            except ConfigurationError as exc:
                entry["error"] = exc.message
        found.append(entry)
    return found


@config_app.command("path")
def config_path(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Print the path of the configuration file in use (exit 2 when there is none yet)."""
    output = Output(as_json)
    try:
        source = find_config(config)
    except ConfigurationError as exc:
        output.fail(ConfigurationError(f"{exc.message}\nRun `toolscout init` to create one."))
    if as_json:
        output.data({"path": str(source.path), "origin": source.origin})
    else:
        typer.echo(str(source.path))


@config_app.command("reload")
def config_reload(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Ask the running `toolscout serve` of the config file to read it again now, and say what changed
    (exit 2 when the file is invalid: the serve keeps what it had; 3 when no serve of it runs)."""
    output = Output(as_json)
    try:
        source = find_config(config)
    except ConfigurationError as exc:
        output.fail(exc)
    output.exit_codes = _exit_codes(source.path)
    answers = run(_ask_to_reload, source.path.resolve())
    if not answers:
        output.fail(
            Unavailable(
                f"No toolscout serve of {source.path} runs on this machine, so there is nothing to reload: "
                "`toolscout serve` reads the file when it starts (and a running one follows the file's edits "
                "by itself)."
            )
        )
    if as_json:
        output.data({"path": str(source.path), "serves": answers})
    for answer in answers:
        if answer.get("error"):
            if not as_json:
                output.note(
                    f"[red]✗[/red] Not reloaded: {escape(answer['error'])} The serve keeps the servers it had; "
                    "fix the file and run `toolscout config reload` again."
                )
            raise typer.Exit(EXIT_CONFIG)
        if as_json:
            continue
        output.print(
            f"[green]✓[/green] Reloaded {escape(str(source.path))} ({escape(answer['why'])}): "
            f"{escape(answer['changes'])}."
        )
        if answer["restartNeeded"]:
            output.print(
                f"[yellow]![/yellow] Restart `toolscout serve` to apply {escape(', '.join(answer['restartNeeded']))}."
            )


def _exit_codes(path: Path) -> ExitCodes:
    """The file's `cli.exitCodes`, when it can be read (an invalid file is the serve's to report)."""
    try:
        return check_config_file(path).cli.exit_codes
    except ConfigurationError:
        return "toolscout"


async def _ask_to_reload(path: Path) -> list[dict[str, Any]]:
    """What each running serve of the file at `path` (resolved) answered when asked to reload it (none: no
    serve of it runs)."""
    import httpx2

    from toolscout.serve.local_socket import SOCKET_HOST, serving_sockets

    answers: list[dict[str, Any]] = []
    for sock in serving_sockets():
        transport = httpx2.AsyncHTTPTransport(uds=str(sock))
        async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(5.0, read=120.0)) as client:
            try:
                reply = await client.post(f"http://{SOCKET_HOST}/api/v1/config/reload", json={"path": str(path)})
            except httpx2.HTTPError:
                continue  # (it stopped meanwhile)
        if reply.status_code == 200:
            answers.append(cast(dict[str, Any], reply.json()))
    return answers


config_app.command("import")(import_command)  # after show, validate, sources and path, as --help lists them


rules_app = typer.Typer(name="rules", help="Hide and show tools (edits toolRules in the config).", no_args_is_help=True)

RuleServerOption = Annotated[str | None, typer.Option("--server", "-s", help="Only tools of this server (a glob).")]
PatternArgument = Annotated[str, typer.Argument(help="Tool name, glob (`*delete*`) or /regex/flags.")]


def edit_rules(config: Any, output: Output, change: Any) -> None:
    """Load the config file for editing, apply `change(rules, servers) -> message`, validate, save with a backup."""
    gateway_config, source = load(config, output, lenient=True)
    assert source is not None
    try:
        document = ConfigDocument.load(source.path)
        rules = [dict(cast(dict[str, Any], r)) for r in cast(list[Any], document.get(["toolRules"]) or [])]
        message, changed = change(rules, list(gateway_config.mcp_servers))
        backup = None
        if changed:
            document.set(["toolRules"], rules)
            # Never write a file `serve` would then refuse.
            check_config_text(document.text(), document.format, str(source.path))
            backup = document.save()
    except ToolscoutError as exc:
        output.fail(exc)
    if output.json_mode:
        output.data(
            {
                "changed": changed,
                "message": Text.from_markup(message).plain,
                "path": str(source.path),
                "rules": rules,
                "backup": str(backup) if backup else None,
            }
        )
        return
    output.print(message)
    if backup is not None:
        output.note(f"Backup of the previous version: {escape(str(backup))}")


def checked_pattern(output: Output, pattern: str, server: str | None) -> None:
    """Exit 1 for a pattern or server glob that cannot compile."""
    try:
        check_pattern(pattern, server)
    except ValueError as exc:
        output.fail(InvalidArguments(str(exc)), EXIT_INVALID)


@rules_app.command("hide")
def rules_hide(
    pattern: PatternArgument, config: ConfigOption = None, server: RuleServerOption = None, as_json: JsonOption = False
) -> None:
    """Disable the tools matching PATTERN."""
    output = Output(as_json)
    checked_pattern(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        return hide(rules, pattern, server, quote=escape)

    edit_rules(config, output, change)


@rules_app.command("show")
def rules_show(
    pattern: PatternArgument, config: ConfigOption = None, server: RuleServerOption = None, as_json: JsonOption = False
) -> None:
    """Enable the tools matching PATTERN again."""
    output = Output(as_json)
    checked_pattern(output, pattern, server)

    def change(rules: list[dict[str, Any]], servers: list[str]) -> tuple[str, bool]:
        return show(rules, pattern, server, servers, quote=escape)

    edit_rules(config, output, change)


@rules_app.command("status")
def rules_status(
    config: ConfigOption = None,
    detailed: Annotated[bool, typer.Option("--detailed", help="List every tool with its state and tags.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The rules in order, and what they do to each server's tools."""
    output = Output(as_json)
    gateway_config, _ = load(config, output)
    rules = [r.model_dump(exclude_none=True) for r in gateway_config.tool_rules]

    async def body() -> None:
        async with connected(gateway_config, output) as gateway:
            servers: list[dict[str, Any]] = [
                {
                    "server": up.name,
                    "status": up.status.value,
                    "tools": [
                        {"name": t.name, "enabled": t.enabled, "tags": list(t.tags)}
                        for t in gateway.catalog.tools(up.name, include_disabled=True)
                    ],
                }
                for up in gateway.upstreams
            ]
        if as_json:
            output.data({"rules": rules, "whitelist": tool_whitelist(rules), "servers": servers})
            return
        mode = (
            "whitelist (tools no rule enables are hidden)"
            if tool_whitelist(rules)
            else ("everything visible unless hidden")
        )
        output.print(f"Tool rules ({len(rules)}), {mode}:")
        for index, rule in enumerate(rules, 1):
            enabled = rule.get("enabled")
            verdict = "show" if enabled is True else "hide" if enabled is False else "tag"
            scope = f" on {rule['server']}" if rule.get("server") else ""
            if not about_tools(rule):
                verdict += f" {rule['kind']}s"
            tags = f" tags: {', '.join(rule['tags'])}" if rule.get("tags") else ""
            output.print(f"  {index}. {verdict} {escape(', '.join(rule['pattern']))}{escape(scope)}{escape(tags)}")
        output.print("")
        for entry in servers:
            tools = cast(list[dict[str, Any]], entry["tools"])
            hidden = [t["name"] for t in tools if not t["enabled"]]
            output.print(
                f"[bold]{escape(str(entry['server']))}[/bold] ({entry['status']}): "
                f"{len(tools) - len(hidden)} visible, {len(hidden)} hidden"
                + (f": {escape(', '.join(hidden))}" if hidden and not detailed else "")
            )
            if detailed:
                for t in tools:
                    mark = "[green]✓[/green]" if t["enabled"] else "[red]✗[/red]"
                    tags = f"  [{', '.join(t['tags'])}]" if t["tags"] else ""
                    output.print(f"  {mark} {escape(t['name'])}{escape(tags)}")

    try:
        run(body)
    except ConfigurationError as exc:
        output.fail(exc)


cache_app = typer.Typer(
    name="cache", help="The persistent catalog: each server's last known tools.", no_args_is_help=True
)

CacheServerOption = Annotated[str | None, typer.Option("--server", "-s", help="Only this server's cached catalog.")]


def _config(config: Path | None, output: Output, *, strict: bool) -> GatewayConfig | None:
    """The configuration, or None when none is named and none is found (the defaults apply then)."""
    if config is None:
        try:
            find_config(None)
        except ConfigurationError:
            return None
    # `show` compares config hashes, which need `${VAR}`s filled in as `serve` fills them.
    return load(config, output, lenient=not strict)[0]


def _store(gateway_config: GatewayConfig | None) -> CatalogStore:
    # Imported here: the MCP types it needs are slow to import, and most commands never touch the cache.
    from toolscout.gateway.store import CatalogStore, store_path

    settings = gateway_config.catalog_cache if gateway_config is not None else CatalogCacheConfig()
    return CatalogStore(store_path(settings))


@cache_app.command("show")
def cache_show(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Cached servers: tool counts, when each was listed, and whether it still matches the config."""
    from toolscout.config.models import config_hash

    output = Output(as_json)
    gateway_config = _config(config, output, strict=True)
    store = _store(gateway_config)
    current = (
        {name: config_hash(server) for name, server in gateway_config.mcp_servers.items()}
        if gateway_config is not None
        else None
    )
    rows: list[dict[str, Any]] = []
    for entry in store.entries():
        if current is None:
            state = None
        elif entry.server not in current:
            state = "not configured"
        else:
            state = "current" if current[entry.server] == entry.config_hash else "config changed"
        rows.append(
            {
                "server": entry.server,
                "toolCount": entry.tool_count,
                "savedAt": iso_utc(entry.saved_at),
                "configHash": entry.config_hash[:12],
                "state": state,
            }
        )
    enabled = gateway_config is None or gateway_config.catalog_cache.enabled
    if output.json_mode:
        output.data({"path": str(store.path), "enabled": enabled, "entries": rows})
        return
    note = "" if enabled else " (catalogCache is off in this config)"
    output.print(f"Catalog cache: {escape(str(store.path))}{note}")
    if not rows:
        output.print("  (empty)")
    for row in rows:
        state = {"current": "[green]current[/green]", None: ""}.get(row["state"], f"[dim]{row['state']}[/dim]")
        output.print(f"  {escape(row['server'])}: {row['toolCount']} tools, saved {row['savedAt']}  {state}".rstrip())
    if any(r["state"] == "config changed" for r in rows):
        output.note("Entries for a changed config are never served; the next connection saves a current one.")


@cache_app.command("clear")
def cache_clear(config: ConfigOption = None, server: CacheServerOption = None, as_json: JsonOption = False) -> None:
    """Remove every cached catalog (or one server's): the next start waits for the servers again."""
    output = Output(as_json)
    store = _store(_config(config, output, strict=False))
    removed = store.clear(server)
    if output.json_mode:
        output.data({"path": str(store.path), "server": server, "removed": removed})
        return
    what = ("entry" if removed == 1 else "entries") + (f" of {escape(server)}" if server else "")
    output.print(f"Removed {removed} cached catalog {what} from {escape(str(store.path))}.")
