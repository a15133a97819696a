"""The resource, resource template and prompt lists of every upstream: kept, fetched, told apart.

The lists have one set of names (`ListName`, in catalog.py): the mirror, the MCP server in serve/
(which notice tells a client each list changed) and the catalog store (which stored lists it reads
back) all name them by these. `Upstreams` is what the lists and the mirror need of the upstreams:
the gateway (`gateway/core.py`) is today's one implementation, and neither imports it, so both can
be built, and tested, over anything that keeps upstream connections.

Lists are fetched live on every request, from every connected upstream that declares the
capability, all pages, concurrently. A request waits at most `list_wait` seconds for any one
upstream; a slower list keeps coming in the background and replaces that server's entry when it
arrives (clients that listed are then told the list changed, see serve/server.py). Until then, and
while a server is idle, reconnecting or down, its last known list stands in for it (as its tools
do), so a slow or broken server never blocks or empties the others.

`changes` counts whatever a client lists may have changed (an upstream announced a change,
connected, or answered differently), so the MCP server can compare and tell clients.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, TypeVarTuple, cast

import anyio
import mcp_types as types
from pydantic import BaseModel

from toolscout.catalog import Changes, ListName
from toolscout.config.rules import RuleKind, RuleSet
from toolscout.config.scopes import current_scope
from toolscout.errors import ToolscoutError, UpstreamError
from toolscout.upstream import Status, Upstream
from toolscout.upstream.calls import MAX_PAGES, paginate
from toolscout.upstream.connection import ListKind

if TYPE_CHECKING:
    from mcp import Client  # (only the connection imports the SDK: upstream/connection.py says why)

logger = logging.getLogger(__name__)


Ts = TypeVarTuple("Ts")


class Upstreams(Protocol):
    """The configured upstreams: each by name, live on demand, and a task group to fetch in."""

    @property
    def upstreams(self) -> Sequence[Upstream]:
        """Every configured upstream, in configuration order."""
        ...

    def upstream(self, name: str) -> Upstream:
        """The upstream called `name`, or `ServerNotFound`."""
        ...

    async def live_upstream(self, server: str) -> Upstream:
        """The upstream `server`, connected (woken when idle, waited for while connecting), or why not."""
        ...

    async def settle_startup(self) -> None:
        """Wait for the servers still on their first attempt to connect (bounded by their own timeouts)."""
        ...

    def start_soon(self, func: Callable[[*Ts], Coroutine[Any, Any, Any]], *args: *Ts, name: str) -> None:
        """Run `func(*args)` in the background, for as long as the upstreams are kept (it must not raise)."""
        ...


FOLLOWS: dict[ListKind, tuple[ListName, ...]] = {
    "resources": ("resources", "resource_templates"),
    "prompts": ("prompts",),
}
"""The lists an upstream's `notifications/<kind>/list_changed` is about."""
LIST_WAIT_SECONDS = 5.0
"""How long one list request waits for any one upstream before answering without its fresh list."""
ItemT = TypeVar("ItemT", types.Resource, types.ResourceTemplate, types.Prompt)
ListedCallback = Callable[[Upstream, ListName, Sequence[BaseModel]], None]
"""Told of every live list an upstream gives (the gateway keeps it in the server's snapshot)."""


async def _resources_page(client: Client, cursor: str | None) -> tuple[list[types.Resource], str | None]:
    page = await client.list_resources(cursor=cursor)
    return page.resources, page.next_cursor


async def _templates_page(client: Client, cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
    page = await client.list_resource_templates(cursor=cursor)
    return page.resource_templates, page.next_cursor


async def _prompts_page(client: Client, cursor: str | None) -> tuple[list[types.Prompt], str | None]:
    page = await client.list_prompts(cursor=cursor)
    return page.prompts, page.next_cursor


def in_scope(upstream: Upstream, name: str, kind: RuleKind) -> bool:
    """Whether the scope of the request sees `upstream`'s prompt `name` or resource URI (template) `name`."""
    scope = current_scope()
    if scope.unrestricted:
        return True
    spec = upstream.spec
    return scope.sees_tool(spec.namespace, spec.registered_name, upstream.name, name, kind)


@dataclass(eq=False)
class Listing(Generic[ItemT]):
    """One kind of list of every upstream: what each server listed last, and the fetches under way."""

    name: ListName
    method: str
    declared: Callable[[types.ServerCapabilities], bool]
    page: Callable[[Client, str | None], Awaitable[tuple[list[ItemT], str | None]]]
    rule_key: Callable[[ItemT], str]
    """What `toolRules` match an item by: a resource's URI, a template's URI template, a prompt's name."""
    rule_kind: RuleKind
    known: dict[str, list[ItemT]] = field(default_factory=dict[str, list[ItemT]])
    generation: dict[str, int] = field(default_factory=dict[str, int])
    """Bumped by each change an upstream announces: a fetch that started before it goes again."""
    fetching: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])

    async def all_pages(self, client: Client) -> list[ItemT]:
        """Every page of this list from one upstream's `client` (at most `MAX_PAGES`)."""
        items, complete = await paginate(lambda cursor: self.page(client, cursor), max_pages=MAX_PAGES)
        if not complete:
            logger.warning("stopped following %s after %d pages", self.method, MAX_PAGES)
        return items


