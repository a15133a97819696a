"""The configuration as pydantic models, one per section, and the seam through which the gateway
gets its servers.

Files use the `mcpServers` shape of Claude Desktop and Cursor with camelCase keys; the models accept
those names and reject anything they do not know. The module reads in the order of a file: the
upstream servers (one model per transport), the search, the audit log and the persistent catalog,
the `registry` section, the `llm` and `smart` sections of smart mode, and `GatewayConfig`, the whole
file. The `http` and `auth` sections live in `toolscout.config.http`, the `toolRules` entries in
`toolscout.config.rules`.

Smart mode's sections read like this in a file:

```yaml
mode: smart                 # or discovery with smartTool: true
llm:                        # optional: openai (any chat-completions endpoint) | anthropic | ollama
  provider: openai
  baseUrl: http://localhost:11434/v1
  model: llama3.1
  apiKeyEnv: OPENAI_API_KEY # the key is read from this variable, never written in the file
  mapping:                  # optional: another LLM for argument mapping (`selection`: for choosing)
    provider: ollama
    model: qwen2.5:7b
smart:
  toolSelectionMode: hybrid # rule_based | semantic_based | llm_based | hybrid
  confidenceThreshold: 0.5
  sampling: false           # opt in: ask the calling client's model (MCP sampling) when no llm is set
  enableLearning: false
```

Without `llm` (and without `sampling`), smart mode works offline: toolscout's own search and the
deterministic parameter extractor. Every LLM failure falls back to them.

`ServerSource`, at the end, is the seam between a source of server configs and the gateway that
connects to them. Today there is one source, the file's `mcpServers` (`ConfiguredServers`, with the
servers of the files its `sources` name already added by config/sources.py): read when
the gateway starts, and again whenever `serve` reloads the file (serve/reload.py), whose servers it
then hands to `Gateway.set_servers` (owner "config"). Servers registered at run time reach the
gateway the same way, under their own owner ("registry").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, cast
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic.alias_generators import to_camel

from toolscout.config.code import CodeConfig
from toolscout.config.http import AuthConfig, HttpServeConfig
from toolscout.config.locations import absolute_path, user_log_dir
from toolscout.config.rules import RuleEvaluation, ToolRule, patterns_compile
from toolscout.config.telemetry import TelemetryConfig

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 30.0


ModeName = Literal["discovery", "compact", "passthrough", "dynamic", "smart", "code"]
"""What the agent sees: the five meta-tools, `inspect` and `exec`, every tool natively as `server__tool`,
the meta-tools plus the tools a client loads, one `smart_tool_discovery` tool (`SmartConfig`), or
`search_tools`, `get_tool_details` and `run_code`, which runs a program that calls the tools (`CodeConfig`)."""

DEFAULT_MAX_LOADED_TOOLS = 20

DEFAULT_MAX_DESCRIPTION_LEN = 60
"""Characters of a property's description kept in a TypeScript signature: about one short sentence."""

ToolNaming = Literal["auto", "prefixed", "bare-when-unique", "registered"]
"""Passthrough's tool names: `server__tool` in front of several servers and the tool's own in front of one
(`auto`; servers registered at run time count), always `server__tool` (`prefixed`), the tool's own wherever
no other server has that name (`bare-when-unique`), or as a run's registrations say (`registered`: a
callback tool by its own name, a registered server's tools as `{toolName}__{tool}`)."""

ListingFormat = Literal["text", "toon"]
"""How listings read for the model: toolscout's line format, or TOON or compact JSON."""

ExecuteResult = Literal["native", "envelope"]
"""What `execute_tool` answers: the upstream tool's own result as it came (`native`), or the result
wrapped as `{success, result}` / `{success: false, error}` (`envelope`), as other discovery gateways answer."""

CompactFormat = Literal["toon", "smallest"]
"""The text of compact mode's answers: TOON, as the MCPX design writes it, or TOON or compact JSON,
whichever is fewer tokens (TOON costs more than compact JSON for nested, irregular data)."""

