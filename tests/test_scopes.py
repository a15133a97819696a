"""Scopes: the prefix rule for servers, namespaces, and tool rules that narrow further."""

from __future__ import annotations

import pytest

from toolscout.config.scopes import UNSCOPED, Scope, current_scope, qualified_name, scoped, server_allowed


@pytest.mark.parametrize(
    ("allowed", "name", "sees"),
    [
        (["aws-mcp-group"], "aws-mcp-group", True),
        (["aws-mcp-group"], "aws-mcp-group-aws-cloudtrail", True),
        (["aws"], "awsome", False),
        (["aws"], "aws-x", True),
        (["aws-mcp-group"], "aws-mcp-groupie", False),
        (["aws-mcp-group-"], "aws-mcp-group-x", False),
        (["abuseipdb", "virustotal"], "virustotal", True),
        (["abuseipdb"], "abuseipdb2", False),
        ([], "notes", False),
        (["*"], "anything", True),
    ],
)
def test_prefix_matching_is_spec_002s(allowed: list[str], name: str, sees: bool) -> None:
    assert server_allowed(allowed, name) is sees


def test_a_namespace_sees_its_own_servers_and_the_global_ones_only() -> None:
    scope = Scope.of(namespace="run-1", servers=["*"])
    assert scope.sees_server(None, "notes")
    assert scope.sees_server("run-1", "aws-x")
    assert not scope.sees_server("run-2", "aws-x")
    assert Scope.of(namespace=None).sees_server("run-2", "aws-x")
    assert qualified_name("run-1", "aws-x") == "run-1.aws-x"
    assert qualified_name(None, "notes") == "notes"


def test_tool_patterns_and_rules_narrow() -> None:
    scope = Scope.of(namespace="a", servers=["notes"], tools=["!*delete*"])
    assert scope.sees_tool(None, "notes", "notes", "create_note")
    assert not scope.sees_tool(None, "notes", "notes", "delete_note")
    assert not scope.sees_tool(None, "other", "other", "create_note")
    ruled = Scope.of(servers=["*"], tools=[{"pattern": "read_*", "enabled": True}])
    assert ruled.sees_tool(None, "fs", "fs", "read_file")
    assert not ruled.sees_tool(None, "fs", "fs", "write_file")
    assert Scope.of(servers=["*"], tools=["!*delete*"]) == Scope.of(servers=["*"], tools=["!*delete*"])
    assert hash(Scope.of(tools=["x"])) == hash(Scope.of(tools=["x"]))


def test_bad_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="namespace"):
        Scope.of(namespace="a.b")


def test_scoped_sets_and_restores() -> None:
    scope = Scope.of(namespace="n", servers=["x"])
    assert current_scope() is UNSCOPED
    with scoped(scope):
        assert current_scope() is scope
    assert current_scope() is UNSCOPED
    assert UNSCOPED.unrestricted and not scope.unrestricted
