"""What one principal may see and do: the scope of a client key or an issued token.

A scope names a namespace (a run's id), the servers it allows (exact names, or a group by
**prefix**: `aws-mcp-group` allows `aws-mcp-group-aws-cloudtrail`, since a group's servers are
named `{group}-{server}`; a bare prefix such as `aws` does not allow `awsome`), optional tool rules
that narrow further, and the tools pinned into its `tools/list`.

A server belongs to the global namespace (the config file's servers, visible from every namespace)
or to one namespace (registered at run time); a server registered in a namespace is shown under its
qualified name `{namespace}.{name}` (`qualified_name`), so two runs may register the same name, and
the token's `servers` match its registered name (`name`), as a run's allowed node ids match the
ids of its nodes.

The scope of the request being served is `current_scope()`, set by the MCP server per request
(`scoped`) from the request's principal. Everything below it that lists, finds or calls
something asks it (`Scope.sees_server`, `Scope.sees_tool`); outside any request (the CLI, stdio,
an HTTP gateway without authentication) it is `UNSCOPED`, which sees everything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from toolscout.config.rules import PatternSet, RuleKind, RuleSet, ToolRule

NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""A namespace: letters, digits, `_` and `-` (no `.`, which separates it from a server's name)."""
ALL_SERVERS = "*"
"""In a scope's `servers`: every server of its namespace and of the global one."""


def qualified_name(namespace: str | None, name: str) -> str:
    """The name a server is shown under: `name` for the global namespace, else `{namespace}.{name}`."""
    return name if namespace is None else f"{namespace}.{name}"


def server_allowed(allowed: Sequence[str], name: str) -> bool:
    """Whether `name` is one of `allowed`, or in the group of one (the prefix rule: `name`
    starts with `{entry}-`), or `allowed` holds `*`."""
    return any(entry == ALL_SERVERS or name == entry or name.startswith(f"{entry}-") for entry in allowed)


def _rules_of(tools: Sequence[str | ToolRule | dict[str, Any]]) -> tuple[PatternSet | None, RuleSet | None]:
    patterns = [t for t in tools if isinstance(t, str)]
    rules = [t if isinstance(t, ToolRule) else ToolRule.model_validate(t) for t in tools if not isinstance(t, str)]
    return (PatternSet.compile(patterns) if patterns else None, RuleSet(rules) if rules else None)


@dataclass(frozen=True)
class Scope:
    """What a principal may see: servers of `namespace` and the global one, narrowed by `servers`
    and `tools`. Hashable and comparable by what it allows (a search index is kept per scope)."""

    namespace: str | None = None
    """The principal's namespace; None: every namespace (an admin, or no authentication at all)."""
    servers: tuple[str, ...] | None = None
    """Allowed servers (exact, group prefix, or `*`); None: every server the namespace sees."""
    tools: tuple[str, ...] = ()
    """Tool rules narrowing further, each as canonical JSON (a pattern string, or a toolRules entry)."""
    pinned_tools: tuple[str, ...] = ()
    """`server/tool` names shown natively in this principal's tools/list beside the meta-tools."""
    label: str | None = None
    """A name for the principal in logs and the audit log (never the credential)."""
    _patterns: PatternSet | None = field(default=None, compare=False, hash=False, repr=False)
    _rules: RuleSet | None = field(default=None, compare=False, hash=False, repr=False)

    @classmethod
    def of(
        cls,
        *,
        namespace: str | None = None,
        servers: Sequence[str] | None = None,
        tools: Sequence[str | ToolRule | dict[str, Any]] = (),
        pinned_tools: Sequence[str] = (),
        label: str | None = None,
    ) -> Scope:
        """A scope from its parts, as a key or token declares them (tool rules as in `toolRules`, or
        bare patterns: `["!*delete*"]` allows every tool but those).

        Raises:
            ValueError: a namespace that is not a valid name, or a tool rule or pattern that does not compile.
        """
        if namespace is not None and not NAMESPACE_PATTERN.match(namespace):
            raise ValueError(f"namespace {namespace!r} must be 1-64 letters, digits, '_' or '-'")
        patterns, rules = _rules_of(tools)
        canonical = tuple(
            json.dumps(
                t if isinstance(t, str) else ToolRule.model_validate(t).model_dump(exclude_none=True), sort_keys=True
            )
            for t in tools
        )
        return cls(
            namespace=namespace,
            servers=tuple(servers) if servers is not None else None,
            tools=canonical,
            pinned_tools=tuple(pinned_tools),
            label=label,
            _patterns=patterns,
            _rules=rules,
        )

    @property
    def unrestricted(self) -> bool:
        """Whether this scope sees everything (no namespace, servers or tools narrow it)."""
        return self.namespace is None and self.servers is None and not self.tools

    def sees_server(self, namespace: str | None, name: str) -> bool:
        """Whether a server registered as `name` in `namespace` (None: global) is visible."""
        if namespace is not None and self.namespace is not None and namespace != self.namespace:
            return False
        return self.servers is None or server_allowed(self.servers, name)

    def sees_tool(self, namespace: str | None, name: str, shown_as: str, tool: str, kind: RuleKind = "tool") -> bool:
        """Whether `tool` (a tool name, or a prompt name or resource URI by `kind`) of the server
        registered as `name` in `namespace`, shown as `shown_as`, is visible."""
        if not self.sees_server(namespace, name):
            return False
        if kind == "tool" and self._patterns is not None and not self._patterns.matches(tool):
            return False
        return self._rules is None or self._rules.verdict(shown_as, tool, kind).enabled


UNSCOPED = Scope()
"""The scope of whoever is not narrowed: the CLI, stdio, admins, an HTTP gateway without keys."""

_current: ContextVar[Scope] = ContextVar("toolscout_scope", default=UNSCOPED)


def current_scope() -> Scope:
    """The scope of the request being served (`UNSCOPED` outside any)."""
    return _current.get()


@contextmanager
def scoped(scope: Scope) -> Generator[Scope]:
    """Serve what runs inside under `scope` (the MCP server wraps each request's handler in it)."""
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
