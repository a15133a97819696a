"""Tool rules: which upstream tools are enabled, and which tags they carry.

A rule's patterns (globs, `/regex/flags`, `!negations`) are those of `toolscout.config.patterns`.
A rule may be limited to one server (`server`, itself a glob). Tags accumulate
from every matching rule; the first matching rule that sets `enabled` decides.
As soon as any rule says `enabled: true` the rules are a whitelist and tools no
rule enables are disabled.

A rule's `kind` says what it is about: `tool` (the default: tool names), `prompt`
(prompt names) or `resource` (resource URIs, and resource templates by their URI
template). Only rules of the asked kind take part in a verdict, so each kind has its
own whitelist and a tool rule never hides a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from toolscout.config.models import ToolRule
from toolscout.config.patterns import Matcher, PatternSet, compile_pattern

RuleKind = Literal["tool", "prompt", "resource"]


@dataclass(frozen=True)
class Verdict:
    """What the rules say about one tool."""

    enabled: bool
    tags: tuple[str, ...]


@dataclass(frozen=True)
class _CompiledRule:
    kind: RuleKind
    patterns: PatternSet
    server: Matcher | None
    enabled: bool | None
    tags: tuple[str, ...]


class RuleSet:
    """The compiled `toolRules`, applied to (server, name) pairs of one kind (tools unless told)."""

    def __init__(self, rules: Sequence[ToolRule] = ()) -> None:
        self.replace(rules)

    def replace(self, rules: Sequence[ToolRule]) -> None:
        """Apply `rules` from now on, in place (whoever holds this set sees them: a reloaded config)."""
        self._rules = tuple(
            _CompiledRule(
                kind=rule.kind or "tool",
                patterns=PatternSet.compile(rule.pattern),
                server=compile_pattern(rule.server) if rule.server else None,
                enabled=rule.enabled,
                tags=tuple(rule.tags),
            )
            for rule in rules
        )
        self._whitelists: set[RuleKind] = {rule.kind or "tool" for rule in rules if rule.enabled is True}

    @property
    def whitelist(self) -> bool:
        """Whether the tool rules are a whitelist (some rule of kind `tool` says `enabled: true`)."""
        return "tool" in self._whitelists

    def verdict(self, server: str, tool: str, kind: RuleKind = "tool") -> Verdict:
        """What the rules of `kind` say about `server`'s tool (or prompt name, or resource URI) `tool`."""
        enabled: bool | None = None
        tags: dict[str, None] = {}
        for rule in self._rules:
            if rule.kind != kind:
                continue
            if rule.server is not None and not rule.server(server):
                continue
            if not rule.patterns.matches(tool):
                continue
            if enabled is None and rule.enabled is not None:
                enabled = rule.enabled
            tags.update(dict.fromkeys(rule.tags))
        if enabled is None:
            enabled = kind not in self._whitelists
        return Verdict(enabled=enabled, tags=tuple(tags))
