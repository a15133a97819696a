"""`toolRulesEvaluation`: the three readings of which matching rule decides, on the discovery design's
own examples, then in a gateway in front of the real demo notes server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client

from tests.helpers.paths import PYTHON
from toolscout.config.loader import parse_config
from toolscout.config.rules import RULE_EVALUATIONS, RuleEvaluation, RuleSet
from toolscout.config.sources import load_with_sources
from toolscout.gateway.core import Gateway
from toolscout.serve.server import build_server

EXAMPLE_2 = """
discovery:
  enabled: true
  toolRules:
    - server: 'github'
      pattern: ['*issue*']
      enabled: true
      tags: ['github', 'issues']
    - server: 'filesystem'
      pattern: ['*read*', '*list*']
      enabled: true
      tags: ['filesystem', 'safe']
    - pattern: ['*delete*', '*remove*', '*rm*']
      enabled: false
      tags: ['dangerous']
"""
EXAMPLE_3 = """
discovery:
  enabled: true
  toolRules:
    - pattern: ['*']
      enabled: true
    - pattern: ['*delete*', '*destroy*']
      enabled: false
"""
EXAMPLE_4 = r"""
discovery:
  enabled: true
  toolRules:
    - server: 'github'
      pattern: ['/^(create|update)_/']
      enabled: true
      tags: ['github', 'write']
    - server: 'filesystem'
      pattern: ["/\\b(read|list|get)\\b/i"]
      enabled: true
      tags: ['filesystem', 'read']
    - pattern: ['/(delete|remove|destroy)/i']
      enabled: false
      tags: ['dangerous']
"""


def rules_of(text: str, evaluation: RuleEvaluation) -> RuleSet:
    config = parse_config(text + f"toolRulesEvaluation: {evaluation}\n", "yaml", "example")
    assert config.tool_rules_evaluation == evaluation
    return RuleSet(config.tool_rules, config.tool_rules_evaluation)


@pytest.mark.parametrize(
    ("example", "server", "tool", "expected"),
    [
        # "Only safe, specific tools are enabled. Dangerous operations are blocked."
        (EXAMPLE_2, "github", "create_issue", {"first-match": True, "first-change": True, "deny-wins": True}),
        (EXAMPLE_2, "github", "delete_issue", {"first-match": True, "first-change": True, "deny-wins": False}),
        (EXAMPLE_2, "github", "list_repos", {"first-match": False, "first-change": False, "deny-wins": False}),
        (EXAMPLE_2, "filesystem", "read_file", {"first-match": True, "first-change": True, "deny-wins": True}),
        (EXAMPLE_2, "filesystem", "remove_dir", {"first-match": False, "first-change": False, "deny-wins": False}),
        # "Enable all tools by default; disable dangerous operations."
        (EXAMPLE_3, "any", "list_items", {"first-match": True, "first-change": True, "deny-wins": True}),
        (EXAMPLE_3, "any", "delete_item", {"first-match": True, "first-change": True, "deny-wins": False}),
        (EXAMPLE_3, "any", "destroy_vm", {"first-match": True, "first-change": True, "deny-wins": False}),
        # "Fine-grained control using regex patterns."
        (EXAMPLE_4, "github", "create_issue", {"first-match": True, "first-change": True, "deny-wins": True}),
        (EXAMPLE_4, "github", "update_and_delete", {"first-match": True, "first-change": True, "deny-wins": False}),
        (EXAMPLE_4, "filesystem", "Get-File", {"first-match": True, "first-change": True, "deny-wins": True}),
        (EXAMPLE_4, "filesystem", "write_file", {"first-match": False, "first-change": False, "deny-wins": False}),
    ],
)
def test_the_designs_examples_under_each_evaluation(
    example: str, server: str, tool: str, expected: dict[str, bool]
) -> None:
    got = {evaluation: rules_of(example, evaluation).verdict(server, tool).enabled for evaluation in RULE_EVALUATIONS}
    assert got == expected


def test_first_change_is_the_pseudocode_line_by_line() -> None:
    # A disabling rule first, in a whitelist: the pseudocode's `enabled === !hasWhitelist` is still true
    # after it (false is the whitelist's default), so the later enabling rule enables the tool.
    text = """
toolRules:
  - pattern: ['*delete*']
    enabled: false
  - pattern: ['*']
    enabled: true
"""
    verdicts = {e: rules_of(text, e).verdict("s", "delete_repo").enabled for e in RULE_EVALUATIONS}
    assert verdicts == {"first-match": False, "first-change": True, "deny-wins": False}
    # Without a whitelist, the pseudocode's first change is the first disabling rule.
    text = """