ToolPinning = Literal["off", "warn", "quarantine"]
"""What a tool whose definition changed since it was pinned becomes: nothing is checked (`off`), logged
and audited but usable (`warn`), or also neither listed, found nor run until approved (`quarantine`)."""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class StaticTool(_Model):
    """A tool declared in the config, known before (or without) connecting to its server."""

    name: str = Field(min_length=1)
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class _ServerBase(_Model):
    description: str | None = None
    """Shown instead of what the server says about itself."""
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)
    """Seconds one tool call may take before it is cancelled upstream."""
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0)
    """Seconds to start the server and finish the MCP handshake."""
    disabled: bool = False
    protocol: Literal["auto", "legacy"] | None = None
    """How to pick the protocol era: probe `server/discover` and fall back (`auto`), or `initialize` only
    (`legacy`). Unset: `initialize` first on every transport, falling back to `auto` if refused."""
    reconnect: bool = True
    """After a failure or a lost connection, connect again with backoff (1 s doubling to 60 s, jittered)."""
    connect: Literal["eager", "lazy"] = "eager"
    """`lazy`: do not connect at start when its tools are known (cached or declared); connect on first use."""
    idle_timeout: float | None = Field(default=None, gt=0)
    """Close the connection after this many seconds without calls, reopen on demand (lazy: 300 unless set)."""
    tools: list[StaticTool] = Field(default_factory=list[StaticTool])
    """Tools to list while the server is not connected; the server's own list replaces them once it is."""


class StdioServerConfig(_ServerBase):
    """A server the gateway starts as a child process and talks to over stdin/stdout."""

    kind: Literal["stdio"] = Field(default="stdio", validation_alias=AliasChoices("transport", "type"))
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] = Field(default_factory=dict[str, str])
    cwd: str | None = None


def check_url(url: str) -> str:
    """Check, as a validator, that `url` is an http:// or https:// URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    return url


class OAuthSettings(_Model):
    """How the gateway signs in to a remote server protected by OAuth (`toolscout auth login SERVER`).

    A server that asks for OAuth is signed in to without any of these: the client registers itself
    dynamically where the server allows it. They are for a server that does not: the client its
    provider issued (`clientId`, `clientSecret`) and the loopback port its redirect URI names.
    """

    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = None
    scopes: list[str] = Field(default_factory=list[str])
    """The scopes to ask for; unset: what the server's challenge or metadata asks for."""
    callback_port: int | None = Field(default=None, ge=1, le=65535)
    """The port of the redirect URI (`http://127.0.0.1:PORT/callback`); unset: a free one, kept with the
    registration."""

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        # OAuth writes scopes as one space-separated string; a list is accepted as well.
        return value.split() if isinstance(value, str) else value


class HttpServerConfig(_ServerBase):
    """A server reached over streamable HTTP."""

    kind: Literal["http", "streamable-http", "streamableHttp", "streamable_http"] = Field(
        default="http", validation_alias=AliasChoices("transport", "type")
    )
    url: str
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    oauth: OAuthSettings | None = None
    """How to sign in when the server asks for OAuth (it is signed in to without this too)."""

    _url = field_validator("url")(check_url)


class SseServerConfig(_ServerBase):
    """A server reached over the legacy HTTP+SSE transport."""

    kind: Literal["sse"] = Field(default="sse", validation_alias=AliasChoices("transport", "type"))
    url: str
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    oauth: OAuthSettings | None = None
    """How to sign in when the server asks for OAuth (it is signed in to without this too)."""

    _url = field_validator("url")(check_url)


def server_kind(raw: Any) -> str | None:
    """Return which transport a raw server entry asks for: `command` means stdio, a URL means HTTP or SSE."""
    if isinstance(raw, StdioServerConfig):
        return "stdio"
    if isinstance(raw, SseServerConfig):
        return "sse"
    if isinstance(raw, HttpServerConfig):
        return "http"
    if not isinstance(raw, dict):
        return None
    entry: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    declared = entry.get("transport", entry.get("type"))
    if declared == "stdio" or (declared is None and "command" in entry):
        return "stdio"
    if declared == "sse":
        return "sse"
    if declared in ("http", "streamable-http", "streamableHttp", "streamable_http"):
        return "http"
    url = entry.get("url")
    if declared is None and isinstance(url, str):
        return "sse" if urlsplit(url).path.rstrip("/").endswith("/sse") else "http"
    return None


ServerConfig = Annotated[
    Annotated[StdioServerConfig, Tag("stdio")]
    | Annotated[HttpServerConfig, Tag("http")]
    | Annotated[SseServerConfig, Tag("sse")],
    Discriminator(
        server_kind,
        custom_error_type="server_kind",
        custom_error_message="needs either `command` (a stdio server) or `url` (streamable HTTP or SSE)",
    ),
]
SERVER_KIND_TAGS = frozenset({"stdio", "http", "sse"})


