"""`toolscout doctor`: why a server's tools are found, or not, step by step.

Each configured server goes through four steps, and the first that fails says why the tools an
agent looks for are not there: configured (in the file and not disabled), started (connected now,
or the reason it did not, with the last lines the server wrote on stderr), listed (it lists tools),
and searchable (the rules leave some enabled, and a search finds them). A later step is not tried
once one fails. Searchable is checked by the search the command line runs over the live lists and,
when a `toolscout serve` of this config runs, by its own index as well, which answers only once it
is built.

Every server is started now (as `list --refresh` does): a stored list is what doctor would explain
away, not what it should trust.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolscout.cli.common import EXIT_FAILED, ConfigOption, JsonOption, Output, load, run
from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.errors import ToolscoutError
from toolscout.naming import tool_label

if TYPE_CHECKING:
    from toolscout.cli.answers import CatalogView, ServeAnswers, ServerView
    from toolscout.config import GatewayConfig
    from toolscout.config.models import ServerConfig

STEPS = ("configured", "started", "listed", "searchable")
"""The steps in order: a server's tools are found only when it passes all four."""


@dataclass
class Diagnosis:
    """One server's way through the steps: those passed, the one failed (if any) and why."""

    server: str
    passed: list[str] = field(default_factory=list[str])
    failed: str | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list[str])
    """What passed but is worth knowing (tools disabled by rules, hidden from listings)."""
    warnings: list[str] = field(default_factory=list[str])
    """What passed but should be fixed (a sign-in file others can read)."""
    tools: int = 0
    enabled: int = 0

    def ok(self, step: str, note: str | None = None) -> None:
        self.passed.append(step)
        if note:
            self.notes.append(note)

    def fail(self, step: str, reason: str) -> None:
        self.failed, self.reason = step, reason

    def to_dict(self) -> dict[str, Any]:
        steps = {
            step: "ok" if step in self.passed else "failed" if step == self.failed else "not tried" for step in STEPS
        }
        found: dict[str, Any] = {"server": self.server, "ok": self.failed is None, "steps": steps}
        if self.failed is not None:
            found |= {"failedStep": self.failed, "reason": self.reason}
        return found | {"tools": self.tools, "enabled": self.enabled, "notes": self.notes, "warnings": self.warnings}


def register(app: typer.Typer) -> None:
    app.command()(doctor)


