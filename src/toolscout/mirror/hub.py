"""Resources and prompts of every upstream on the gateway's face, under names that say whose they are.

The same in every mode (the mode only changes tools).

Names:

* A resource is `toolscout://<server>/<its upstream URI, verbatim>`, the server name
  percent-encoded (`toolscout://docs/file:///srv/a.md?rev=2#top`). Routing strips the prefix
  as text, so every URI comes back exactly as the upstream gave it, query, fragment, odd
  characters and all; and a client sees the upstream's own URI after the server's name.
* A resource template is the same prefix before the upstream's template, verbatim
  (`toolscout://docs/file:///srv/{path}`). The prefix is literal characters only (letters,
  digits, `:`, `/`, `%XX`), so the result is still an RFC 6570 template with the same
  variables, and any expansion of it is the prefix followed by exactly what the upstream's
  template expands to with the same values: `resources/read` strips the prefix and the upstream
  gets the URI its own template would have made.
* A prompt is `server__prompt`, with passthrough's rules for client-valid names (at most 64
  characters of `[a-zA-Z0-9_-]`, a short hash where names would be too long or clash), so names
  are unique and deterministic. Everything else (titles, descriptions, arguments, MIME types,
  annotations, `_meta`) is the upstream's own.

Lists are fetched live on every request, from every connected upstream that declares the
capability, all pages, concurrently. A request waits at most `list_wait` seconds for any one
upstream; a slower list keeps coming in the background and replaces that server's entry when it
arrives (clients that listed are then told the list changed, see server.py). Until then, and while
a server is idle, reconnecting or down, its last known list stands in for it (as its tools do), so
a slow or broken server never blocks or empties the others. Reading a resource or getting a prompt
needs the server itself: an idle one is woken, one that is down is `SERVER_UNAVAILABLE`.

`toolRules` of `kind: resource` match resource URIs (templates by their URI template, reads by
the URI read), `kind: prompt` prompt names; both by the upstream's own URI or name (rules.py).

`changes` counts whatever a client lists may have changed (an upstream announced a
change, connected, or answered differently), so the server can compare and tell clients.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
from mcp import Client
from pydantic import BaseModel

from toolscout.config.rules import RuleKind
from toolscout.errors import (
    PromptDisabled,
    PromptNotFound,
    ResourceDisabled,
    ResourceNotFound,
    ServerNotFound,
    ServerUnavailable,
    ToolscoutError,
    UpstreamError,
)
from toolscout.gateway.changes import Changes
from toolscout.mirror.routing import only_owner, template_matches, uri_owners
from toolscout.suggestions import closest, did_you_mean
from toolscout.upstream import Status, Upstream
from toolscout.upstream.connection import ListKind

if TYPE_CHECKING:
    from toolscout.gateway.core import Gateway

logger = logging.getLogger(__name__)

SCHEME = "toolscout"
PREFIX = f"{SCHEME}://"
LIST_WAIT_SECONDS = 5.0
"""How long one list request waits for any one upstream before answering without its fresh list."""
MAX_PAGES = 100

ListName = Literal["resources", "resource_templates", "prompts"]
AdmitKind = Literal["resource", "template", "prompt"]
"""What `ContentHub.admit` checks: a resource URI (read, subscribed), a resource template (completed), a prompt."""
LIST_NAMES: tuple[ListName, ...] = ("resources", "resource_templates", "prompts")
_FOLLOWS: dict[ListKind, tuple[ListName, ...]] = {
    "resources": ("resources", "resource_templates"),
    "prompts": ("prompts",),
}
"""The lists an upstream's `notifications/<kind>/list_changed` is about."""

ItemT = TypeVar("ItemT", types.Resource, types.ResourceTemplate, types.Prompt)
ResultT = TypeVar("ResultT", bound=types.Result)


def gateway_uri(server: str, uri: str) -> str:
    """The gateway's URI (or URI template) for `server`'s `uri`: the prefix, then `uri` verbatim."""
    return f"{PREFIX}{quote(server, safe='')}/{uri}"


def split_gateway_uri(uri: str) -> tuple[str, str] | None:
    """`(server, upstream URI)` of a gateway URI, or None when `uri` is not one."""
    if uri[: len(PREFIX)].lower() != PREFIX:  # a scheme is case-insensitive
        return None
    server, slash, original = uri[len(PREFIX) :].partition("/")
    if not slash or not server:
        return None
    return unquote(server), original


