"""The `smart_discovery:` block: every key mapped onto toolscout's own, or refused with the reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolscout.config.loader import load_config, parse_config
from toolscout.errors import ConfigurationError

SERVERS = {"mcpServers": {"demo": {"command": "demo-server"}}}

COMPLETE = """
mcpServers:
  demo: {command: demo-server}
smart_discovery:
  enabled: true
  tool_selection_mode: "hybrid"
  default_confidence_threshold: 0.7
  max_tools_to_consider: 10
  use_fuzzy_matching: true
  llm_tool_selection:
    enabled: true
    provider: "openai"
    model: "gpt-4o-mini"
    api_key_env: "OPENAI_API_KEY"
    timeout: 30
    max_retries: 3
  llm_mapper:
    enabled: true
    provider: "openai"
    model: "gpt-4o-mini"
    api_key_env: "OPENAI_API_KEY"
    timeout: 30
    max_retries: 3
  cache:
    enabled: true
    max_tool_matches: 1000
    tool_match_ttl: 3600
    max_llm_responses: 500
    llm_response_ttl: 1800
  fallback:
    enabled: true
    max_suggestions: 4
    enable_learning: true
    enable_keyword_fallback: true
    enable_category_fallback: false
    enable_partial_match_fallback: true
  semantic_search:
    enabled: true
    model_name: "all-MiniLM-L6-v2"
visibility:
  hide_individual_tools: true
  expose_smart_discovery_only: true
  allow_override: true
  default_hidden: false
