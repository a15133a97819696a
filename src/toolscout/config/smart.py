"""The `llm` and `smart` sections of the configuration: `smart` mode's LLM and how it decides (spec 004).

```yaml
mode: smart                 # or discovery with smartTool: true
llm:                        # optional: any OpenAI-compatible chat-completions endpoint
  baseUrl: http://localhost:11434/v1
  model: llama3.1
  apiKeyEnv: OPENAI_API_KEY # the key is read from this variable, never written in the file
smart:
  toolSelectionMode: hybrid # rule_based | semantic_based | llm_based | hybrid
  confidenceThreshold: 0.5
  sampling: false           # opt in: ask the calling client's model (MCP sampling) when no llm is set
  enableLearning: false
```

Without `llm` (and without `sampling`), smart mode works offline: toolscout's own search and the
deterministic parameter extractor. Every LLM failure falls back to them.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

SelectionMode = Literal["rule_based", "semantic_based", "llm_based", "hybrid"]
"""How `smart_tool_discovery` picks a tool: lexical and name matching, embeddings, the LLM, or all three."""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class LLMConfig(_Model):
    """An OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)."""

    base_url: str
    """Up to the `/chat/completions` part, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`."""
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    """The environment variable holding the API key (unset: no key, as local servers need none)."""
    timeout: float = Field(default=20.0, gt=0)
    """Seconds one attempt may take."""
    max_retries: int = Field(default=1, ge=0, le=10)
    """Attempts after the first, on timeouts, refused connections and busy statuses (408, 429, 5xx)."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
        return url

    def api_key(self) -> str | None:
        """The key from `apiKeyEnv` (None when unset or empty)."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None


class SmartWeights(_Model):
    """Hybrid selection: each method's share of a tool's confidence (spec 004: 30/15/55).

    `semantic + rule` is the share of the search's own fusion of the two (calibrated as the chance
    that the tool is one the request needs; within it, embeddings and BM25 count as the search's
    fusion weights say, fitted on training data), `llm` the LLM's confidence's. A cosine and a BM25
    share are not on one scale, so they are not added here as they stand (smart/selection.py).
    Without an LLM answer, the search's relevance is the whole confidence."""

    semantic: float = Field(default=0.30, ge=0)
    rule: float = Field(default=0.15, ge=0)
    llm: float = Field(default=0.55, ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> SmartWeights:
        if self.semantic + self.rule <= 0:
            raise ValueError("semantic and rule cannot both be 0: the search decides when there is no LLM")
        return self


class SmartCacheConfig(_Model):
    """The tool-match and LLM-response caches (spec 004 "Performance Optimization")."""

    enabled: bool = True
    max_tool_matches: int = Field(default=1000, ge=1)
    tool_match_ttl: float = Field(default=3600.0, gt=0)
    """Seconds; a catalog change makes every cached match stale at once anyway."""
    max_llm_responses: int = Field(default=500, ge=1)
    llm_response_ttl: float = Field(default=1800.0, gt=0)


class SmartConfig(_Model):
    """How `smart_tool_discovery` chooses a tool and maps a request's words to its arguments."""

    tool_selection_mode: SelectionMode = "hybrid"
    confidence_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Below this the best tool is not run: `TOOL_NOT_FOUND` with the closest ones (a call may ask otherwise)."""
    max_llm_candidates: int = Field(default=30, ge=1, le=100)
    """How many of the best-ranked tools the LLM sees, with their signatures (spec 004: at most 30)."""
    weights: SmartWeights = Field(default_factory=SmartWeights)
    llm_mapping: bool = True
    """Map arguments with the LLM when one is available (else, and on its failure, the extractor)."""
    sampling: bool = False
    """Opt in: without `llm`, ask the calling client's own model through MCP sampling when it declares
    it. The 2026-07-28 protocol deprecates sampling (SEP-2577), so it is never the only way."""
    sampling_timeout: float = Field(default=60.0, gt=0)
    """Seconds the client's model (and its user, who may be asked to approve) has to answer a sampling request."""
    cache: SmartCacheConfig = Field(default_factory=SmartCacheConfig)
    enable_learning: bool = False
    """Remember which tool a request ran successfully and prefer it for similar requests
    (kept beside the persistent catalog; `toolscout smart forget` clears it)."""
    learning_path: str | None = None
    """The file of what was learnt; unset: `smart-memory.json` beside the persistent catalog."""
    confirm_destructive: bool = True
    """Never run a tool annotated `destructiveHint: true` (or tagged `dangerous`) from plain words alone:
    ask the user through elicitation, else answer `confirmation_required` with a confirmation id."""
    confirmation_ttl: float = Field(default=300.0, gt=0, le=86_400)
    """Seconds a `confirmation_required` answer's id can be used (once, for that call, by that caller)."""

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_flag(cls, value: object) -> object:
        return {"enabled": value} if isinstance(value, bool) else value