def digest(items: Sequence[BaseModel]) -> str:
    """What a list says, as a short digest: equal lists, equal digests.

    Item by item: one `json.dumps` of a whole list of 10,000 tools held the GIL for 0.4 s, so even
    in a worker thread it stalled the event loop; small calls let it switch threads in between.
    """
    hashed = hashlib.sha256()
    for item in items:
        hashed.update(
            json.dumps(item.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True).encode()
        )
        hashed.update(b"\n")  # (a dumped item has no raw newline: each is told apart)
    return hashed.hexdigest()


DIGEST_INLINE_ITEMS = 100
"""Up to this many items a digest costs less than a worker thread's round trip (~1 ms at 100 tools)."""


async def digest_off_loop(items: Sequence[BaseModel]) -> str:
    """`digest(items)`, in a worker thread for a long list (10,000 tools: over a second)."""
    if len(items) <= DIGEST_INLINE_ITEMS:
        return digest(items)
    return await anyio.to_thread.run_sync(digest, list(items))


def without_hop_metadata(result: ResultT) -> ResultT:
    """Drop the upstream's `serverInfo` stamp: it describes that hop, and the gateway stamps its own."""
    meta = result.meta
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


async def _resources_page(client: Client, cursor: str | None) -> tuple[list[types.Resource], str | None]:
    page = await client.list_resources(cursor=cursor)
    return page.resources, page.next_cursor


async def _templates_page(client: Client, cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
    page = await client.list_resource_templates(cursor=cursor)
    return page.resource_templates, page.next_cursor


async def _prompts_page(client: Client, cursor: str | None) -> tuple[list[types.Prompt], str | None]:
    page = await client.list_prompts(cursor=cursor)
    return page.prompts, page.next_cursor


@dataclass(eq=False)
class _Listing(Generic[ItemT]):
    """One kind of list of every upstream: what each server listed last, and the fetches under way."""

    name: ListName
    method: str
    declared: Callable[[types.ServerCapabilities], bool]
    page: Callable[[Client, str | None], Awaitable[tuple[list[ItemT], str | None]]]
    rule_key: Callable[[ItemT], str]
    rule_kind: RuleKind
    known: dict[str, list[ItemT]] = field(default_factory=dict[str, list[ItemT]])
    generation: dict[str, int] = field(default_factory=dict[str, int])
    """Bumped by each change an upstream announces: a fetch that started before it goes again."""
    fetching: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])

    async def all_pages(self, client: Client) -> list[ItemT]:
        items: list[ItemT] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page, cursor = await self.page(client, cursor)
            items.extend(page)
            if cursor is None:
                break
        else:
            logger.warning("stopped following %s after %d pages", self.method, MAX_PAGES)
        return items