def doctor(
    config: ConfigOption = None,
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="Only this server (repeatable).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Check each server: configured → started → listed → searchable, with the reason where a step
    fails (exit 3 when a server fails one, 2 for a configuration error)."""
    from toolscout.cli.answers import catalog_view, serve_answers

    output = Output(as_json)
    gateway_config, source = load(config, output)

    async def body() -> list[Diagnosis]:
        try:
            view = await catalog_view(gateway_config, output, server, refresh=True, retry_failed=True)
            found = [diagnose(gateway_config, view, s) for s in view.servers]
            async with serve_answers(gateway_config, source and source.path, output) as serve:
                if serve is not None:
                    for diagnosis in found:
                        await _served_search(serve, view, diagnosis)
        except ToolscoutError as exc:
            output.fail(exc)
        return found

    diagnoses: list[Diagnosis] = run(body)
    if as_json:
        output.data({"servers": [d.to_dict() for d in diagnoses], "ok": all(d.failed is None for d in diagnoses)})
    else:
        _print(output, diagnoses)
    if any(d.failed is not None for d in diagnoses):
        raise typer.Exit(EXIT_FAILED)


def diagnose(config: GatewayConfig, view: CatalogView, server: ServerView) -> Diagnosis:
    """Take `server` through the steps, as far as it goes, by what the command's view found."""
    found = Diagnosis(server.name)
    entry = config.mcp_servers[server.name]
    if entry.disabled:
        found.fail("configured", "`disabled: true` in its config entry: it is never started.")
        return found
    found.ok("configured")
    exposed = _exposed_sign_in(server.name, entry)
    if exposed is not None:
        found.warnings.append(f"its sign-in file {exposed}")
    if server.status != "connected":
        reason = server.error or f"it is {server.status}"
        found.fail("started", f"{reason}." if not reason.rstrip().endswith(".") else reason)
        return found
    found.ok("started", f"connected over {server.transport}" if server.transport else None)
    catalog = view.catalog
    tools = catalog.tools(server.name, include_disabled=True)
    found.tools, found.enabled = catalog.counts(server.name)
    if not tools:
        found.fail("listed", "the server lists no tools (it answers tools/list with an empty list).")
        return found
    found.ok("listed")
    enabled = [t for t in tools if t.enabled]
    if not enabled:
        found.fail("searchable", _why_none_enabled(config, view, server.name))
        return found
    if len(enabled) < len(tools):
        found.notes.append(f"{len(tools) - len(enabled)} of its {len(tools)} tools are disabled by toolRules")
    hidden = catalog.hidden_count(server.name)
    if hidden:
        found.notes.append(f"{hidden} hidden from listings (found by search only)")
    probe = enabled[0]
    hits = view.search(probe.name, server=server.name, limit=10, min_relevance=0.0)
    if not any(h.tool.server == server.name for h in hits):
        found.fail(
            "searchable", f"a search for {tool_label(server.name, probe.name)} by its name finds none of its tools."
        )
        return found
    found.ok("searchable")
    return found


def _exposed_sign_in(name: str, entry: ServerConfig) -> str | None:
    """What to do when the sign-in kept for remote server `name` can be read by others (None: nothing)."""
    if not isinstance(entry, HttpServerConfig | SseServerConfig):
        return None
    from toolscout.upstream.oauth import SignInFile

    return SignInFile.of(name, entry.url).exposed()


def _why_none_enabled(config: GatewayConfig, view: CatalogView, server: str) -> str:
    """Why none of `server`'s tools is enabled: the rules that disable them, a whitelist none
    matches, or their definitions (quarantined, a schema that cannot be validated)."""
    from toolscout.config.rules import RuleSet

    tools = view.catalog.tools(server, include_disabled=True)
    rules = RuleSet(config.tool_rules)
    deciding = {rules.deciding(server, t.name) for t in tools}
    why: list[str] = []
    named = sorted(i for i in deciding if i is not None)
    if named:
        shown = ", ".join(f"#{i + 1} ({', '.join(config.tool_rules[i].pattern)})" for i in named)
        why.append(f"toolRules {shown} disable them")
    if None in deciding and rules.whitelist:
        why.append("the rules are a whitelist and none enables them")
    quarantined = sum(1 for t in tools if t.quarantined)
    if quarantined:
        why.append(f"{quarantined} changed since pinned (quarantined: `toolscout pins diff {server}`)")
    unusable = sum(1 for t in tools if t.unusable)
    if unusable:
        why.append(f"{unusable} have an input schema that cannot be validated")
    detail = "; ".join(why) or "none is enabled"
    return f"all {len(tools)} of its tools are disabled: {detail}. `toolscout rules status` shows each rule's effect."


async def _served_search(serve: ServeAnswers, view: CatalogView, diagnosis: Diagnosis) -> None:
    """Check a server that passed every step against the running serve's own index too."""
    if diagnosis.failed is not None:
        return
    probe = next(t for t in view.catalog.tools(diagnosis.server) if t.enabled)
    try:
        hits = await serve.search(probe.name, server=diagnosis.server, limit=10, min_relevance=0.0)
    except ToolscoutError as exc:
        diagnosis.passed.remove("searchable")
        diagnosis.fail("searchable", f"the running toolscout serve could not search it: {exc.message}")
        return
    if not hits:
        diagnosis.passed.remove("searchable")
        diagnosis.fail(
            "searchable",
            "the running toolscout serve's index has none of its tools yet (it is built once the server's list "
            "arrives there; try again in a moment, or look at the serve's log).",
        )
    else:
        diagnosis.notes.append("found by the running toolscout serve's search too")


_MARK = {"ok": "[green]✓[/green]", "failed": "[red]✗[/red]", "not tried": "[dim]·[/dim]"}


def _print(output: Output, diagnoses: list[Diagnosis]) -> None:
    failing = sum(1 for d in diagnoses if d.failed is not None)
    output.print(f"Checking {len(diagnoses)} servers: configured → started → listed → searchable\n")
    for diagnosis in diagnoses:
        steps = diagnosis.to_dict()["steps"]
        chain = " → ".join(f"{_MARK[state]} {step}" for step, state in steps.items())
        output.print(f"[bold]{escape(diagnosis.server)}[/bold]  {chain}")
        if diagnosis.passed and "listed" in diagnosis.passed:
            output.print(f"  {diagnosis.enabled} of {diagnosis.tools} tools enabled")
        for note in diagnosis.notes:
            output.print(f"  [dim]{escape(note)}[/dim]")
        for warning in diagnosis.warnings:
            output.print(f"  [yellow]! {escape(warning)}[/yellow]")
        if diagnosis.failed is not None:
            output.print(f"  [red]{escape(diagnosis.failed)}:[/red] {escape(diagnosis.reason or '')}")
        output.print()
    if failing:
        output.print(f"[red]{failing} of {len(diagnoses)} servers fail a step.[/red]")
    else:
        output.print("[green]Every server's tools can be found.[/green]")