toolRules:
  - pattern: ['*repo*']
    enabled: false
  - pattern: ['*delete*']
    enabled: false
"""
    for evaluation in RULE_EVALUATIONS:
        rules = rules_of(text, evaluation)
        assert rules.verdict("s", "delete_repo").enabled is False
        assert rules.deciding("s", "delete_repo") == 0


def test_first_change_reads_a_rules_patterns_in_order_as_the_designs_match_pattern() -> None:
    # The service's mixed example: its negation is meant to veto (the tools it tags `safe`), and does in
    # the order-free readings; the design's matchPattern returns at the first pattern that matches, so
    # under `first-change` `*github*` has matched before `!*delete*` is read.
    text = """
toolRules:
  - pattern: ['*github*', '/issue/', '!*delete*']
    enabled: true
    tags: ['github', 'safe']
"""
    verdicts = {e: rules_of(text, e).verdict("s", "github_delete_issue") for e in RULE_EVALUATIONS}
    assert {e: v.enabled for e, v in verdicts.items()} == {
        "first-match": False,
        "first-change": True,
        "deny-wins": False,
    }
    assert verdicts["first-change"].tags == ("github", "safe") and verdicts["first-match"].tags == ()
    # Written negation first, it excludes in every reading.
    text = """
toolRules:
  - pattern: ['!*delete*', '*github*']
    enabled: true
"""
    for evaluation in RULE_EVALUATIONS:
        rules = rules_of(text, evaluation)
        assert rules.verdict("s", "github_delete_issue").enabled is False, evaluation
        assert rules.verdict("s", "github_create_issue").enabled is True, evaluation
    # A rule of negations alone matches every other name order-free, and nothing in order.
    text = """
toolRules:
  - pattern: ['!*delete*']
    tags: ['kept']
"""
    assert rules_of(text, "first-match").verdict("s", "list_issues").tags == ("kept",)
    assert rules_of(text, "first-change").verdict("s", "list_issues").tags == ()


def test_the_deciding_rule_follows_the_evaluation() -> None:
    assert rules_of(EXAMPLE_3, "first-match").deciding("any", "delete_item") == 0
    assert rules_of(EXAMPLE_3, "deny-wins").deciding("any", "delete_item") == 1
    assert rules_of(EXAMPLE_3, "deny-wins").deciding("any", "list_items") == 0
    # Tags accumulate from every matching rule whichever rule decides.
    assert rules_of(EXAMPLE_2, "deny-wins").verdict("github", "delete_issue").tags == (
        "github",
        "issues",
        "dangerous",
    )


def test_an_unknown_evaluation_is_refused_with_the_choices() -> None:
    from toolscout.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as refused:
        parse_config(json.dumps({"toolRulesEvaluation": "last-match"}), "json", "toolscout.json")
    assert "toolRulesEvaluation" in refused.value.message
    assert "'first-match', 'first-change' or 'deny-wins'" in refused.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(("evaluation", "delete_enabled"), [("first-match", True), ("deny-wins", False)])
async def test_a_gateway_over_the_demo_notes_server_applies_the_evaluation(
    tmp_path: Path, evaluation: str, delete_enabled: bool
) -> None:
    path = tmp_path / "toolscout.json"
    config = {
        "mcpServers": {"notes": {"command": PYTHON, "args": ["-m", "toolscout.demo.notes"]}},
        "catalogCache": False,
        "audit": {"enabled": False},
        "discovery": {
            "toolRules": [{"pattern": ["*"], "enabled": True}, {"pattern": ["*delete*"], "enabled": False}],
            "toolRulesEvaluation": evaluation,
        },
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    gateway = Gateway.from_config(load_with_sources(path, env={}))
    async with gateway, Client(build_server(gateway)) as client:
        with anyio.fail_after(60):
            listed = await client.call_tool("list_mcp_servers", {})
            called = await client.call_tool(
                "execute_tool", {"server": "notes", "tool": "delete_note", "arguments": {"id": "nope"}}
            )
    notes = cast(dict[str, Any], listed.structured_content)["servers"][0]
    assert notes["status"] == "connected"
    assert notes["enabledCount"] == notes["toolCount"] - (0 if delete_enabled else 1)
    error: dict[str, Any] = cast(dict[str, Any], called.structured_content or {}).get("error") or {}
    # Enabled, it reaches the server (which knows no such note); disabled, the gateway refuses it first.
    assert (error.get("code") == "TOOL_DISABLED") is not delete_enabled
