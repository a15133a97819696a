"""naming.py: which server an upstream's own name belongs to, and where a meta-tool call names its tool."""

from __future__ import annotations

import pytest

from toolscout.errors import AmbiguousName
from toolscout.naming import call_target, native_names, only_owner, split_tool_label, tool_label


def test_a_call_target_is_read_under_discovery_and_compact_keys() -> None:
    assert call_target({"server": "fs", "tool": "read", "arguments": {}}) == {"server": "fs", "tool": "read"}
    assert call_target({"server_name": "fs", "tool_name": "read"}) == {"server": "fs", "tool": "read"}
    # Only strings name a target; what is missing stays missing (the caller says "?" or leaves it out).
    assert call_target({"server": 3, "tool_name": "read"}) == {"tool": "read"}
    assert call_target({}) == {}
    # Both spellings at once: discovery's key is read first, in the audit and in error results alike.
    assert call_target({"server": "a", "server_name": "b"}) == {"server": "a"}


def test_an_upstream_name_belongs_to_the_one_server_that_has_it() -> None:
    assert only_owner("tool", "read", ["fs", "fs"], ["fs__read"]) == "fs"
    assert only_owner("tool", "read", [], []) is None
    with pytest.raises(AmbiguousName) as raised:
        only_owner("prompt", "greet", ["b", "a"], ["a__greet", "b__greet"])
    assert raised.value.message == (
        "Several servers have a prompt 'greet' (a, b): use the gateway's name for it, a__greet, b__greet."
    )
    assert raised.value.details["servers"] == ["a", "b"]


def test_a_tool_label_reads_back_to_its_server_and_tool() -> None:
    servers = ["units", "team/tools", "team"]
    assert split_tool_label(tool_label("units", "convert_units"), servers) == ("units", "convert_units")
    # A server name holding the separator: the longest configured name that fits wins.
    assert split_tool_label("team/tools/search", servers) == ("team/tools", "search")
    assert split_tool_label("team/search", servers) == ("team", "search")
    # A tool name may hold it too; the native spelling is read as well.
    assert split_tool_label("units/a/b", servers) == ("units", "a/b")
    assert split_tool_label("units__convert_units", servers) == ("units", "convert_units")
    # And the discovery service design's `server:tool`, as its command line prints it.
    assert split_tool_label("units:convert_units", servers) == ("units", "convert_units")
    # Nothing configured starts it, or it names no tool.
    for label in ("convert_units", "unitz/convert_units", "units/", "units"):
        assert split_tool_label(label, servers) is None, label


def test_preferred_names_are_kept_and_two_that_want_one_name_each_get_a_hash() -> None:
    pairs = [("run-a.aws-mcp-group-aws-cloudtrail", "list_events"), ("run-a.abuseipdb", "abuseipdb"), ("units", "x")]
    preferred = {pairs[0]: "aws-cloudtrail__list_events", pairs[1]: "abuseipdb"}
    assert native_names(pairs, preferred=preferred) == {
        pairs[0]: "aws-cloudtrail__list_events",
        pairs[1]: "abuseipdb",
        pairs[2]: "units__x",
    }
    twins = [("run-a.one", "t"), ("run-a.two", "t")]
    names = native_names(twins, preferred=dict.fromkeys(twins, "shared__t"))
    assert len(set(names.values())) == 2
    assert all(name.startswith("shared__t_") for name in names.values())
