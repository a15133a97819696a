"""Tool rules: the `toolRules` entries, the name patterns they are written in, and the compiled set
that says which upstream tools are enabled and which tags they carry.

Patterns follow anygpt's glob-matcher, which the discovery-engine design reuses. A glob (`*`, `?`,
`[abc]`, `{a,b}`) matches the whole name, ignoring case. `/regex/flags` searches the name; without
flags it ignores case, as there. `!pattern` excludes: a name matching any negation never matches
the rule, and a rule made only of negations matches every other name. The audit log's redaction
keys are written the same way.

A rule may be limited to one server (`server`, itself a glob). Tags accumulate from every matching
rule. As soon as any rule says `enabled: true` the rules are a whitelist, and tools no rule enables
are disabled. Which of the matching rules that set `enabled` decides is `toolRulesEvaluation`
(`RuleEvaluation`): the first one (`first-match`, the default, as the design's prose says), the first
one that changes the tool's default verdict (`first-change`, its pseudocode read line by line: in a
whitelist a matching `enabled: false` changes nothing, so a later `enabled: true` still enables; and
a rule's patterns are read in order as its `matchPattern` reads them, the first that matches
deciding, so a negation after a positive pattern that matched excludes nothing), or
any `enabled: false` over every `enabled: true` (`deny-wins`, how its examples read: `['*']` enabled,
then `['*delete*']` disabled, blocks the delete tools).

A rule's `kind` says what it is about: `tool` (the default: tool names), `prompt` (prompt names) or
`resource` (resource URIs, and resource templates by their URI template). Only rules of the asked
kind take part in a verdict, so each kind has its own whitelist and a tool rule never hides a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

Matcher = Callable[[str], bool]
"""A compiled pattern: whether it matches a name."""

_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0, "d": 0, "v": 0}


def _glob_to_regex(glob: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{" and (end := glob.find("}", i + 1)) != -1:
            out.append("(?:" + "|".join(re.escape(alt) for alt in glob[i + 1 : end].split(",")) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.IGNORECASE)


def _parse_regex(pattern: str) -> re.Pattern[str]:
    last = pattern.rfind("/")
    body, flag_text = pattern[1:last], pattern[last + 1 :]
    unknown = sorted(set(flag_text) - set(_REGEX_FLAGS))
    if unknown:
        raise ValueError(f"unknown regex flag(s) {''.join(unknown)!r} in {pattern!r}; use i, m or s")
    flags = re.IGNORECASE if not flag_text else 0
    for f in flag_text:
        flags |= _REGEX_FLAGS[f]
    # JavaScript spells named groups (?<name>...); Python wants (?P<name>...).
    body = re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", body)
    try:
        return re.compile(body, flags)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


def is_regex(pattern: str) -> bool:
    """Whether `pattern` is written `/regex/flags` rather than as a glob."""
    return pattern.startswith("/") and pattern.rfind("/") > 0


def compile_pattern(pattern: str) -> Matcher:
    """Compile one positive pattern (no leading `!`) into a predicate over names.

    Raises:
        ValueError: the pattern is empty or an invalid regular expression.
    """
    body = pattern[1:] if pattern.startswith("!") else pattern
    if not body:
        raise ValueError("empty pattern")
    if is_regex(body):
        compiled = _parse_regex(body)
        return lambda name: compiled.search(name) is not None
    glob = _glob_to_regex(body)
    return lambda name: glob.fullmatch(name) is not None


@dataclass(frozen=True)
class PatternSet:
    """A rule's patterns: any positive one matches, any negation vetoes (or, read in order, the first
    that decides does: `matches_in_order`)."""

    positive: tuple[Matcher, ...]
    negative: tuple[Matcher, ...]
    ordered: tuple[tuple[bool, Matcher], ...] = ()
    """Every pattern as written, `(is a negation, matcher)`."""

    @classmethod
    def compile(cls, patterns: Sequence[str]) -> PatternSet:
        """Compile a rule's patterns, the `!` ones as negations."""
        ordered = tuple(
            (True, compile_pattern(p[1:])) if p.startswith("!") else (False, compile_pattern(p)) for p in patterns
        )
        positive = tuple(m for negated, m in ordered if not negated)
        negative = tuple(m for negated, m in ordered if negated)
        return cls(positive, negative, ordered)

    def matches_in_order(self, name: str) -> bool:
        """Whether `name` matches as the discovery-engine design's `matchPattern` reads the patterns: in
        the order written, the first that matches decides (a negation excludes, a positive pattern
        includes), and nothing matched is no match, so a rule of negations alone matches nothing."""
        return next((not negated for negated, m in self.ordered if m(name)), False)

    def matches(self, name: str) -> bool:
        """Whether `name` matches: no negation does, and some positive pattern does (if there is one)."""
        if any(m(name) for m in self.negative):
            return False
        return not self.positive or any(m(name) for m in self.positive)