class UpstreamLists:
    """The three lists of every upstream, as last listed, brought up to date on request."""

    def __init__(self, upstreams: Upstreams, rules: RuleSet, *, on_listed: ListedCallback | None = None) -> None:
        self._upstreams = upstreams
        self._rules = rules
        self._on_listed = on_listed
        self.list_wait = LIST_WAIT_SECONDS
        self.changes = Changes()
        self.resources = Listing[types.Resource](
            "resources",
            "resources/list",
            lambda c: c.resources is not None,
            _resources_page,
            lambda r: r.uri,
            "resource",
        )
        self.templates = Listing[types.ResourceTemplate](
            "resource_templates",
            "resources/templates/list",
            lambda c: c.resources is not None,
            _templates_page,
            lambda t: t.uri_template,
            "resource",
        )
        self.prompts = Listing[types.Prompt](
            "prompts", "prompts/list", lambda c: c.prompts is not None, _prompts_page, lambda p: p.name, "prompt"
        )

    def listing(self, name: ListName) -> Listing[Any]:
        """The list called `name`."""
        return {"resources": self.resources, "resource_templates": self.templates, "prompts": self.prompts}[name]

    def announced(self, upstream: Upstream, kind: ListKind) -> None:
        """Note that `upstream` announced its `kind` lists changed: fetches under way go again."""
        for name in FOLLOWS[kind]:
            listing = self.listing(name)
            listing.generation[upstream.name] = listing.generation.get(upstream.name, 0) + 1
        self.changes.bump()

    def forget(self, server: str) -> None:
        """Forget `server`, which left the gateway: nothing of its lists is kept (a fetch under way is dropped)."""
        dropped = False
        for listing in (self.resources, self.templates, self.prompts):
            dropped = listing.known.pop(server, None) is not None or dropped
            listing.generation.pop(server, None)
        if dropped:
            self.changes.bump()

    def use_stored(self, upstream: Upstream, lists: Mapping[str, Sequence[BaseModel]]) -> None:
        """List what the persistent catalog kept of `upstream` until it lists its own."""
        for name, items in lists.items():
            self.listing(cast(ListName, name)).known[upstream.name] = list(items)

    def enabled(self, listing: Listing[ItemT]) -> list[tuple[str, ItemT]]:
        """Return `(server, item)` of every item `toolRules` enable and the request's scope sees, servers in
        configuration order (the upstreams' own, which are those the scope sees)."""
        return [
            (upstream.name, item)
            for upstream in self._upstreams.upstreams
            for item in listing.known.get(upstream.name, ())
            if self._rules.verdict(upstream.name, listing.rule_key(item), listing.rule_kind).enabled
            and in_scope(upstream, listing.rule_key(item), listing.rule_kind)
        ]

    async def gather(self, listing: Listing[ItemT]) -> None:
        """Bring every server's entry of `listing` up to date (`refresh`), all at once."""
        await self._upstreams.settle_startup()
        async with anyio.create_task_group() as tg:
            for upstream in self._upstreams.upstreams:
                tg.start_soon(self.refresh, listing, upstream)

    async def refresh(self, listing: Listing[ItemT], upstream: Upstream) -> None:
        """Bring `upstream`'s entry up to date, waiting at most `list_wait`; a slower answer lands later."""
        capabilities = upstream.server_capabilities
        if upstream.status is not Status.CONNECTED or capabilities is None:
            return  # its last known list stands in for it
        if not listing.declared(capabilities):
            self._store(listing, upstream, [])
            return
        done = listing.fetching.get(upstream.name)
        if done is None:
            done = listing.fetching[upstream.name] = anyio.Event()
            self._upstreams.start_soon(self._fetch, listing, upstream, done, name=f"{listing.method} {upstream.name}")
        with anyio.move_on_after(self.list_wait):
            await done.wait()
        if not done.is_set():
            wait, method = self.list_wait, listing.method
            logger.info("%s: %s takes over %gs; its last known list stands in", upstream.name, method, wait)

    async def _fetch(self, listing: Listing[ItemT], upstream: Upstream, done: anyio.Event) -> None:
        try:
            while True:
                generation = listing.generation.get(upstream.name, 0)
                items = await upstream.request(listing.method, listing.all_pages, use=False)
                self._store(listing, upstream, items)
                if listing.generation.get(upstream.name, 0) == generation:
                    break
        except UpstreamError as exc:
            if exc.details.get("upstreamCode") == types.METHOD_NOT_FOUND:
                self._store(listing, upstream, [])  # e.g. resources without templates
            else:
                logger.warning("%s", exc.message)
        except ToolscoutError as exc:  # not connected any more, or too slow even for its own timeout
            logger.warning("%s: %s not refreshed: %s", upstream.name, listing.method, exc.message)
        except Exception:  # a task of the gateway's own must never take it down
            logger.exception("%s: %s failed unexpectedly", upstream.name, listing.method)
        finally:
            listing.fetching.pop(upstream.name, None)
            done.set()

    def _store(self, listing: Listing[ItemT], upstream: Upstream, items: list[ItemT]) -> None:
        if upstream.stopped:
            return  # it left the gateway (or the gateway stops) while this was fetched
        if listing.known.get(upstream.name) != items:
            listing.known[upstream.name] = items
            self.changes.bump()
        if self._on_listed is not None:
            self._on_listed(upstream, listing.name, items)
