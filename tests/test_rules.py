"""Tool rules: pattern syntax, first-match-wins, tag accumulation, whitelist mode."""

from __future__ import annotations

import pytest

from toolscout.config import ToolRule
from toolscout.config.rules import PatternSet, RuleSet, Verdict, compile_pattern


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("*github*", "create_github_issue", True),
        ("github_*", "github_create", True),
        ("github_*", "create_github", False),
        ("*_issue", "create_issue", True),
        ("*_issue", "create_issues", False),
        ("get_?ser", "get_user", True),
        ("[gs]et_*", "set_value", True),
        ("[!gs]et_*", "set_value", False),
        ("{read,write}_file", "write_file", True),
        ("{read,write}_file", "move_file", False),
        ("*DELETE*", "delete_repo", True),  # globs ignore case, as anygpt's glob-matcher does
        ("/^fs_(read|write)$/", "fs_read", True),
        ("/^fs_(read|write)$/", "fs_read_all", False),
        ("/github.*issue/i", "GitHub_Issue", True),
        ("/Issue/", "create_issue", True),  # a regex without flags ignores case (glob-matcher's default)
        ("/Issue/g", "create_issue", False),  # explicit flags replace that default
        (r"/\b(create|update)\b/", "create", True),
        ("/^(?<verb>get|list)_/", "list_repos", True),  # JavaScript named groups are accepted
        ("/a.b/", "a+b", True),
        ("a.b", "axb", False),  # a dot in a glob is literal
    ],
)
def test_single_patterns(pattern: str, name: str, expected: bool) -> None:
    assert compile_pattern(pattern)(name) is expected


def test_negation_vetoes_regardless_of_order() -> None:
    patterns = PatternSet.compile(["*github*", "/issue/", "!*delete*"])
    assert patterns.matches("github_create_issue")
    assert patterns.matches("list_issues")
    assert not patterns.matches("github_delete_repo")
    assert not patterns.matches("list_repos")
    assert PatternSet.compile(["!*delete*", "*github*"]).matches("github_list") is True


def test_rule_of_only_negations_matches_everything_else() -> None:
    patterns = PatternSet.compile(["!*delete*", "!/^drop_/"])
    assert patterns.matches("read_file")
    assert not patterns.matches("delete_file")
    assert not patterns.matches("drop_table")


@pytest.mark.parametrize("bad", ["/(/", "/x/q", "", "!"])
def test_bad_patterns_are_rejected_with_a_reason(bad: str) -> None:
    with pytest.raises(ValueError, match=r"regular expression|flag|empty"):
        compile_pattern(bad)


def test_default_is_enabled_without_rules() -> None:
    verdict = RuleSet().verdict("github", "delete_repo")
    assert verdict.enabled is True and verdict.tags == ()


def test_first_matching_rule_decides_and_tags_accumulate() -> None:
    rules = RuleSet(
        [
            ToolRule(pattern=["*delete*"], enabled=False, tags=["dangerous"]),
            ToolRule(pattern=["*"], enabled=True, tags=["all"]),
            ToolRule(pattern=["*repo*"], tags=["repos", "all"]),
        ]
    )
    assert rules.whitelist
    delete = rules.verdict("github", "delete_repo")
    assert delete.enabled is False
    assert delete.tags == ("dangerous", "all", "repos")
    listing = rules.verdict("github", "list_repos")
    assert listing.enabled is True and listing.tags == ("all", "repos")


def test_whitelist_mode_disables_what_no_rule_enables() -> None:
    rules = RuleSet([ToolRule(pattern=["*issue*"], server="github", enabled=True, tags=["issues"])])
    assert rules.verdict("github", "create_issue").enabled is True
    assert rules.verdict("github", "list_repos").enabled is False
    # The rule is limited to github, so the same name elsewhere is not enabled.
    assert rules.verdict("jira", "create_issue") == Verdict(enabled=False, tags=())


def test_tag_only_rules_do_not_decide() -> None:
    rules = RuleSet([ToolRule(pattern=["get_*"], tags=["read"]), ToolRule(pattern=["*"], enabled=False)])
    verdict = rules.verdict("s", "get_x")
    assert verdict.enabled is False and verdict.tags == ("read",)


def test_server_patterns_are_globs() -> None:
    rules = RuleSet([ToolRule(pattern=["*"], server="aws-*", enabled=False)])
    assert rules.verdict("aws-iam", "list_users").enabled is False
    assert rules.verdict("github", "list_users").enabled is True
