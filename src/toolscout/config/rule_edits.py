"""Hiding and showing tools by editing `toolRules` (as plain dicts, as a config file holds them): the
one way `toolscout rules hide|show`, `rules hide-tool|show-tool|hide-server|...` and the dashboard's
toggles change the rules.

To hide, a rule `{pattern: [P], enabled: false}` (with `server`) goes first, and a rule showing the
same target is dropped. To show, the rules hiding that target go (their tags kept); if the tools
would still be hidden (another rule, or a whitelist), a rule enabling them goes first, and when
that turns the rules into a whitelist, a final `*` rule keeps every other tool enabled.

`conceal` and `reveal` do the same for `hidden` (listed nowhere, still found and callable): a rule
`{pattern: [P], hidden: true}` goes first; to list the tools again, the rules hiding that target go,
and if another rule would still hide them, `{pattern: [P], hidden: false}` goes first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolscout.config.rules import RuleSet, ToolRule, compile_pattern

CATCH_ALL: dict[str, Any] = {"pattern": ["*"], "enabled": True}
GLOB_CHARACTERS = "*?[{/!"

Quote = Callable[[str], str]
"""How a pattern is written into a message (the CLI escapes Rich markup; plain text as is)."""


def _plain(text: str) -> str:
    return text


def same_target(rule: dict[str, Any], pattern: str, server: str | None) -> bool:
    """Whether `rule` is about tools and names exactly `pattern` (on `server`)."""
    return about_tools(rule) and rule.get("pattern") in ([pattern], pattern) and rule.get("server") == server


def about_tools(rule: dict[str, Any]) -> bool:
    """Rules of another `kind` (prompts, resources) have their own whitelist and never touch tools."""
    return rule.get("kind") in (None, "tool")


def tool_whitelist(rules: list[dict[str, Any]]) -> bool:
    """Whether the tool rules are a whitelist (a rule says `enabled: true`)."""
    return any(r.get("enabled") is True and about_tools(r) for r in rules)


def check_pattern(pattern: str, server: str | None) -> None:
    """Raise ValueError saying why `pattern` (or the `server` glob) cannot be used."""
    for value in (pattern, server):
        if value is not None:
            try:
                compile_pattern(value)
            except ValueError as exc:
                raise ValueError(f"{value!r} is not a usable pattern: {exc}.") from None


def visible(pattern: str, server: str | None, rules: list[dict[str, Any]], servers: Sequence[str]) -> bool:
    """Whether, under `rules`, the tools `pattern` names are enabled on every server it concerns.

    A plain tool name can be checked without connecting; for a glob or regex that would need
    every tool name, so it counts as visible only when no rule decides anything at all.
    """
    if any(c in pattern for c in GLOB_CHARACTERS):
        return not any("enabled" in r and about_tools(r) for r in rules)
    ruleset = RuleSet([ToolRule.model_validate(r) for r in rules])
    scope = compile_pattern(server) if server else None
    return all(ruleset.verdict(name, pattern).enabled for name in servers if scope is None or scope(name))


def hide(rules: list[dict[str, Any]], pattern: str, server: str | None, quote: Quote = _plain) -> tuple[str, bool]:
    """Hide the tools `pattern` names (on `server`), editing `rules` in place; the message, and whether it changed."""
    where = f" on {server}" if server else ""
    if rules and same_target(rules[0], pattern, server) and rules[0].get("enabled") is False:
        return f"{quote(pattern)}{quote(where)} is already hidden by the first rule; nothing changed.", False
    # A `show` of the same pattern would now contradict this rule; drop it.
    rules[:] = [r for r in rules if not (same_target(r, pattern, server) and r.get("enabled") is True)]
    rule: dict[str, Any] = {"pattern": [pattern], "enabled": False}
    if server:
        rule["server"] = server
    rules.insert(0, rule)
    return f"Hidden: tools matching {quote(pattern)}{quote(where)} (rule 1 of {len(rules)}).", True


def show(
    rules: list[dict[str, Any]], pattern: str, server: str | None, servers: Sequence[str], quote: Quote = _plain
) -> tuple[str, bool]:
    """Show the tools `pattern` names (on `server`) again, editing `rules` in place; the message, and whether
    it changed. `servers`: every configured server's name (to tell whether a plain name is still hidden)."""
    where = f" on {server}" if server else ""
    kept: list[dict[str, Any]] = []
    unhidden = False
    for rule in rules:
        if same_target(rule, pattern, server) and rule.get("enabled") is False:
            unhidden = True
            if rule.get("tags"):  # the tags still apply; only the hiding goes
                kept.append({k: v for k, v in rule.items() if k != "enabled"})
            continue
        kept.append(rule)
    rules[:] = kept
    if unhidden and visible(pattern, server, rules, servers):
        return f"Shown: removed the rule hiding {quote(pattern)}{quote(where)}.", True
    whitelist = tool_whitelist(rules)
    rule: dict[str, Any] = {"pattern": [pattern], "enabled": True}
    if server:
        rule["server"] = server
    rules.insert(0, rule)
    note = ""
    if not whitelist and CATCH_ALL not in rules:
        # An `enabled: true` rule turns the rules into a whitelist; this keeps everything else visible.
        rules.append(dict(CATCH_ALL))
        note = " A final `*` rule keeps every other tool enabled."
    return f"Shown: tools matching {quote(pattern)}{quote(where)} (rule 1 of {len(rules)}).{note}", True


