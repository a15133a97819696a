"""The configuration as pydantic models: one model per upstream transport.

Files use the `mcpServers` shape of Claude Desktop and Cursor with camelCase keys;
the models accept those names and reject anything they do not know.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator
from pydantic.alias_generators import to_camel

from toolscout.config.auth import AuthConfig
from toolscout.config.http import HttpServeConfig
from toolscout.config.locations import absolute_path, user_log_dir
from toolscout.config.patterns import compile_pattern
from toolscout.config.registry import RegistryConfig
from toolscout.config.smart import LLMConfig, SmartConfig

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 30.0


ModeName = Literal["discovery", "compact", "passthrough", "dynamic", "smart"]
"""What the agent sees: the five meta-tools, `inspect` + `exec`, every tool natively as `server__tool`,
the meta-tools plus the tools a client loads, or one `smart_tool_discovery` tool (config/smart.py)."""

DEFAULT_MAX_LOADED_TOOLS = 20

ToolNaming = Literal["auto", "prefixed", "bare-when-unique"]
"""Passthrough's tool names: `server__tool` in front of several servers and the tool's own in front of one
(`auto`), always `server__tool` (`prefixed`), or the tool's own wherever no other server has that name."""

ListingFormat = Literal["text", "toon"]
"""How listings read for the model: toolscout's line format, or TOON / compact JSON (spec 001 §4.2)."""

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


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    return url


class HttpServerConfig(_ServerBase):
    """A server reached over streamable HTTP."""

    kind: Literal["http", "streamable-http", "streamableHttp", "streamable_http"] = Field(
        default="http", validation_alias=AliasChoices("transport", "type")
    )
    url: str
    headers: dict[str, str] = Field(default_factory=dict[str, str])

    _url = field_validator("url")(_check_url)


class SseServerConfig(_ServerBase):
    """A server reached over the legacy HTTP+SSE transport."""

    kind: Literal["sse"] = Field(default="sse", validation_alias=AliasChoices("transport", "type"))
    url: str
    headers: dict[str, str] = Field(default_factory=dict[str, str])

    _url = field_validator("url")(_check_url)


def server_kind(raw: Any) -> str | None:
    """Which transport a raw server entry asks for: `command` means stdio, a URL means HTTP or SSE."""
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


def patterns_compile(patterns: list[str]) -> list[str]:
    """A validator: every rule pattern (glob or `/regex/flags`) compiles."""
    for pattern in patterns:
        compile_pattern(pattern)  # raises ValueError with a readable reason
    return patterns


class ToolRule(_Model):
    """One entry of `toolRules`: which tools it matches, and what it says about them."""

    pattern: list[str] = Field(min_length=1)
    server: str | None = None
    enabled: bool | None = None
    tags: list[str] = Field(default_factory=list[str])
    kind: Literal["tool", "prompt", "resource"] | None = None
    """What the rule is about: tools (by name; the default, also when unset), prompts (by name) or
    resources (by URI, templates by their URI template). Each kind has rules, and a whitelist, of its own."""

    @field_validator("pattern", mode="before")
    @classmethod
    def _one_pattern_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    _patterns_compile = field_validator("pattern")(patterns_compile)


DEFAULT_MIN_RELEVANCE = 0.005
"""Hits below this relevance are left out unless asked. Chosen on the dev sets (docs/BENCHMARKS.md,
"Relevance floor"): the highest candidate floor that leaves out at most 1% of the relevant tools of
a top 10 on both (MetaTool 0.8%, LiveMCPBench none), while it cuts 17% and 4% of the other tools and
the near-zero tail that pads a small catalog's list ("current time": 8 of 10 results)."""

DEFAULT_MAX_QUERY_CHARS = 2000
"""The longest search query, in characters (a task's steps counted together). Scoring costs time in
proportion (about 4 ms per 1,000 characters on 726 tools, 2 cores): a 4 MB query took 9 s. The
longest of the 14,896 training queries (../shared/train; `benchmarks/query_load.py --query-sizes`)
has 985 characters, the 99.9th percentile 863: twice the longest leaves room for a long task."""
DEFAULT_MAX_QUERY_STEPS = 16
"""The most steps in a search given as a list: each is a search of its own. The training queries
that need the most tools need 8 (one of 14,896 queries; 99.9% need at most 6): twice that."""


class SearchConfig(_Model):
    """How `search_tools` ranks tools."""

    backend: Literal["hybrid", "bm25", "dense"] = "hybrid"
    """`hybrid` fuses BM25 and embeddings (default); `bm25` is lexical only; `dense` embeddings only."""
    model: Literal["static", "minilm"] = "static"
    """Embedding model: `static` (packaged, no torch) or `minilm` (the `toolscout[minilm]` extra)."""
    min_relevance: float = Field(default=DEFAULT_MIN_RELEVANCE, ge=0.0, le=1.0)
    """Hits below this relevance are not returned (0 keeps everything); `search_tools(minRelevance)`
    and `toolscout search --min-relevance` ask otherwise for one search."""
    max_query_chars: int = Field(default=DEFAULT_MAX_QUERY_CHARS, ge=100)
    """The longest query searched, in characters, a list's steps counted together; a longer one is
    refused with an error saying the limit (every path: search_tools, `toolscout search`)."""
    max_query_steps: int = Field(default=DEFAULT_MAX_QUERY_STEPS, ge=1)
    """The most steps in a query given as a list."""


DEFAULT_AUDIT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_AUDIT_BACKUPS = 5


def default_audit_path() -> str:
    """`audit.jsonl` in the user log directory (worked out when a config is built, never at import)."""
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


DEFAULT_MAX_RESULT_BYTES = 1_000_000
"""The MCP SDK's client refuses a server-sent event over 1 MiB (`DEFAULT_MAX_SSE_EVENT_SIZE`, 1,048,576
bytes): a result of at most 1,000,000 bytes leaves room for the JSON-RPC envelope and the event's own lines."""


class GatewayConfig(_Model):
    """The whole configuration file."""

    schema_url: str | None = Field(default=None, alias="$schema")
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])
    tool_rules: list[ToolRule] = Field(default_factory=list[ToolRule])
    mode: ModeName = "discovery"
    search: SearchConfig = Field(default_factory=SearchConfig)
    max_output_chars: int | None = Field(default=None, ge=1)
    """Default cap on the text of a tool's result, cut with a notice; a call may ask for more."""
    max_result_bytes: int | None = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1024)
    """The most bytes of JSON one tool result may be: text beyond it is cut with a notice, and a result
    over it in images, resources or structuredContent is an error result; null: no limit."""
    max_loaded_tools: int = Field(default=DEFAULT_MAX_LOADED_TOOLS, ge=1, le=500)
    """Dynamic mode: how many tools one client may have loaded into its tool list at once."""
    tool_names: ToolNaming = "auto"
    """Passthrough mode: how tools are named (see `ToolNaming`)."""
    listing_format: ListingFormat = "text"
    """The text of list_mcp_servers, search_tools and list_tools: `text` (one line per entry, the
    fewest tokens) or `toon` (TOON when it is fewer tokens than compact JSON, else compact JSON)."""
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
    """Admin and client keys of `serve --transport http` (config/auth.py)."""
    llm: LLMConfig | None = None
    """An OpenAI-compatible endpoint for `smart` mode (config/smart.py); unset: offline methods only."""
    smart: SmartConfig = Field(default_factory=SmartConfig)
    """How `smart_tool_discovery` selects a tool and maps arguments."""
    smart_tool: bool = False
    """Discovery mode: offer `smart_tool_discovery` beside the five meta-tools."""

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