"""


def parsed(text: str) -> Any:
    return parse_config(text, "yaml", "test.yaml")


def refusal(block: dict[str, Any], **top: Any) -> str:
    with pytest.raises(ConfigurationError) as caught:
        parsed(yaml.safe_dump({**SERVERS, **top, "smart_discovery": block}))
    return caught.value.message


def test_the_complete_block_maps_onto_toolscout_keys() -> None:
    config = parsed(COMPLETE)
    assert config.mode == "smart"
    assert config.smart.tool_selection_mode == "hybrid"
    assert config.smart.confidence_threshold == 0.7
    assert config.smart.max_llm_candidates == 10
    assert config.llm is not None
    assert (config.llm.base_url, config.llm.model, config.llm.api_key_env) == (
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        "OPENAI_API_KEY",
    )
    assert (config.llm.timeout, config.llm.max_retries) == (30, 3)
    assert config.smart.llm_mapping is True
    assert config.smart.cache.max_tool_matches == 1000
    assert config.smart.cache.llm_response_ttl == 1800
    assert config.smart.enable_learning is True
    assert config.smart.fallback.max_suggestions == 4
    assert config.smart.fallback.category is False
    assert config.smart.fallback.keyword is True
    assert config.search.model == "minilm"


def test_the_block_is_the_same_as_toolscouts_spelling() -> None:
    spec = parsed(
        yaml.safe_dump(
            {**SERVERS, "smart_discovery": {"default_confidence_threshold": 0.3, "llm_mapper": {"enabled": False}}}
        )
    )
    own = parsed(yaml.safe_dump({**SERVERS, "smart": {"confidenceThreshold": 0.3, "llmMapping": False}}))
    assert spec == own


def test_use_fuzzy_matching_is_the_search_setting_for_names_with_typos() -> None:
    spec = parsed(yaml.safe_dump({**SERVERS, "smart_discovery": {"use_fuzzy_matching": False}}))
    assert spec.search.fuzzy_names is False
    assert spec == parsed(yaml.safe_dump({**SERVERS, "search": {"fuzzyNames": False}}))
    assert parsed(yaml.safe_dump({**SERVERS, "smart_discovery": {"use_fuzzy_matching": True}})).search.fuzzy_names


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ({"high_quality_threshold": 0.95}, "high_quality_threshold"),
        ({"max_high_quality_matches": 5}, "max_high_quality_matches"),
        ({"llm_tool_selection": {"model": "m", "batch_size": 15}}, "batch_size"),
        ({"llm_tool_selection": {"model": "m", "max_context_tokens": 4000}}, "max_context_tokens"),
        ({"cache": {"registry_ttl": 300}}, "registry_ttl"),
        ({"fallback": {"enable_partial_match_fallback": False}}, "enable_partial_match_fallback"),
        ({"semantic_search": {"model_name": "openai:text-embedding-3-small"}}, "model_name"),
        ({"semantic_search": {"storage": {"backup_count": 3}}}, "storage"),
        ({"llm_mapper": {"provider": "bedrock", "model": "m"}}, "provider"),
        ({"llm_tool_selection": {"enabled": False}}, "tool_selection_mode: rule_based"),
        ({"tool_selection_mod": "hybrid"}, "unknown key"),
    ],
)
def test_a_key_toolscout_cannot_honour_is_refused_with_what_to_do(block: dict[str, Any], named: str) -> None:
    message = refusal(block)
    assert named in message
    assert "smart_discovery." in message


def test_both_spellings_of_one_setting_are_an_error_naming_both() -> None:
    message = refusal({"default_confidence_threshold": 0.7}, smart={"confidenceThreshold": 0.4})
    assert "smart_discovery.default_confidence_threshold" in message
    assert "smart.confidenceThreshold" in message
    message = refusal({"cache": {"max_tool_matches": 10}}, smart={"cache": {"max_tool_matches": 20}})
    assert "smart_discovery.cache.max_tool_matches" in message and "smart.cache.max_tool_matches" in message


def test_the_two_llm_blocks_must_agree_on_the_one_llm() -> None:
    message = refusal({"llm_tool_selection": {"model": "a"}, "llm_mapper": {"model": "b"}})
    assert "llm_tool_selection.model" in message and "llm_mapper.model" in message


def test_enabled_disagreeing_with_the_mode_is_an_error() -> None:
    assert "mode: passthrough" in refusal({"enabled": True}, mode="passthrough")
    assert "mode: smart" in refusal({"enabled": False}, mode="smart")
    beside = parsed(
        yaml.safe_dump({**SERVERS, "mode": "discovery", "smartTool": True, "smart_discovery": {"enabled": True}})
    )
    assert beside.mode == "discovery" and beside.smart_tool


def test_a_disabled_llm_block_writes_no_llm() -> None:
    config = parsed(
        yaml.safe_dump(
            {
                **SERVERS,
                "smart_discovery": {
                    "tool_selection_mode": "rule_based",
                    "llm_tool_selection": {"enabled": False, "provider": "openai", "model": "x"},
                },
            }
        )
    )
    assert config.llm is None
    assert config.smart.tool_selection_mode == "rule_based"


def test_default_hidden_true_is_refused_with_the_rule_that_hides_every_tool() -> None:
    message = refusal({"enabled": True}, visibility={"default_hidden": True})
    assert "visibility.default_hidden: write toolRules: [{pattern: '*', hidden: true}]" in message
    assert "found by search" in message
    # Without a smart_discovery block the neighbour block is read, and refused, the same way.
    with pytest.raises(ConfigurationError, match=r"visibility\.default_hidden: write toolRules"):
        parsed(yaml.safe_dump({**SERVERS, "visibility": {"default_hidden": True}}))
    # false is what toolscout does anyway: accepted, and no rule is written for it.
    kept = parsed(
        yaml.safe_dump({**SERVERS, "smart_discovery": {"enabled": True}, "visibility": {"default_hidden": False}})
    )
    assert kept.mode == "smart" and kept.tool_rules == []


def test_the_embedding_manager_block_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="embedding_manager"):
        parsed(yaml.safe_dump({**SERVERS, "embedding_manager": {"batch_size": 10}}))


def test_a_refused_key_fails_the_command_line_with_its_reason(tmp_path: Path) -> None:
    import subprocess

    path = tmp_path / "toolscout.json"
    path.write_text(json.dumps({**SERVERS, "smart_discovery": {"high_quality_threshold": 0.95}}))
    done = subprocess.run(
        [sys.executable, "-m", "toolscout", "config", "validate", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "high_quality_threshold" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    loaded = tmp_path / "ok.json"
    loaded.write_text(json.dumps({**SERVERS, "smart_discovery": {"enabled": True}}))
    assert load_config(loaded).mode == "smart"