DEFAULT_MIN_RELEVANCE = 0.005
"""Hits below this relevance are left out unless asked. It is the highest floor that leaves out almost
none of the relevant tools of a top 10 on the dev sets, while it cuts the near-zero tail that pads a
small catalog's list (docs/BENCHMARKS.md, "Relevance floor")."""
DEFAULT_NOTHING_FITS_BELOW = 0.1
"""Below this relevance of its best hit, a search says nothing fits well. Chosen on the training
pairs' validation split, searched with and without the right server: the highest value that flags
almost none of the answerable requests (docs/BENCHMARKS.md, "Saying when nothing fits")."""

DEFAULT_MAX_QUERY_CHARS = 2000
"""The longest search query, in characters (a task's steps counted together). Scoring costs time in
proportion to a query's length; twice the longest training query leaves room for a long task
(docs/BENCHMARKS.md gives the query sizes)."""
DEFAULT_MAX_QUERY_STEPS = 16
"""The most steps in a search given as a list, each a search of its own: twice the most tools a
training query needs."""


EmbeddingProvider = Literal["openai", "ollama"]
"""Who embeds: any OpenAI-compatible `POST {baseUrl}/embeddings` (OpenAI, vLLM, LM Studio, llama.cpp,
LiteLLM), or Ollama's own `POST {baseUrl}/api/embed`."""


def _default_ollama_url() -> str:
    """`OLLAMA_BASE_URL` when set (as Ollama's own tools read it), else Ollama's local port."""
    return os.environ.get("OLLAMA_BASE_URL") or "http://localhost:11434"


def _checked_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    return url


