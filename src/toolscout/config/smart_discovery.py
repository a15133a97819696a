"""The `smart_discovery:` block (and its `visibility:` and `embedding_manager:` neighbours): another
spelling of toolscout's own `mode`, `llm`, `smart` and `search` keys, translated before validation.

Gateways of the MagicTunnel family configure smart discovery in one snake_case block. A file written
for them works here: every key of the block is either mapped onto the toolscout key that does the
same thing, or refused with the reason and what to write instead. None is ignored. A setting given
both ways (`smart_discovery.default_confidence_threshold` and `smart.confidenceThreshold`) is an
error naming both, so that no reader has to guess which one wins.

`translate` runs on the parsed file after `${VAR}` interpolation and before the models see it; its
problems are reported with the file's other configuration errors. The table of keys is
`MAPPED` (key → toolscout key), `REFUSED` (key → why, and what instead) and the few keys whose
value decides (`enabled`, `provider`, the booleans that only one value of makes sense for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic.alias_generators import to_camel, to_snake

SECTIONS = ("smart_discovery", "smartDiscovery")
"""The block's spellings at the top level of a file."""

Path = tuple[str, ...]

PROVIDER_URLS = {
    "openai": "https://api.openai.com/v1",
    "ollama": "http://localhost:11434/v1",
    "anthropic": "https://api.anthropic.com/v1",
}
"""Each provider's OpenAI-compatible chat-completions endpoint (`llm.baseUrl`)."""

MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})

MAPPED: dict[Path, Path] = {
    ("tool_selection_mode",): ("smart", "toolSelectionMode"),
    ("default_confidence_threshold",): ("smart", "confidenceThreshold"),
    ("use_fuzzy_matching",): ("search", "fuzzyNames"),
    ("max_tools_to_consider",): ("smart", "maxLlmCandidates"),
    ("llm_tool_selection", "model"): ("llm", "model"),
    ("llm_tool_selection", "base_url"): ("llm", "baseUrl"),
    ("llm_tool_selection", "api_key_env"): ("llm", "apiKeyEnv"),
    ("llm_tool_selection", "timeout"): ("llm", "timeout"),
    ("llm_tool_selection", "max_retries"): ("llm", "maxRetries"),
    ("llm_mapper", "enabled"): ("smart", "llmMapping"),
    ("llm_mapper", "model"): ("llm", "model"),
    ("llm_mapper", "base_url"): ("llm", "baseUrl"),
    ("llm_mapper", "api_key_env"): ("llm", "apiKeyEnv"),
    ("llm_mapper", "timeout"): ("llm", "timeout"),
    ("llm_mapper", "max_retries"): ("llm", "maxRetries"),
    ("cache", "enabled"): ("smart", "cache", "enabled"),
    ("cache", "max_tool_matches"): ("smart", "cache", "maxToolMatches"),
    ("cache", "tool_match_ttl"): ("smart", "cache", "toolMatchTtl"),
    ("cache", "max_llm_responses"): ("smart", "cache", "maxLlmResponses"),
    ("cache", "llm_response_ttl"): ("smart", "cache", "llmResponseTtl"),
    ("fallback", "enabled"): ("smart", "fallback", "enabled"),
    ("fallback", "max_suggestions"): ("smart", "fallback", "maxSuggestions"),
    ("fallback", "enable_learning"): ("smart", "enableLearning"),
    ("fallback", "enable_keyword_fallback"): ("smart", "fallback", "keyword"),
    ("fallback", "enable_category_fallback"): ("smart", "fallback", "category"),
}
"""Keys copied as they are onto the toolscout key that does the same."""

_NO_EARLY_STOP = (
    "toolscout ranks every candidate in one pass and stops at nothing early, so there is no "
    "'high quality' cut-off; remove it (smart.confidenceThreshold decides what runs)"
)
_ONE_REQUEST = "toolscout sends the best max_tools_to_consider candidates in one request; size that instead"
_CATALOG = "the catalog is kept live and persisted (catalogCache), there is no registry cache to size; remove it"
_EMBEDDINGS = "toolscout's embeddings are packaged and built in memory at start; remove it"

