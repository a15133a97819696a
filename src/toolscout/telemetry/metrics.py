"""The gateway's metrics: what each request and upstream call took and how it ended, counted as it
happens, and written in the Prometheus text format when `/metrics` is scraped.

Recording is on the path of every request, so it is kept to a dictionary lookup, an index found by
bisection and two additions: no lock (everything is recorded on the event loop, and a scrape reads
there too), no object made per call once a series exists. `prometheus_client` is used only to write
the exposition, from a `CollectorRegistry` of each gateway's own (several gateways in one process,
as in the tests, never share a series), when a scrape asks for it.

What the gateway already knows (its upstreams' status, the catalog's size, the quarantined tools,
the caches' hits) is not counted twice: it is read at scrape time by the sources added with
`Metrics.add_source` (serve/telemetry.py reads the gateway).

Every label value comes from a bounded set: method names the gateway serves, tool names the client
could call (any other is `OTHER`, `bounded_tool`), configured or registered server names, error
codes. Never a URI, an argument, a credential or a query.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The Content-Type of the text exposition format that `Metrics.exposition` writes."""

DURATION_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Histogram bucket bounds, seconds: from a search answered from memory to a tool that runs for minutes."""

MAX_TOOL_LABELS = 2_000
"""Distinct tool names given series of their own (`Metrics.tool_label`); any further name is `OTHER`."""
OTHER = "_OTHER"
"""The label value that stands for any value outside the bounded set (the OpenTelemetry conventions' word)."""
TOOL_ERROR = "tool_error"
"""`error.type` of a `tools/call` answered with `isError: true`."""

JSONRPC_ERRORS = {
    -32700: "parse_error",
    -32600: "invalid_request",
    -32601: "method_not_found",
    -32602: "invalid_params",
    -32603: "internal_error",
    -32000: "connection_closed",
    -32001: "request_timeout",
    -32020: "header_mismatch",
    -32021: "missing_required_client_capability",
    -32022: "unsupported_protocol_version",
    -32042: "url_elicitation_required",
}
"""JSON-RPC error codes by the name `error.type` gives them; any other code is `jsonrpc_error`."""


def jsonrpc_error_type(code: int) -> str:
    """The `error.type` of a JSON-RPC error with `code` (an upstream's own codes are many: one name for the rest)."""
    return JSONRPC_ERRORS.get(code, "jsonrpc_error")


class Durations:
    """One series of a histogram: how many observations fell in each bucket (not cumulative), and their sum."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def quantile(self, q: float) -> float:
        """An estimate of the `q` quantile: the upper bound of the bucket it falls in (the last bound past it)."""
        wanted, seen = q * self.count, 0
        for bound, n in zip(DURATION_BUCKETS, self.counts, strict=False):
            seen += n
            if seen >= wanted:
                return bound
        return DURATION_BUCKETS[-1]


class Histogram:
    """Durations by label values, each series made on its first observation."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.series: dict[tuple[str, ...], Durations] = {}
        """Each label-value tuple's series (read by the dashboard: serve/telemetry.py's `tool_calls`)."""

    def observe(self, labels: tuple[str, ...], seconds: float) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = Durations()
        series.observe(seconds)

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        for values, series in self.series.items():
            cumulative, buckets = 0, list[tuple[str, float]]()
            for bound, n in zip((*DURATION_BUCKETS, float("inf")), series.counts, strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            family.add_metric(list(values), buckets, series.total)
        return family


class Counter:
    """Counts by label values."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.values: dict[tuple[str, ...], int] = {}

    def inc(self, labels: tuple[str, ...] = ()) -> None:
        self.values[labels] = self.values.get(labels, 0) + 1

    def family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labels)
        for values, count in self.values.items():
            family.add_metric(list(values), count)
        return family


@dataclass(frozen=True)
class ToolCalls:
    """One tool's calls as the face served them: how many, how many failed, and how long they took."""

    tool: str
    calls: int
    errors: int
    seconds: float
    """All the calls' time together."""
    p95: float
    """The 95th percentile of their durations, as the histogram's buckets can tell it (an upper bound)."""

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


Source = Callable[[], Iterable[Metric]]
"""Metric families read from the gateway's own state at scrape time."""


class CacheCounts(Protocol):
    """A cache that counts its own hits and misses (smart mode's caches, the embedding cache)."""

    hits: int
    misses: int


CacheReader = Callable[[], CacheCounts | None]
"""Finds a cache at scrape time (None: it is gone, or not built yet); a `weakref.ref` to one is such a reader."""


class Metrics(Collector):
    """One gateway's metrics (see the module); `enabled=False` records nothing and exposes nothing."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.operations = Histogram(
            "mcp_server_operation_duration_seconds",
            "MCP requests served to clients, by method, tool (tools/call) and error type (empty when it succeeded).",
            ("mcp_method_name", "gen_ai_tool_name", "error_type"),
        )
        self.upstream_calls = Histogram(
            "mcp_client_operation_duration_seconds",
            "Requests sent to upstream servers, by server, method and error type (empty when it succeeded).",
            ("server", "mcp_method_name", "error_type"),
        )
        self.searches = Histogram(
            "toolscout_search_duration_seconds",
            "Catalog searches (search_tools, smart mode's candidates), by kind and error type.",
            ("kind", "error_type"),
        )
        self.auth_failures = Counter(
            "toolscout_http_auth_failures",
            "HTTP requests refused for their credential: missing, invalid (unknown, revoked, expired) or "
            "unverifiable (the token registry cannot be read).",
            ("reason",),
        )
        self.rate_limited = Counter(
            "toolscout_http_rate_limited", "HTTP requests refused with 429 for a credential over its requestsPerMinute."
        )
        self._tool_names: set[str] = set()
        self._sources: list[Source] = []
        self._caches: list[tuple[str, CacheReader]] = []
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def tool_label(self, name: str) -> str:
        """`name` as a label value: itself if it is one already or there is room for one more, else `OTHER`.
        Only names of tools the gateway knew are asked about; the bound is the last guard."""
        if name in self._tool_names:
            return name
        if len(self._tool_names) >= MAX_TOOL_LABELS:
            return OTHER
        self._tool_names.add(name)
        return name

    def add_source(self, source: Source) -> None:
        """Have `source` say its families at every scrape (the gateway's state, read when asked)."""
        self._sources.append(source)

    def add_cache(self, name: str, read: CacheReader) -> None:
        """Count the hits and misses of the cache `read` finds, as `name` (summed with others of that name)."""
        self._caches.append((name, read))

    def cache_counts(self) -> dict[str, tuple[int | None, int, int]]:
        """Each cache's entries (None when it does not say), hits and misses, summed by name; the
        caches gone for good are forgotten. `/metrics` and the HTTP API's stats both read these."""
        totals: dict[str, tuple[int | None, int, int]] = {}
        alive: list[tuple[str, CacheReader]] = []
        for name, read in self._caches:
            cache = read()
            if cache is not None:
                entries, hits, misses = totals.get(name, (None, 0, 0))
                size = len(cache) if isinstance(cache, Sized) else None
                if size is not None:
                    entries = (entries or 0) + size
                totals[name] = (entries, hits + cache.hits, misses + cache.misses)
            if cache is not None or not isinstance(read, weakref.ref):  # a cache gone for good is forgotten
                alive.append((name, read))
        self._caches = alive
        return totals

    def _cache_family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(
            "toolscout_cache_requests",
            "Lookups in the gateway's caches, by cache and result (hit or miss).",
            labels=("cache", "result"),
        )
        for name, (_, hits, misses) in self.cache_counts().items():
            family.add_metric([name, "hit"], hits)
            family.add_metric([name, "miss"], misses)
        return family

    def collect(self) -> Iterator[Metric]:
        """Every family, for `prometheus_client` to write (the `Collector` protocol)."""
        yield self.operations.family()
        yield self.upstream_calls.family()
        yield self.searches.family()
        yield self.auth_failures.family()
        yield self.rate_limited.family()
        yield self._cache_family()
        for source in self._sources:
            yield from source()

    def exposition(self) -> bytes:
        """The text exposition format of every metric, as `/metrics` answers it."""
        return generate_latest(self.registry)

    def tool_calls(self) -> list[ToolCalls]:
        """Each tool's `tools/call`s so far, by tool name, most called first (for pages that show them)."""
        by_tool: dict[str, tuple[int, int, float, Durations]] = {}
        for (method, tool, error), series in self.operations.series.items():
            if method != "tools/call":
                continue
            calls, errors, seconds, merged = by_tool.get(tool, (0, 0, 0.0, Durations()))
            merged.counts = [a + b for a, b in zip(merged.counts, series.counts, strict=True)]
            merged.total += series.total
            count = series.count
            by_tool[tool] = (calls + count, errors + (count if error else 0), seconds + series.total, merged)
        stats = [ToolCalls(tool, c, e, s, merged.quantile(0.95)) for tool, (c, e, s, merged) in by_tool.items()]
        return sorted(stats, key=lambda s: (-s.calls, s.tool))