def patterns_compile(patterns: list[str]) -> list[str]:
    """Check, as a validator, that every rule pattern (a glob or `/regex/flags`) compiles."""
    for pattern in patterns:
        compile_pattern(pattern)  # raises ValueError with a readable reason
    return patterns


Load = Literal["eager", "deferred"]
"""How a client that defers tool schemas should treat a tool (`load` on a server entry or a tool rule):
always in its context (`eager`: `_meta["anthropic/alwaysLoad"]`), or found by its own tool search
(`deferred`, the default). In dynamic mode an eager tool is also listed from the start."""

RuleEvaluation = Literal["first-match", "first-change", "deny-wins"]
"""Which matching rule's `enabled` decides a tool's verdict (the module's docstring says each)."""
RULE_EVALUATIONS: tuple[RuleEvaluation, ...] = ("first-match", "first-change", "deny-wins")


class ToolRule(BaseModel):
    """One entry of `toolRules`: which tools it matches, and what it says about them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    pattern: list[str] = Field(min_length=1)
    server: str | None = None
    enabled: bool | None = None
    tags: list[str] = Field(default_factory=list[str])
    hidden: bool | None = None
    """Tools only: `true` keeps the tools out of every listing (tools/list, list_tools, the catalog in a
    description) while search, smart mode and calls by name still find them; the first rule that sets
    it decides, as for `enabled`."""
    load: Load | None = None
    """Tools only: `eager` or `deferred` for the matching tools, over their server's `load`; the first
    rule that sets it decides, as for `hidden`."""
    kind: Literal["tool", "prompt", "resource"] | None = None
    """What the rule is about: tools (by name; the default, also when unset), prompts (by name) or
    resources (by URI, templates by their URI template). Each kind has rules, and a whitelist, of its own."""

    @field_validator("pattern", mode="before")
    @classmethod
    def _one_pattern_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    _patterns_compile = field_validator("pattern")(patterns_compile)


RuleKind = Literal["tool", "prompt", "resource"]
"""What a rule is about: tool names, prompt names or resource URIs."""


@dataclass(frozen=True)
class Verdict:
    """What the rules say about one tool."""

    enabled: bool
    tags: tuple[str, ...]
    hidden: bool = False
    """Listed nowhere, though found by search and callable (`ToolRule.hidden`)."""
    load: Load | None = None
    """`eager` or `deferred` as a rule says (`ToolRule.load`); None: as its server's entry says."""


@dataclass(frozen=True)
class _CompiledRule:
    kind: RuleKind
    patterns: PatternSet
    server: Matcher | None
    enabled: bool | None
    tags: tuple[str, ...]
    hidden: bool | None = None
    load: Load | None = None