class ContentHub:
    """The resources, resource templates and prompts of every upstream, under gateway names."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway
        self.list_wait = LIST_WAIT_SECONDS
        self.changes = Changes()
        self._update_listeners: list[Callable[[str, str], Awaitable[None]]] = []
        self._resources = _Listing[types.Resource](
            "resources",
            "resources/list",
            lambda c: c.resources is not None,
            _resources_page,
            lambda r: r.uri,
            "resource",
        )
        self._templates = _Listing[types.ResourceTemplate](
            "resource_templates",
            "resources/templates/list",
            lambda c: c.resources is not None,
            _templates_page,
            lambda t: t.uri_template,
            "resource",
        )
        self._prompts = _Listing[types.Prompt](
            "prompts", "prompts/list", lambda c: c.prompts is not None, _prompts_page, lambda p: p.name, "prompt"
        )

    def _listing(self, name: ListName) -> _Listing[Any]:
        return {"resources": self._resources, "resource_templates": self._templates, "prompts": self._prompts}[name]

    # Changes

    def upstream_changed(self, upstream: Upstream, kind: ListKind) -> None:
        """An upstream announced that its resources (templates included) or prompts changed."""
        for name in _FOLLOWS[kind]:
            listing = self._listing(name)
            listing.generation[upstream.name] = listing.generation.get(upstream.name, 0) + 1
        self.changes.bump()

    def upstream_connected(self, upstream: Upstream) -> None:
        """An upstream (re)connected: what it lists may differ from what it listed before."""
        self.changes.bump()

    def use_stored(self, upstream: Upstream, lists: Mapping[str, Sequence[BaseModel]]) -> None:
        """List what the persistent catalog kept of `upstream` until it lists its own."""
        for name, items in lists.items():
            self._listing(cast(ListName, name)).known[upstream.name] = list(items)

    def follow_updates(self, listener: Callable[[str, str], Awaitable[None]]) -> Callable[[], None]:
        """Have `listener(server, uri)` told of every `notifications/resources/updated` of an upstream,
        until the returned function is called."""
        self._update_listeners.append(listener)
        return lambda: self._update_listeners.remove(listener)

    async def resource_updated(self, upstream: Upstream, uri: str) -> None:
        """An upstream says its resource `uri` changed."""
        for listener in list(self._update_listeners):
            await listener(upstream.name, uri)

    # Lists

    async def resources(self) -> list[types.Resource]:
        """Every enabled resource of every server, `uri` as the gateway's."""
        await self._gather(self._resources)
        return [r.model_copy(update={"uri": gateway_uri(s, r.uri)}) for s, r in self._enabled(self._resources)]

    async def resource_templates(self) -> list[types.ResourceTemplate]:
        """Every enabled resource template of every server, `uriTemplate` as the gateway's."""
        await self._gather(self._templates)
        return [
            t.model_copy(update={"uri_template": gateway_uri(s, t.uri_template)})
            for s, t in self._enabled(self._templates)
        ]

    async def prompts(self) -> list[types.Prompt]:
        """Every enabled prompt of every server, named `server__prompt`."""
        await self._gather(self._prompts)
        names = self._prompt_names()
        return [p.model_copy(update={"name": names[(s, p.name)]}) for s, p in self._enabled(self._prompts)]

    async def listed(self, name: ListName) -> Sequence[BaseModel]:
        """One of the three lists by name."""
        if name == "resources":
            return await self.resources()
        if name == "resource_templates":
            return await self.resource_templates()
        return await self.prompts()

    def _enabled(self, listing: _Listing[ItemT]) -> list[tuple[str, ItemT]]:
        rules = self._gateway.rules
        return [
            (upstream.name, item)
            for upstream in self._gateway.upstreams
            for item in listing.known.get(upstream.name, ())
            if rules.verdict(upstream.name, listing.rule_key(item), listing.rule_kind).enabled
        ]

    async def _gather(self, listing: _Listing[ItemT]) -> None:
        await self._gateway.settle_startup()
        async with anyio.create_task_group() as tg:
            for upstream in self._gateway.upstreams:
                tg.start_soon(self._refresh, listing, upstream)

    async def _refresh(self, listing: _Listing[ItemT], upstream: Upstream) -> None:
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
            self._gateway.start_soon(self._fetch, listing, upstream, done, name=f"{listing.method} {upstream.name}")
        with anyio.move_on_after(self.list_wait):
            await done.wait()
        if not done.is_set():
            wait, method = self.list_wait, listing.method
            logger.info("%s: %s takes over %gs; its last known list stands in", upstream.name, method, wait)

    async def _fetch(self, listing: _Listing[ItemT], upstream: Upstream, done: anyio.Event) -> None:
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

    def _store(self, listing: _Listing[ItemT], upstream: Upstream, items: list[ItemT]) -> None:
        if listing.known.get(upstream.name) != items:
            listing.known[upstream.name] = items
            self.changes.bump()
        self._gateway.on_content_listed(upstream, listing.name, items)

    # Resources

    async def route_uri(self, uri: str) -> tuple[str, str, bool]:
        """`(server, upstream URI, bare)` of a gateway URI, or of an upstream's own URI (`bare`, routing.py)."""
        split = split_gateway_uri(uri)
        if split is None:
            server = await self._bare_uri_owner(uri)
            return server, uri, True
        server, original = split
        names = [u.name for u in self._gateway.upstreams]
        if server not in names:
            # A client may have normalised the host to lower case.
            same = [n for n in names if n.lower() == server.lower()]
            if len(same) != 1:
                close = closest(server, names)
                raise ServerNotFound(
                    f"No server named {server!r} (in {uri!r}).{did_you_mean(close)} "
                    "resources/list shows every server's resources.",
                    server=server,
                    uri=uri,
                    suggestions=close or None,
                )
            server = same[0]
        return server, original, False

    async def admit(self, kind: AdmitKind, server: str, name: str) -> None:
        """Refuse unless `server` listed `name` and `toolRules` enable it: the one check every
        resource read or subscription (`resource`: a URI it lists, or one that matches an enabled
        template it lists), completion of a template (`template`: one it lists) and prompt
        (`prompt`) passes before anything reaches the upstream.

        A name not in the lists known is looked for once more in the server's list as it is now;
        a server whose list is still unknown gets a `SERVER_UNAVAILABLE` to retry. Never forwarded
        on trust: an upstream whose own lookup is loose (case, Unicode forms) would hand out what
        the rules keep back under another spelling.
        """
        rule_kind: RuleKind = "prompt" if kind == "prompt" else "resource"
        if not self._gateway.rules.verdict(server, name, rule_kind).enabled:
            if kind == "prompt":
                message = f"Prompt {name!r} of {server!r} is disabled by toolRules and cannot be used."
                raise PromptDisabled(message, server=server, prompt=name)
            message = f"Resource {name!r} of {server!r} is disabled by toolRules and cannot be used."
            raise ResourceDisabled(message, server=server, uri=name)
        listed = self._listed(kind, server, name)
        if not listed:
            upstream = await self._gateway.live_upstream(server)  # (woken if idle, waited for if connecting)
            if kind == "prompt":
                await self._refresh(self._prompts, upstream)
            else:
                await self._refresh(self._resources, upstream)
                await self._refresh(self._templates, upstream)
            listed = self._listed(kind, server, name)
        if listed:
            return
        if listed is None:
            raise ServerUnavailable(
                f"Server {server!r} has not listed its {'prompts' if kind == 'prompt' else 'resources'} yet; "
                "try again shortly.",
                server=server,
            )
        raise self._not_listed(kind, server, name)

    def _listed(self, kind: AdmitKind, server: str, name: str) -> bool | None:
        """Whether `server`'s lists have `name` (None: it has listed none of them yet)."""
        if kind == "prompt":
            prompts = self._prompts.known.get(server)
            return None if prompts is None else any(p.name == name for p in prompts)
        resources = self._resources.known.get(server)
        templates = self._templates.known.get(server)
        if resources is None and templates is None:
            return None
        if kind == "template":
            return any(t.uri_template == name for t in templates or ())
        if any(r.uri == name for r in resources or ()):
            return True
        rules = self._gateway.rules
        return any(
            template_matches(t.uri_template, name) and rules.verdict(server, t.uri_template, "resource").enabled
            for t in templates or ()
        )

    def _not_listed(self, kind: AdmitKind, server: str, name: str) -> ToolscoutError:
        if kind == "prompt":
            close = closest(name, [p.name for p in self._prompts.known.get(server, ())])
            return PromptNotFound(
                f"Server {server!r} lists no prompt {name!r}.{did_you_mean(close)} prompts/list shows every prompt.",
                server=server,
                prompt=name,
                suggestions=close or None,
            )
        if kind == "template":
            known = [t.uri_template for t in self._templates.known.get(server, ())]
            what, where = "resource template", "resources/templates/list shows every template."
        else:
            known = [r.uri for r in self._resources.known.get(server, ())]
            what, where = "resource", "resources/list and resources/templates/list show what each server offers."
        close = closest(name, known)
        extra = " and none of its templates matches it" if kind == "resource" else ""
        return ResourceNotFound(
            f"Server {server!r} lists no {what} {name!r}{extra}.{did_you_mean(close)} {where}",
            server=server,
            uri=name,
            suggestions=close or None,
        )

    async def route_template(self, template: str) -> tuple[str, str]:
        """`(server, upstream URI template)` of a gateway resource template, or of a server's own."""
        if split_gateway_uri(template) is not None:
            server, original, _ = await self.route_uri(template)
            return server, original
        for attempt in range(2):
            if attempt:
                await self._gather(self._templates)
            owners = [s for s, items in self._templates.known.items() if any(t.uri_template == template for t in items)]
            server = only_owner("resource template", template, owners, (gateway_uri(s, template) for s in owners))
            if server is not None:
                return server, template
        raise ResourceNotFound(
            f"No server has the resource template {template!r}; resources/templates/list shows them all.",
            uri=template,
        )

    async def _bare_uri_owner(self, uri: str) -> str:
        for attempt in range(2):
            if attempt:  # not known yet: what the servers list now may say
                await self._gather(self._resources)
                await self._gather(self._templates)
            offering = [
                u.name
                for u in self._gateway.upstreams
                if u.server_capabilities is not None and u.server_capabilities.resources is not None
            ]
            owners = uri_owners(
                uri,
                {s: [r.uri for r in items] for s, items in self._resources.known.items()},
                {s: [t.uri_template for t in items] for s, items in self._templates.known.items()},
                offering,
            )
            server = only_owner("resource", uri, owners, (gateway_uri(s, uri) for s in sorted(set(owners))))
            if server is not None:
                return server
        raise ResourceNotFound(
            f"No server lists {uri!r} or has a template for it. Resources are named "
            f"{PREFIX}<server>/<the server's own URI>, as resources/list and resources/templates/list show.",
            uri=uri,
        )

    async def read(self, uri: str) -> types.ReadResourceResult:
        """`resources/read` of a gateway URI: the upstream's contents, their `uri`s as the gateway's.

        Read by the upstream's own URI, the contents keep the upstream's URIs: the answer is in
        the names it was asked in.
        """
        server, original, bare = await self.route_uri(uri)
        await self.admit("resource", server, original)
        upstream = await self._gateway.live_upstream(server)

        async def read(client: Client) -> types.ReadResourceResult:
            return await client.read_resource(original)

        result = await upstream.request(f"resources/read {original}", read)
        if bare:
            return without_hop_metadata(result)
        contents = [c.model_copy(update={"uri": gateway_uri(server, c.uri)}) for c in result.contents]
        return without_hop_metadata(result.model_copy(update={"contents": contents}))

    # Prompts

    def _prompt_names(self) -> dict[tuple[str, str], str]:
        # Disabled prompts get names too, so that disabling one never renames another.
        from toolscout.surfaces.passthrough import native_names  # passthrough imports the gateway, which imports this

        return native_names((server, p.name) for server, items in self._prompts.known.items() for p in items)

    def _route_prompt(self, name: str) -> tuple[str, str] | None:
        names = self._prompt_names()
        route = next((pair for pair, native in names.items() if native == name), None)
        if route is not None:
            return route
        owners = [server for server, prompt in names if prompt == name]
        server = only_owner("prompt", name, owners, (names[(s, name)] for s in sorted(set(owners))))
        return None if server is None else (server, name)

    async def find_prompt(self, name: str) -> tuple[str, str]:
        """`(server, prompt)` of a gateway prompt name, or of an upstream's own prompt name."""
        route = self._route_prompt(name)
        if route is None:
            offered = [p.name for p in await self.prompts()]  # it may be new since the last listing
            route = self._route_prompt(name)
            if route is None:
                raise self._prompt_not_found(name, offered)
        return route

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        """`prompts/get` of a gateway prompt name: the upstream's messages, resource URIs as the gateway's."""
        server, prompt = await self.find_prompt(name)
        await self.admit("prompt", server, prompt)
        upstream = await self._gateway.live_upstream(server)

        async def get(client: Client) -> types.GetPromptResult:
            return await client.get_prompt(prompt, arguments)

        result = await upstream.request(f"prompts/get {prompt}", get)
        messages = [m.model_copy(update={"content": _gateway_block(server, m.content)}) for m in result.messages]
        return without_hop_metadata(result.model_copy(update={"messages": messages}))

    def _prompt_not_found(self, name: str, offered: Iterable[str]) -> PromptNotFound:
        close = closest(name, list(offered))
        return PromptNotFound(
            f"No prompt named {name!r}.{did_you_mean(close)} "
            "prompts/list shows every server's prompts, named server__prompt.",
            prompt=name,
            suggestions=close or None,
        )


def _gateway_block(server: str, block: types.ContentBlock) -> types.ContentBlock:
    """A prompt message's content with the resource it embeds or links to named as the gateway names it."""
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"uri": gateway_uri(server, block.resource.uri)})
        return block.model_copy(update={"resource": resource})
    if isinstance(block, types.ResourceLink):
        return block.model_copy(update={"uri": gateway_uri(server, block.uri)})
    return block