REFUSED: dict[Path, str] = {
    ("max_high_quality_matches",): _NO_EARLY_STOP,
    ("high_quality_threshold",): _NO_EARLY_STOP,
    ("llm_tool_selection", "batch_size"): _ONE_REQUEST,
    ("llm_tool_selection", "max_context_tokens"): _ONE_REQUEST,
    ("cache", "max_registry_entries"): _CATALOG,
    ("cache", "registry_ttl"): _CATALOG,
    ("semantic_search", "similarity_threshold"): (
        "cosine similarities are fused with BM25 into one calibrated relevance; "
        "use search.minRelevance or smart.confidenceThreshold instead"
    ),
    ("semantic_search", "max_results"): "smart.maxLlmCandidates (max_tools_to_consider) bounds the candidates",
    ("semantic_search", "storage"): _EMBEDDINGS,
    ("semantic_search", "model"): _EMBEDDINGS,
    ("semantic_search", "performance"): _EMBEDDINGS,
}
"""Keys with no toolscout meaning: why, and what to write instead."""

DECIDED_BY_VALUE: frozenset[Path] = frozenset(
    {
        ("enabled",),
        ("llm_tool_selection", "enabled"),
        ("llm_tool_selection", "provider"),
        ("llm_mapper", "provider"),
        ("fallback", "enable_partial_match_fallback"),
        ("semantic_search", "enabled"),
        ("semantic_search", "model_name"),
    }
)
"""Keys whose value says what they map to (or whether they can be honoured at all)."""

KNOWN_BLOCKS = ("llm_tool_selection", "llm_mapper", "cache", "fallback", "semantic_search")


def dotted(path: Path) -> str:
    return ".".join(path)


@dataclass
class _Translation:
    data: dict[str, Any]
    section: str
    problems: list[str] = field(default_factory=list[str])
    written: dict[Path, tuple[Any, str]] = field(default_factory=dict[Path, tuple[Any, str]])
    """toolscout key → (value, the block's key it came from)."""

    def where(self, path: Path) -> str:
        return f"{self.section}.{dotted(path)}"

    def refuse(self, path: Path, reason: str) -> None:
        self.problems.append(f"{self.where(path)}: {reason}.")

    def write(self, target: Path, value: Any, source: Path) -> None:
        """Set `target` to `value` unless the file sets it itself, or another key of the block differently."""
        origin = self.where(source)
        own = _existing(self.data, target)
        if own is not None:
            self.problems.append(
                f"{origin} and {own} both set one setting: keep one of them "
                f"(toolscout's own spelling is {dotted(target)})."
            )
            return
        earlier = self.written.get(target)
        if earlier is not None and earlier[0] != value:
            self.problems.append(
                f"{earlier[1]} ({earlier[0]!r}) and {origin} ({value!r}) both set {dotted(target)}, "
                "and toolscout has one LLM for choosing and for mapping: give both the same value."
            )
            return
        self.written[target] = (value, origin)

    def apply(self) -> dict[str, Any]:
        out = {k: v for k, v in self.data.items() if k != self.section}
        for target, (value, _) in self.written.items():
            node = out
            for key in target[:-1]:
                existing = _get(node, key)
                child: dict[str, Any] = dict(cast(dict[str, Any], existing)) if isinstance(existing, dict) else {}
                _drop(node, key)
                node[key] = child
                node = child
            node[target[-1]] = value
        return out


def _spellings(key: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((key, to_snake(key), to_camel(key))))


def _get(node: Mapping[str, Any], key: str) -> Any:
    for spelling in _spellings(key):
        if spelling in node:
            return node[spelling]
    return None


def _drop(node: dict[str, Any], key: str) -> None:
    for spelling in _spellings(key):
        node.pop(spelling, None)


def _existing(data: Mapping[str, Any], target: Path) -> str | None:
    """The file's own spelling of `target` (dotted) when the file sets it, else None."""
    node: Any = data
    spelled: list[str] = []
    for key in target:
        if not isinstance(node, dict):
            return None
        mapping = cast(dict[str, Any], node)
        found = next((s for s in _spellings(key) if s in mapping), None)
        if found is None:
            return None
        spelled.append(found)
        node = mapping[found]
    return ".".join(spelled)