class RuleSet:
    """The compiled `toolRules`, applied to (server, name) pairs of one kind (tools unless told)."""

    def __init__(self, rules: Sequence[ToolRule] = (), evaluation: RuleEvaluation = "first-match") -> None:
        self.evaluation: RuleEvaluation = evaluation
        """Which matching rule decides (`RuleEvaluation`)."""
        self.replace(rules)

    def replace(self, rules: Sequence[ToolRule], evaluation: RuleEvaluation | None = None) -> None:
        """Apply `rules` (and `evaluation`, when given) from now on, in place (whoever holds this set sees
        them: a reloaded config)."""
        if evaluation is not None:
            self.evaluation = evaluation
        self.rules = tuple(rules)
        """The rules as written, in order."""
        self._rules = tuple(
            _CompiledRule(
                kind=rule.kind or "tool",
                patterns=PatternSet.compile(rule.pattern),
                server=compile_pattern(rule.server) if rule.server else None,
                enabled=rule.enabled,
                tags=tuple(rule.tags),
                hidden=rule.hidden,
                load=rule.load,
            )
            for rule in rules
        )
        self._whitelists: set[RuleKind] = {rule.kind or "tool" for rule in rules if rule.enabled is True}

    @property
    def whitelist(self) -> bool:
        """Whether the tool rules are a whitelist (some rule of kind `tool` says `enabled: true`)."""
        return "tool" in self._whitelists

    def _matches(self, rule: _CompiledRule, name: str) -> bool:
        """Whether `rule`'s patterns match `name`: order-free, or in order under `first-change` (the
        design's pseudocode read line by line, its pattern matching too)."""
        if self.evaluation == "first-change":
            return rule.patterns.matches_in_order(name)
        return rule.patterns.matches(name)

    def deciding(self, server: str, tool: str, kind: RuleKind = "tool") -> int | None:
        """The index in `toolRules` of the rule that enables or disables `server`'s `tool` (None: no
        rule does, and it is enabled unless the rules of its kind are a whitelist)."""
        said = [
            (index, rule.enabled)
            for index, rule in enumerate(self._rules)
            if rule.kind == kind
            and rule.enabled is not None
            and (rule.server is None or rule.server(server))
            and self._matches(rule, tool)
        ]
        return self._decide(said, kind)[1]

    def _decide(self, said: Sequence[tuple[int, bool]], kind: RuleKind) -> tuple[bool, int | None]:
        """Whether a name is enabled, given what the matching rules of `kind` said (index, `enabled`) in
        order, and the index of the rule whose word that is (None: the default)."""
        default = kind not in self._whitelists
        if not said:
            return default, None
        if self.evaluation == "deny-wins":
            denied = next((index for index, enabled in said if not enabled), None)
            return (False, denied) if denied is not None else (True, said[0][0])
        if self.evaluation == "first-change":
            # A rule decides only while the verdict is still the default; the first that changes it ends that.
            changed = next((index for index, enabled in said if enabled != default), None)
            return (not default, changed) if changed is not None else (default, said[0][0])
        index, enabled = said[0]
        return enabled, index

    def hiding(self, server: str, tool: str) -> int | None:
        """The index in `toolRules` of the rule that says whether `server`'s `tool` is hidden from
        listings (None: no rule does, and it is listed)."""
        for index, rule in enumerate(self._rules):
            if rule.kind != "tool" or rule.hidden is None:
                continue
            if (rule.server is None or rule.server(server)) and self._matches(rule, tool):
                return index
        return None

    def verdict(self, server: str, tool: str, kind: RuleKind = "tool") -> Verdict:
        """Return what the rules of `kind` say about `server`'s tool (or prompt name, or resource URI) `tool`."""
        hidden: bool | None = None
        load: Load | None = None
        tags: dict[str, None] = {}
        said: list[tuple[int, bool]] = []
        for index, rule in enumerate(self._rules):
            if rule.kind != kind:
                continue
            if rule.server is not None and not rule.server(server):
                continue
            if not self._matches(rule, tool):
                continue
            if rule.enabled is not None:
                said.append((index, rule.enabled))
            if hidden is None and rule.hidden is not None:
                hidden = rule.hidden
            if load is None and rule.load is not None:
                load = rule.load
            tags.update(dict.fromkeys(rule.tags))
        enabled = self._decide(said, kind)[0]
        return Verdict(enabled=enabled, tags=tuple(tags), hidden=bool(hidden), load=load)
