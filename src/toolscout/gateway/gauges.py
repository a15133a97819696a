"""What the gateway's state says when `/metrics` is scraped: each upstream's status and reconnects,
the catalog's size, the quarantined tools, and the embedding cache's hits.

Read when asked rather than counted as it changes: the gateway already knows all of it, and a scrape
every few seconds costs less than bookkeeping on every change.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from toolscout.catalog import Catalog
from toolscout.upstream import Status, Upstream

if TYPE_CHECKING:
    from toolscout.search import SearchBackend
    from toolscout.telemetry.metrics import CacheCounts


class GatewayState(Protocol):
    """What is read of the gateway (`Gateway`, which builds these families over itself)."""

    @property
    def catalog(self) -> Catalog: ...

    @property
    def upstreams(self) -> list[Upstream]: ...


def state_families(gateway: GatewayState) -> Iterator[Metric]:
    """The families of `gateway`'s state (every upstream, whatever the scope: a scrape is the operator's)."""
    status = GaugeMetricFamily(
        "toolscout_upstream_status",
        "1 for each upstream server's current status (connecting, connected, idle, error, disabled), else 0.",
        labels=("server", "status"),
    )
    reconnects = CounterMetricFamily(
        "toolscout_upstream_reconnects",
        "Attempts to connect to an upstream server again after a failure or a lost connection.",
        labels=("server",),
    )
    tools = GaugeMetricFamily(
        "toolscout_catalog_tools", "Tools each upstream server lists in the catalog.", labels=("server",)
    )
    enabled = GaugeMetricFamily(
        "toolscout_catalog_enabled_tools",
        "Tools of each server that clients can use (enabled by toolRules, not quarantined).",
        labels=("server",),
    )
    quarantined = GaugeMetricFamily(
        "toolscout_quarantined_tools",
        "Tools kept from clients because their definition changed since it was pinned (toolPinning).",
        labels=("server",),
    )
    catalog = gateway.catalog
    for upstream in gateway.upstreams:
        name = upstream.name
        for value in Status:
            status.add_metric([name, value.value], 1.0 if upstream.status is value else 0.0)
        reconnects.add_metric([name], upstream.reconnects)
        total, usable = catalog.counts(name)
        tools.add_metric([name], total)
        enabled.add_metric([name], usable)
        every = catalog.tools(name, include_disabled=True, include_quarantined=True)
        quarantined.add_metric([name], sum(1 for tool in every if tool.quarantined))
    yield from (status, reconnects, tools, enabled, quarantined)


def vector_cache(backend: SearchBackend | None) -> CacheCounts | None:
    """The embedding cache of `backend`, if it has one (hybrid and dense search; None before it is built)."""
    if backend is None:
        return None
    from toolscout.search.embedding import DenseBackend  # built already: the search package is imported
    from toolscout.search.hybrid import HybridBackend

    dense = backend.dense if isinstance(backend, HybridBackend) else backend
    return dense.cache if isinstance(dense, DenseBackend) else None