# Hiding from listings (`hidden: true`): the tools stay enabled, found by search and smart mode, and
# callable by name; only tools/list, list_tools and the catalog in a description leave them out.


def _without_hidden(rule: dict[str, Any]) -> dict[str, Any] | None:
    """`rule` without its `hidden` key, or None when nothing else is left for it to do."""
    rest = {k: v for k, v in rule.items() if k != "hidden"}
    return rest if "enabled" in rest or rest.get("tags") else None


def conceal(rules: list[dict[str, Any]], pattern: str, server: str | None, quote: Quote = _plain) -> tuple[str, bool]:
    """Hide the tools `pattern` names (on `server`) from every listing, editing `rules` in place; the
    message, and whether it changed."""
    where = f" on {server}" if server else ""
    if rules and same_target(rules[0], pattern, server) and rules[0].get("hidden") is True:
        return (
            f"{quote(pattern)}{quote(where)} is already hidden from listings by the first rule; nothing changed.",
            False,
        )
    kept: list[dict[str, Any]] = []
    for rule in rules:  # a rule listing the same target again would contradict this one
        if same_target(rule, pattern, server) and rule.get("hidden") is False:
            rest = _without_hidden(rule)
            if rest is not None:
                kept.append(rest)
            continue
        kept.append(rule)
    rule: dict[str, Any] = {"pattern": [pattern], "hidden": True}
    if server:
        rule["server"] = server
    rules[:] = [rule, *kept]
    return (
        f"Hidden from listings: tools matching {quote(pattern)}{quote(where)} (rule 1 of {len(rules)}); "
        "search and smart mode still find them.",
        True,
    )


def reveal(rules: list[dict[str, Any]], pattern: str, server: str | None, quote: Quote = _plain) -> tuple[str, bool]:
    """List the tools `pattern` names (on `server`) again, editing `rules` in place; the message, and
    whether it changed. `*` without a server lists every tool again: every `hidden` goes."""
    where = f" on {server}" if server else ""
    everything = pattern == "*" and server is None
    kept: list[dict[str, Any]] = []
    removed = 0
    for rule in rules:
        if about_tools(rule) and rule.get("hidden") is True and (everything or same_target(rule, pattern, server)):
            removed += 1
            rest = _without_hidden(rule)
            if rest is not None:
                kept.append(rest)
            continue
        if everything and about_tools(rule) and rule.get("hidden") is False:
            rest = _without_hidden(rule)  # no longer needed: nothing is hidden
            if rest is not None:
                kept.append(rest)
            continue
        kept.append(rule)
    rules[:] = kept
    still_hidden = any(about_tools(r) and r.get("hidden") is True for r in rules)
    if not still_hidden:
        if removed:
            return f"Listed again: tools matching {quote(pattern)}{quote(where)}.", True
        return f"{quote(pattern)}{quote(where)} is not hidden from listings; nothing changed.", False
    # Another rule may still hide them (a glob, or a server's rule): this one, first, lists them.
    rule: dict[str, Any] = {"pattern": [pattern], "hidden": False}
    if server:
        rule["server"] = server
    rules.insert(0, rule)
    return f"Listed again: tools matching {quote(pattern)}{quote(where)} (rule 1 of {len(rules)}).", True