class EmbeddingsConfig(_Model):
    """An embedding provider for search and smart mode (`search.embeddings`).

    Tool vectors are kept on disk by the hash of their text, the provider and the model, so a restart
    or a changed tool embeds only what changed; a query's vector is kept a few minutes."""

    provider: EmbeddingProvider
    base_url: str | None = None
    """Up to `/embeddings` (openai, default `https://api.openai.com/v1`) or `/api/embed` (ollama, default
    `$OLLAMA_BASE_URL`, else `http://localhost:11434`)."""
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    """The environment variable holding the API key, sent as a bearer token (unset: no key)."""
    dimensions: int | None = Field(default=None, ge=1, le=65_536)
    """Asked of the provider (OpenAI's `dimensions`) and checked on every answer: vectors of another
    length are a failure, never mixed into the index."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds one request may take."""
    batch_size: int = Field(default=64, ge=1, le=2048)
    """Texts sent in one request."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)

    def url(self) -> str:
        """The base URL, or the provider's default."""
        if self.base_url:
            return self.base_url.rstrip("/")
        return "https://api.openai.com/v1" if self.provider == "openai" else _default_ollama_url().rstrip("/")

    def api_key(self) -> str | None:
        """The key from `apiKeyEnv` (None when unset or empty)."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None


class SearchConfig(_Model):
    """How `search_tools` ranks tools."""

    backend: Literal["hybrid", "bm25", "dense", "weighted"] = "hybrid"
    """`hybrid` fuses BM25 and embeddings (default); `bm25` is lexical only; `dense` embeddings only;
    `weighted` the discovery-engine design's fixed weights for words found in a tool's name, summary and tags."""
    model: Literal["static", "minilm"] = "static"
    """Embedding model: `static` (packaged, no torch) or `minilm` (the `toolscout[minilm]` extra)."""
    min_relevance: float = Field(default=DEFAULT_MIN_RELEVANCE, ge=0.0, le=1.0)
    """Hits below this relevance are not returned (0 keeps everything); `search_tools(minRelevance)`
    and `toolscout search --min-relevance` ask otherwise for one search."""
    nothing_fits_below: float = Field(default=DEFAULT_NOTHING_FITS_BELOW, ge=0.0, le=1.0)
    """When the best hit's relevance is below this, `search_tools` says nothing fits well (`nothingFits`)
    and suggests other words: the task may need a tool no server offers. 0 never says so."""
    max_query_chars: int = Field(default=DEFAULT_MAX_QUERY_CHARS, ge=100)
    """The longest query searched, in characters, a list's steps counted together; a longer one is
    refused with an error saying the limit (every path: search_tools, `toolscout search`)."""
    max_query_steps: int = Field(default=DEFAULT_MAX_QUERY_STEPS, ge=1)
    """The most steps in a query given as a list."""
    fuzzy_names: bool = True
    """A short query close to a tool's name (a typo: `get_wether`) counts as naming it, as one signal
    among the search's others; false: a name counts only when written exactly (any case, with `-`,
    `_`, spaces or camel case). For search_tools and smart mode alike."""
    embeddings: EmbeddingsConfig | None = None
    """Embeddings from a provider (an OpenAI-compatible endpoint or Ollama) instead of `model`; unset:
    `model` embeds. An unreachable provider falls back to the packaged static model."""

    def nothing_fits(self, relevances: Iterable[float]) -> bool:
        """Whether a search that found hits of these `relevances` should say nothing fits well: it
        found some, and even the best is below `nothing_fits_below` (every search path asks this)."""
        best = max(relevances, default=None)
        return best is not None and best < self.nothing_fits_below


DEFAULT_AUDIT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_AUDIT_BACKUPS = 5


def default_audit_path() -> str:
    """Return `audit.jsonl` in the user log directory (worked out when a config is built, never at import)."""
    return str(user_log_dir() / "audit.jsonl")


class AuditConfig(_Model):
    """The audit log: one JSON line per tool execution (see `toolscout.gateway.audit`)."""

    enabled: bool = True
    path: str = Field(default_factory=default_audit_path, min_length=1)
    """Where to append; `~` is expanded. Absolute, since clients start the gateway in any directory."""
    max_bytes: int = Field(default=DEFAULT_AUDIT_MAX_BYTES, ge=1024)
    """Size at which the file is renamed to `<path>.1` and a new one started."""
    backups: int = Field(default=DEFAULT_AUDIT_BACKUPS, ge=1, le=100)
    """How many rotated files (`.1` … `.N`) are kept; older ones are deleted."""
    redact_keys: list[str] = Field(default_factory=list[str])
    """Extra argument names whose values are redacted: globs (whole name, any case) or `/regex/flags`."""
    redact_patterns: list[str] = Field(default_factory=list[str])
    """Extra regular expressions; their matches inside string arguments are redacted."""
    fsync: bool = False
    """fsync after every line: survives a power cut too, at the cost of a disk flush per call."""

    _path_is_absolute = field_validator("path")(absolute_path)
    _key_patterns_compile = field_validator("redact_keys")(patterns_compile)

    @field_validator("redact_patterns")
    @classmethod
    def _value_patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
            if compiled.search(""):
                # It would match everywhere (between every character) and redact nothing useful.
                raise ValueError(f"{pattern!r} matches the empty string")
        return patterns


class CatalogCacheConfig(_Model):
    """The persistent catalog: each server's last known tools, answered at once on the next start."""

    enabled: bool = True
    path: str | None = None
    """The SQLite file; unset: `catalog.sqlite3` in the user cache directory. `~` is expanded."""

    _path_is_absolute = field_validator("path")(absolute_path)


DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE = 50
"""A run (a namespace) registers its few components; 50 is far beyond that, and ten runs fit the total."""
DEFAULT_MAX_REGISTRATIONS = 500
"""Each registration is an upstream kept running (a registered server holds a connection, pinged every
5 s): 500 leave room for clients and stdio children under the common limit of 1,024 open files."""