def translate(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return `data` with its `smart_discovery` block (and `visibility`, `embedding_manager`) written as
    toolscout's own keys, and the problems (each a sentence naming the key); `data` itself is unchanged."""
    section = next((s for s in SECTIONS if s in data), None)
    refused_blocks: list[str] = []
    if "embedding_manager" in data or "embeddingManager" in data:
        refused_blocks.append(
            "embedding_manager: toolscout embeds the catalog in memory whenever it changes, with nothing "
            "to schedule or save; remove the block."
        )
    if section is None:
        if "visibility" in data:
            translation = _Translation(data, "visibility")
            _visibility(translation, data["visibility"])
            return translation.apply(), _sentences(refused_blocks + translation.problems)
        return data, _sentences(refused_blocks)
    translation = _Translation(data, section)
    block = data[section]
    if block is None:
        block = {}
    if not isinstance(block, dict):
        return data, [f"{section}: must be a mapping of its keys (enabled, tool_selection_mode, …)"]
    _walk(translation, cast(dict[str, Any], block))
    if "visibility" in data:
        visibility = _Translation(translation.apply(), "visibility")
        _visibility(visibility, data["visibility"])
        return visibility.apply(), _sentences(refused_blocks + translation.problems + visibility.problems)
    return translation.apply(), _sentences(refused_blocks + translation.problems)


def _sentences(problems: list[str]) -> list[str]:
    """The problems without their final period (the report adds its own)."""
    return [p.removesuffix(".") for p in problems]


def _walk(t: _Translation, block: dict[str, Any]) -> None:
    for key, value in block.items():
        if key in KNOWN_BLOCKS:
            if value is None:
                continue
            if not isinstance(value, dict):
                t.refuse((key,), "must be a mapping")
                continue
            for inner, inner_value in cast(dict[str, Any], value).items():
                _one(t, (key, inner), inner_value)
        else:
            _one(t, (key,), value)
    _llm_blocks(t, block)


def _one(t: _Translation, path: Path, value: Any) -> None:
    if path in MAPPED:
        t.write(MAPPED[path], value, path)
    elif path in REFUSED:
        t.refuse(path, REFUSED[path])
    elif path in DECIDED_BY_VALUE:
        DECIDERS[path](t, path, value)
    else:
        known = sorted({dotted(p) for p in (*MAPPED, *REFUSED, *DECIDED_BY_VALUE)})
        t.refuse(path, f"unknown key; the block's keys are {', '.join(known)}")


def _enabled(t: _Translation, path: Path, value: Any) -> None:
    """`enabled: true` is `mode: smart` (or `smartTool: true` beside discovery's meta-tools)."""
    if not isinstance(value, bool):
        t.refuse(path, "must be true or false")
        return
    mode = _get(t.data, "mode")
    smart_tool = _get(t.data, "smartTool")
    if value:
        if mode is None:
            t.write(("mode",), "smart", path)
        elif mode not in ("smart", "discovery") or (mode == "discovery" and smart_tool is not True):
            t.problems.append(
                f"{t.where(path)} and mode: {mode} disagree: write mode: smart (one smart_tool_discovery tool), "
                "or mode: discovery with smartTool: true (beside the meta-tools), and drop one of them."
            )
    elif mode == "smart" or smart_tool is True:
        t.problems.append(
            f"{t.where(path)} is false but {'mode: smart' if mode == 'smart' else 'smartTool: true'} turns smart "
            "discovery on: keep one of them."
        )


def _partial(t: _Translation, path: Path, value: Any) -> None:
    if value is not True:
        t.refuse(
            path,
            "partial matches (parts of words and names) are part of the search's ranking, not a fallback of "
            "their own; to offer no closest tools write enable_keyword_fallback: false",
        )


def _selection_enabled(t: _Translation, path: Path, value: Any) -> None:
    if value is True:
        return
    if value is not False:
        t.refuse(path, "must be true or false")
        return
    block = cast(dict[str, Any], t.data.get(t.section) or {})
    mode = block.get("tool_selection_mode", _get(cast(dict[str, Any], t.data.get("smart") or {}), "toolSelectionMode"))
    if mode in (None, "hybrid", "llm_based"):
        t.refuse(
            path,
            "toolscout's one LLM both chooses (in hybrid and llm_based) and maps arguments: to keep it from "
            "choosing, write tool_selection_mode: rule_based or semantic_based instead",
        )


def _provider(t: _Translation, path: Path, value: Any) -> None:
    url = PROVIDER_URLS.get(str(value).lower()) if isinstance(value, str) else None
    if url is None:
        t.refuse(
            path,
            f"{value!r} has no known OpenAI-compatible endpoint; give base_url (e.g. http://localhost:8000/v1) "
            f"or one of {', '.join(PROVIDER_URLS)}",
        )
        return
    block = cast(dict[str, Any], cast(dict[str, Any], t.data.get(t.section) or {}).get(path[0]) or {})
    if "base_url" not in block:
        t.write(("llm", "baseUrl"), url, path)


def _semantic_enabled(t: _Translation, path: Path, value: Any) -> None:
    if value is False:
        t.write(("search", "backend"), "bm25", path)
    elif value is not True:
        t.refuse(path, "must be true or false")


def _model_name(t: _Translation, path: Path, value: Any) -> None:
    name = str(value).lower()
    if name in MINILM_NAMES:
        t.write(("search", "model"), "minilm", path)
        return
    t.refuse(
        path,
        f"{value!r} is not a model toolscout embeds with: write search.model: static (packaged) or minilm "
        "(all-MiniLM-L6-v2, the toolscout[minilm] extra); remote embedding services are not supported",
    )


DECIDERS: dict[Path, Callable[[_Translation, Path, Any], None]] = {
    ("enabled",): _enabled,
    ("llm_tool_selection", "enabled"): _selection_enabled,
    ("llm_tool_selection", "provider"): _provider,
    ("llm_mapper", "provider"): _provider,
    ("fallback", "enable_partial_match_fallback"): _partial,
    ("semantic_search", "enabled"): _semantic_enabled,
    ("semantic_search", "model_name"): _model_name,
}


def _llm_blocks(t: _Translation, block: Mapping[str, Any]) -> None:
    """An LLM block turned off writes no `llm`; one turned on needs a model."""
    for name in ("llm_tool_selection", "llm_mapper"):
        inner = block.get(name)
        if isinstance(inner, dict) and cast(dict[str, Any], inner).get("enabled") is False:
            # Its endpoint is not wanted: drop what it wrote (the other block may still write it).
            for target, (_, origin) in list(t.written.items()):
                if origin.startswith(f"{t.section}.{name}.") and target[0] == "llm":
                    del t.written[target]
    if any(target[0] == "llm" for target in t.written) and ("llm", "model") not in t.written:
        t.problems.append(f"{t.section}: an LLM block without model: give model (e.g. gpt-4o-mini).")


def _visibility(t: _Translation, block: Any) -> None:
    """`visibility:`: hiding the individual tools behind the one smart tool is `mode: smart`."""
    if not isinstance(block, dict):
        t.problems.append("visibility: must be a mapping of its keys.")
        return
    for key, value in cast(dict[str, Any], block).items():
        path = (key,)
        if key in ("hide_individual_tools", "expose_smart_discovery_only"):
            mode = _get(t.data, "mode")
            if value is True and mode not in ("smart", None):
                t.refuse(
                    path, f"only smart mode shows smart_tool_discovery alone, but mode is {mode}; write mode: smart"
                )
            elif value is True and mode is None:
                t.write(("mode",), "smart", path)
            elif value is False and mode == "smart":
                t.refuse(
                    path,
                    "mode: smart shows only smart_tool_discovery; for every tool beside it write "
                    "mode: discovery with smartTool: true",
                )
        elif key == "allow_override":
            if value is not True:
                t.refuse(path, "a toolRules entry always decides a tool's visibility; remove the key")
        elif key == "default_hidden":
            if value is True:
                t.refuse(path, "write toolRules: [{pattern: '*', hidden: true}] (listed nowhere, found by search)")
        else:
            t.refuse(
                path,
                "unknown key; the block's keys are allow_override, default_hidden, "
                "expose_smart_discovery_only, hide_individual_tools",
            )