class RegistryConfig(_Model):
    """Where issued tokens and run-time registrations are kept (`toolscout.registry`): the embedded
    SQLite file (default), or Redis, shared by the replicas of one gateway."""

    backend: Literal["sqlite", "redis"] = "sqlite"
    path: str | None = None
    """The SQLite file; unset: `registry.sqlite3` beside the persistent catalog's file. `~` is expanded."""
    url: str | None = None
    """Redis: `redis://[:password@]host:6379/0` or `rediss://` (TLS); a password from `${ENV}`."""
    key_prefix: str = Field(default="toolscout:", min_length=1)
    """Redis: the prefix of every key, so that several gateways can share one Redis."""
    advertise_url: str | None = None
    """Redis: where the other replicas reach this one (`http://10.0.0.5:8766`), for the 2026-07-28
    retries they forward here; unset: the address `serve` listens on (not a wildcard one)."""
    max_registrations_per_namespace: int = Field(default=DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE, ge=1)
    """Servers and callback tools registered into one namespace (the global one included); a new one
    beyond it is refused (HTTP 429) until one is removed or expires."""
    max_registrations: int = Field(default=DEFAULT_MAX_REGISTRATIONS, ge=1)
    """Servers and callback tools registered in all namespaces together; beyond it, likewise."""

    _path_is_absolute = field_validator("path")(absolute_path)

    @field_validator("url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is not None and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return url

    @model_validator(mode="after")
    def _redis_needs_url(self) -> RegistryConfig:
        if self.backend == "redis" and not self.url:
            raise ValueError('backend "redis" needs url, e.g. "redis://localhost:6379/0"')
        return self


SelectionMode = Literal["rule_based", "semantic_based", "llm_based", "hybrid"]
"""How `smart_tool_discovery` picks a tool: lexical and name matching, embeddings, the LLM, or all three."""


LLMProviderName = Literal["openai", "anthropic", "ollama"]
"""The API an LLM is asked through: OpenAI-compatible chat completions (OpenAI, vLLM, LM Studio,
llama.cpp, Ollama's `/v1`), Anthropic's Messages API, or Ollama's own `/api/chat`."""

DEFAULT_LLM_URLS: dict[str, str] = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_KEY_ENVS: dict[str, str] = {"anthropic": "ANTHROPIC_API_KEY"}


class LLMConfig(_Model):
    """The LLM smart mode asks to choose a tool and to map a request to its arguments.

    `selection` and `mapping`, when given, are whole LLMs of their own for one of the two jobs (a
    small local model to map arguments, a larger one to choose, say); the rest goes to this one."""

    provider: LLMProviderName = "openai"
    base_url: str | None = None
    """openai: up to `/chat/completions` (default `https://api.openai.com/v1`; Ollama's is
    `http://localhost:11434/v1`); anthropic: up to `/v1/messages` (default `https://api.anthropic.com`);
    ollama: up to `/api/chat` (default `$OLLAMA_BASE_URL`, else `http://localhost:11434`)."""
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    """The environment variable holding the API key (unset: `ANTHROPIC_API_KEY` for anthropic, else
    no key, as local servers need none)."""
    timeout: float = Field(default=20.0, gt=0)
    """Seconds one attempt may take."""
    max_retries: int = Field(default=1, ge=0, le=10)
    """Attempts after the first, on timeouts, refused connections and busy statuses (408, 429, 5xx, 529)."""
    max_tokens: int = Field(default=1024, ge=16, le=100_000)
    """The longest answer asked for (Anthropic requires one; the others are sent it too)."""
    selection: LLMConfig | None = None
    """Another LLM for choosing the tool (unset: this one)."""
    mapping: LLMConfig | None = None
    """Another LLM for mapping a request to the tool's arguments (unset: this one)."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)

    @model_validator(mode="after")
    def _one_level(self) -> LLMConfig:
        for role in (self.selection, self.mapping):
            if role is not None and (role.selection is not None or role.mapping is not None):
                raise ValueError("llm.selection and llm.mapping cannot have a selection or mapping of their own")
        return self

    def url(self) -> str:
        """The base URL, or the provider's default."""
        if self.base_url:
            return self.base_url.rstrip("/")
        if self.provider == "ollama":
            return _default_ollama_url().rstrip("/")
        return DEFAULT_LLM_URLS[self.provider]

    def api_key(self) -> str | None:
        """The key from `apiKeyEnv` (or the provider's usual variable; None when unset or empty)."""
        env = self.api_key_env or DEFAULT_KEY_ENVS.get(self.provider)
        return (os.environ.get(env) or None) if env else None

    def for_selection(self) -> LLMConfig:
        """The LLM that chooses tools."""
        return self.selection or self

    def for_mapping(self) -> LLMConfig:
        """The LLM that maps a request to arguments."""
        return self.mapping or self


class SmartWeights(_Model):
    """Hybrid selection: how much each method's chance counts when they are pooled.

    `semantic + rule` weighs the search's chance that the tool is the one asked for (its own fusion
    of embeddings and BM25, calibrated on training data; within it, the two count as the search's
    fusion weights say), `llm` the LLM's confidence. The chances are pooled in log-odds with these
    weights, renormalised over the methods that answered: an LLM that declined, failed or is not
    configured counts as nothing, not as a zero, and the search's chance is then the confidence. A
    cosine and a BM25 share are not on one scale, so they are not added here as they stand
    (smart/selection.py)."""

    semantic: float = Field(default=0.30, ge=0)
    rule: float = Field(default=0.15, ge=0)
    llm: float = Field(default=0.55, ge=0)

    @model_validator(mode="after")
    def _some_weight(self) -> SmartWeights:
        if self.semantic + self.rule <= 0:
            raise ValueError("semantic and rule cannot both be 0: the search decides when there is no LLM")
        return self


class SmartCacheConfig(_Model):
    """The tool-match and LLM-response caches."""

    enabled: bool = True
    max_tool_matches: int = Field(default=1000, ge=1)
    tool_match_ttl: float = Field(default=3600.0, gt=0)
    """Seconds; a catalog change makes every cached match stale at once anyway."""
    max_llm_responses: int = Field(default=500, ge=1)
    llm_response_ttl: float = Field(default=1800.0, gt=0)


class SmartFallbackConfig(_Model):
    """What a `TOOL_NOT_FOUND` answer offers instead when no tool reaches the confidence threshold."""

    enabled: bool = True
    """Offer anything at all (off: the error alone, with its hints)."""
    max_suggestions: int = Field(default=3, ge=1, le=10)
    """How many tools the answer offers (in `fallback_options`, and per category)."""
    keyword: bool = True
    """Offer the closest tools by the search's own ranking of the request's words."""
    category: bool = True
    """Offer the best tools of the category the request's words point at (network, file, database, …)."""


class SmartConfig(_Model):
    """How `smart_tool_discovery` chooses a tool and maps a request's words to its arguments."""

    tool_selection_mode: SelectionMode = "hybrid"
    confidence_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Below this the best tool is not run: `TOOL_NOT_FOUND` with the closest ones (a call may ask otherwise)."""
    max_llm_candidates: int = Field(default=30, ge=1, le=100)
    """How many of the best-ranked tools the LLM sees, with their signatures."""
    weights: SmartWeights = Field(default_factory=SmartWeights)
    llm_mapping: bool = True
    """Map arguments with the LLM when one is available (else, and on its failure, the extractor)."""
    sampling: bool = False
    """Opt in: without `llm`, ask the calling client's own model through MCP sampling when it declares
    it. The 2026-07-28 protocol deprecates sampling (SEP-2577), so it is never the only way."""
    sampling_timeout: float = Field(default=60.0, gt=0)
    """Seconds the client's model (and its user, who may be asked to approve) has to answer a sampling request."""
    cache: SmartCacheConfig = Field(default_factory=SmartCacheConfig)
    fallback: SmartFallbackConfig = Field(default_factory=SmartFallbackConfig)
    """What a `TOOL_NOT_FOUND` answer offers instead (the closest tools, the request's category's best)."""
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


DEFAULT_LIST_TTL = 3600.0
"""An hour: how long the design keeps its server list and each server's tool summaries."""


class ListCacheConfig(_Model):
    """How long the server list and each server's tool summaries are trusted (`cache`): past `ttl`
    seconds since a server last listed its tools, the next question about it lists them again."""

    enabled: bool = True
    """Off: every list_mcp_servers and list_tools lists the connected servers' tools again first."""
    ttl: float = Field(default=DEFAULT_LIST_TTL, gt=0)
    """Seconds a server's tool list is answered as it is before it is listed again."""


SourceType = Literal["claude-desktop", "docker-mcp", "windsurf", "cursor", "vscode", "custom"]
"""Whose file a source is: an MCP client's (`mcpServers`; VS Code's `servers`), or toolscout's own
`custom` YAML (`servers: {name: {description, connection: {type, command, args, url}, tools}}`)."""


class ServerFileSource(_Model):
    """A file of server entries read beside `mcpServers` (`sources`), again whenever it changes."""

    type: SourceType
    path: str = Field(min_length=1)
    """`~` is expanded; a relative path is read from the configuration file's directory."""


DISCOVERY_KEYS = ("cache", "sources", "toolRules", "toolRulesEvaluation")
"""The keys the design writes under `discovery:`, read as if written at the top level."""


class DiscoveryConfig(_Model):
    """What is left of the design's `discovery:` section once its keys are read at the top level."""

    enabled: bool = True
    """False: `cache`, `sources`, `toolRules` and `toolRulesEvaluation` written under `discovery` are
    left out, as if not written (the file's own `mcpServers` are still served)."""


DEFAULT_MAX_CONNECTING = 32
"""Enough for every server of a usual config at once; with hundreds, the first ones connect without
waiting for the rest (each connection costs the gateway CPU, and stdio servers a process each)."""
DEFAULT_MAX_RESULT_BYTES = 1_000_000
"""The MCP SDK's client refuses a server-sent event over 1 MiB (`DEFAULT_MAX_SSE_EVENT_SIZE`, 1,048,576
bytes): a result of at most 1,000,000 bytes leaves room for the JSON-RPC envelope and the event's own lines."""


ExitCodes = Literal["toolscout", "spec"]
"""Which exit codes the command line ends with (cli/common.py): `toolscout`'s, or only those the
discovery service's spec gives each command."""


class CliConfig(_Model):
    """The command line's own settings (the gateway reads none of them)."""

    exit_codes: ExitCodes = "toolscout"
    """`toolscout`: 3 also when `list` finds a server in error and when `tools` or `inspect` cannot
    reach their server. `spec`: each command ends only with the codes the spec lists for it, so
    `list` exits 0 with a server in error (its row says so) and `tools` and `inspect` exit 2 for a
    server they cannot reach."""


class GatewayConfig(_Model):
    """The whole configuration file."""

    schema_url: str | None = Field(default=None, alias="$schema")
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])
    tool_rules: list[ToolRule] = Field(default_factory=list[ToolRule])
    tool_rules_evaluation: RuleEvaluation = "first-match"
    """Which matching rule decides whether a tool is enabled (config/rules.py): `first-match`,
    `first-change` (the design's pseudocode) or `deny-wins` (how its examples read)."""
    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig)
    """The design's `discovery:` section: its `cache`, `sources` and `toolRules` count as top-level keys."""
    sources: list[ServerFileSource] = Field(default_factory=list[ServerFileSource])
    """Other files whose servers are served beside `mcpServers` (a name already taken is skipped)."""
    cache: ListCacheConfig = Field(default_factory=ListCacheConfig)
    """How long each server's tool list is trusted before it is listed again."""
    config_reload: Literal["live", "restart"] = "live"
    """`live`: edits of this file (and of its `sources`) apply while serving, as does SIGHUP; `restart`:
    the file is read once, and a change takes a restart of `toolscout serve`."""
    mode: ModeName = "discovery"
    search: SearchConfig = Field(default_factory=SearchConfig)
    max_output_chars: int | None = Field(default=None, ge=1)
    """Default cap on the text of a tool's result, cut with a notice; a call may ask for more."""
    max_result_bytes: int | None = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1024)
    """The most bytes of JSON one tool result may be: text beyond it is cut with a notice, and a result
    over it in images, resources or structuredContent is an error result; null: no limit."""
    max_connecting: int = Field(default=DEFAULT_MAX_CONNECTING, ge=1)
    """The most servers connecting at once (handshake and first tool list); the others wait their turn in
    the config's order, so that the first servers answer early when there are many."""
    max_loaded_tools: int = Field(default=DEFAULT_MAX_LOADED_TOOLS, ge=1, le=500)
    """Dynamic mode: how many tools one client may have loaded into its tool list at once."""
    tool_names: ToolNaming = "auto"
    """Passthrough mode: how tools are named (see `ToolNaming`)."""
    listing_format: ListingFormat = "text"
    """The text of list_mcp_servers, search_tools and list_tools: `text` (one line per entry, the
    fewest tokens) or `toon` (TOON when it is fewer tokens than compact JSON, else compact JSON)."""
    execute_result: ExecuteResult = "native"
    """What `execute_tool` answers (see `ExecuteResult`)."""

    schema_compression_enabled: bool = True
    """Compact mode: `inspect` writes input and output schemas as TypeScript signatures in its text
    (`{path: string}`); false: as JSON Schema. `structuredContent` keeps the raw schemas either way."""
    max_description_len: int = Field(default=DEFAULT_MAX_DESCRIPTION_LEN, ge=0)
    """Compact mode: how many characters of each property's description a TypeScript signature keeps,
    as a `/* ... */` comment; 0 leaves descriptions out."""
    compact_format: CompactFormat = "toon"
    """Compact mode: how `inspect` and `exec` write data in their text (see `CompactFormat`)."""
    audit: AuditConfig = Field(default_factory=AuditConfig)
    """The audit log of tool executions."""
    catalog_cache: CatalogCacheConfig = Field(default_factory=CatalogCacheConfig)
    """The persistent catalog; `false` turns it off, `true` is the default."""
    tool_pinning: ToolPinning = "quarantine"
    """What a changed tool definition costs (gateway/pins.py): each is pinned when first seen."""
    http: HttpServeConfig = Field(default_factory=HttpServeConfig)
    """`serve --transport http`: allowed Host/Origin headers and session limits."""
    registry: RegistryConfig = Field(default_factory=RegistryConfig)
    """Where issued tokens and run-time registrations are kept."""
    auth: AuthConfig = Field(default_factory=AuthConfig)
    """Admin and client keys of `serve --transport http` (config/http.py)."""
    llm: LLMConfig | None = None
    """The LLM of `smart` mode (`LLMConfig`: OpenAI-compatible, Anthropic or Ollama); unset: offline methods only."""
    smart: SmartConfig = Field(default_factory=SmartConfig)
    """How `smart_tool_discovery` selects a tool and maps arguments."""
    smart_tool: bool = False
    """Discovery mode: offer `smart_tool_discovery` beside the five meta-tools."""
    code_tool: bool = False
    """Discovery and dynamic mode: offer `run_code` beside the meta-tools."""
    code: CodeConfig = Field(default_factory=CodeConfig)
    """The limits of `run_code`'s programs."""
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """`/metrics` and OpenTelemetry traces (config/telemetry.py)."""
    cli: CliConfig = Field(default_factory=CliConfig)
    """The command line's exit codes."""

    @model_validator(mode="before")
    @classmethod
    def _discovery_section(cls, data: Any) -> Any:
        """Read the keys of the design's `discovery:` section as top-level keys (left out when it says
        `enabled: false`); a key written in both places is refused, since neither would be obviously meant."""
        if not isinstance(data, dict):
            return data
        raw: dict[str, Any] = dict(cast(dict[str, Any], data))
        if not isinstance(raw.get("discovery"), dict):
            return raw
        section = dict(cast(dict[str, Any], raw["discovery"]))
        lifted = {key: section.pop(key) for key in DISCOVERY_KEYS if key in section}
        raw["discovery"] = section
        if section.get("enabled") is False:
            return raw
        for key, value in lifted.items():
            if key in raw:
                raise ValueError(f"{key} is written both at the top level and under discovery: keep one of the two")
            raw[key] = value
        return raw

    @field_validator("cache", mode="before")
    @classmethod
    def _list_cache_flag(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @field_validator("catalog_cache", mode="before")
    @classmethod
    def _catalog_cache_flag(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @field_validator("mcp_servers")
    @classmethod
    def _server_names_are_usable(cls, servers: dict[str, Any]) -> dict[str, Any]:
        for name in servers:
            if not name or name != name.strip() or any(ord(c) < 32 for c in name):
                raise ValueError(f"server name {name!r} must be non-empty, without surrounding spaces")
        return servers


AnyServerConfig = StdioServerConfig | HttpServerConfig | SseServerConfig


def config_hash(config: AnyServerConfig) -> str:
    """A stable key for one server's configuration entry: sha256 of its canonical JSON.

    Defaults are left out, so a toolscout upgrade that adds a key with a default keeps the key
    of every existing entry; the transport kind is always in, so an HTTP and an SSE entry for
    one URL differ. The persistent catalog files what a server listed under this key.
    """
    data = config.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["kind"] = config.kind
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ServerSource(Protocol):
    """A source of upstream server configs, by the name the gateway shows them under."""

    def servers(self) -> Mapping[str, AnyServerConfig]:
        """The server configs as they are now, in the order the source declares them."""
        ...


@dataclass(frozen=True)
class ConfiguredServers:
    """The servers of a configuration's `mcpServers`, or only those named in `only` (unknown names are
    ignored: the caller checked them against the configuration, with a did-you-mean, if it had to)."""

    config: GatewayConfig
    only: Collection[str] | None = None

    def servers(self) -> Mapping[str, AnyServerConfig]:
        """Return every configured server (disabled ones too: the gateway lists them as disabled), in file order."""
        servers = self.config.mcp_servers.items()
        return {name: server for name, server in servers if self.only is None or name in self.only}
