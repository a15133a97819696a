"""Resources and prompts of every upstream as the gateway serves them, under names that say whose they are.

The same in every mode (the mode only changes tools).

Names:

* A resource is `toolscout://<server>/<its upstream URI, verbatim>`, a resource template the
  same prefix before the upstream's template (`gateway_uri`, below).
* A prompt is `server__prompt`, with passthrough's rules for client-valid names (naming.py), so
  names are unique and deterministic. Everything else (titles, descriptions, arguments, MIME
  types, annotations, `_meta`) is the upstream's own.
* An upstream's own URI or prompt name is routed too, when one server has it (`uri_owners`, below).

Lists come from `lists.py`: live, all pages, never waiting long for a slow server. Reading a
resource or getting a prompt needs the server itself: an idle one is woken, one that is down is
`SERVER_UNAVAILABLE`.

`toolRules` of `kind: resource` match resource URIs (templates by their URI template, reads by
the URI read), `kind: prompt` prompt names; both by the upstream's own URI or name (config/rules.py).

The module holds, in this order: `Mirror`, which lists, routes, reads and gets; `complete`, for
`completion/complete`; the `toolscout://` scheme; and the routing of a bare URI to its server.

`completion/complete` names a prompt or a resource template as the gateway lists it
(`server__prompt`, `toolscout://server/<template>`) or as its server does. The upstream is asked
with its own name; a server that does not offer completions gets an empty list, which is what the
MCP spec's "no suggestions" looks like, rather than an error for the client to handle.

The server name in a gateway URI is percent-encoded (`toolscout://docs/file:///srv/a.md?rev=2#top`).
Routing strips the prefix as text, so every URI comes back exactly as the upstream gave it, query,
fragment, odd characters and all; and a client sees the upstream's own URI after the server's name.
The prefix is literal characters only (letters, digits, `:`, `/`, `%XX`), so a resource template
with it is still an RFC 6570 template with the same variables, and any expansion of it is the
prefix followed by exactly what the upstream's template expands to with the same values:
`resources/read` strips the prefix and the upstream gets the URI its own template would have made.

A client may use an upstream's own names rather than the gateway's (naming.py says when, and what
it is told when several servers have one). A bare resource URI belongs to the server that lists it;
failing that, to the server with a resource template that matches it; failing that, to the one
server that offers resources at all.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, unquote

import mcp_types as types
from pydantic import BaseModel

from toolscout.catalog import Changes, ListName
from toolscout.config.rules import RuleKind, RuleSet
from toolscout.errors import (
    PromptDisabled,
    PromptNotFound,
    ResourceDisabled,
    ResourceNotFound,
    ServerNotFound,
    ServerUnavailable,
    ToolscoutError,
)
from toolscout.naming import native_names, only_owner
from toolscout.resources.lists import ItemT, ListedCallback, UpstreamLists, Upstreams, in_scope
from toolscout.suggestions import closest, did_you_mean
from toolscout.upstream import Upstream
from toolscout.upstream.calls import without_hop_metadata
from toolscout.upstream.connection import ListKind

if TYPE_CHECKING:
    from mcp import Client  # (only the connection imports the SDK: upstream/connection.py says why)

ItemKind = Literal["resource", "template", "prompt"]
"""What `Mirror.check_usable` checks: a resource URI (read, subscribed), a resource template (completed), a prompt."""


class Mirror:
    """The resources, resource templates and prompts of every upstream, under gateway names.

    `upstreams`: the upstreams mirrored (the gateway); `rules`: `toolRules`, which decide what
    is listed and what may be used; `on_listed`: told of every live list an upstream gives.
    """

    def __init__(self, upstreams: Upstreams, rules: RuleSet, *, on_listed: ListedCallback | None = None) -> None:
        self.upstreams = upstreams
        self._rules = rules
        self.lists = UpstreamLists(upstreams, rules, on_listed=on_listed)
        self._update_listeners: list[Callable[[str, str], Awaitable[None]]] = []

    @property
    def changes(self) -> Changes:
        """Bumped whenever what a client lists may have changed."""
        return self.lists.changes

    # Changes

    def upstream_changed(self, upstream: Upstream, kind: ListKind) -> None:
        """An upstream announced that its resources (templates included) or prompts changed."""
        self.lists.announced(upstream, kind)

    def upstream_connected(self, upstream: Upstream) -> None:
        """An upstream (re)connected: what it lists may differ from what it listed before."""
        self.changes.bump()

    def use_stored(self, upstream: Upstream, lists: Mapping[str, Sequence[BaseModel]]) -> None:
        """List what the persistent catalog kept of `upstream` until it lists its own."""
        self.lists.use_stored(upstream, lists)

    def forget(self, server: str) -> None:
        """Forget `server`, which left the gateway: its resources, templates and prompts are listed no more."""
        self.lists.forget(server)

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
        await self.lists.gather(self.lists.resources)
        return [
            r.model_copy(update={"uri": gateway_uri(s, r.uri)}) for s, r in self.lists.enabled(self.lists.resources)
        ]

    async def resource_templates(self) -> list[types.ResourceTemplate]:
        """Every enabled resource template of every server, `uriTemplate` as the gateway's."""
        templates = self.lists.templates
        await self.lists.gather(templates)
        return [
            t.model_copy(update={"uri_template": gateway_uri(s, t.uri_template)})
            for s, t in self.lists.enabled(templates)
        ]

    async def prompts(self) -> list[types.Prompt]:
        """Every enabled prompt of every server, named `server__prompt`."""
        await self.lists.gather(self.lists.prompts)
        names = self._prompt_names()
        return [p.model_copy(update={"name": names[(s, p.name)]}) for s, p in self.lists.enabled(self.lists.prompts)]

    async def listed(self, name: ListName) -> Sequence[BaseModel]:
        """One of the three lists by name."""
        if name == "resources":
            return await self.resources()
        if name == "resource_templates":
            return await self.resource_templates()
        return await self.prompts()

    # Resources

    async def route_uri(self, uri: str) -> tuple[str, str, bool]:
        """Route a URI: `(server, upstream URI, bare)` of a gateway URI, or of an upstream's own (`bare`)."""
        split = split_gateway_uri(uri)
        if split is None:
            server = await self._bare_uri_owner(uri)
            return server, uri, True
        server, original = split
        names = [u.name for u in self.upstreams.upstreams]
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

    async def check_usable(self, kind: ItemKind, server: str, name: str) -> None:
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
        # Outside the request's scope is as good as not there: never DISABLED, no neighbour named.
        if not in_scope(self.upstreams.upstream(server), name, rule_kind):
            raise self._not_listed(kind, server, name)
        if not self._rules.verdict(server, name, rule_kind).enabled:
            if kind == "prompt":
                message = f"Prompt {name!r} of {server!r} is disabled by toolRules and cannot be used."
                raise PromptDisabled(message, server=server, prompt=name)
            message = f"Resource {name!r} of {server!r} is disabled by toolRules and cannot be used."
            raise ResourceDisabled(message, server=server, uri=name)
        listed = self._listed(kind, server, name)
        if not listed:
            upstream = await self.upstreams.live_upstream(server)  # (woken if idle, waited for if connecting)
            if kind == "prompt":
                await self.lists.refresh(self.lists.prompts, upstream)
            else:
                await self.lists.refresh(self.lists.resources, upstream)
                await self.lists.refresh(self.lists.templates, upstream)
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

    def _listed(self, kind: ItemKind, server: str, name: str) -> bool | None:
        """Whether `server`'s lists have `name` (None: it has listed none of them yet)."""
        if kind == "prompt":
            prompts = self.lists.prompts.known.get(server)
            return None if prompts is None else any(p.name == name for p in prompts)
        resources = self.lists.resources.known.get(server)
        templates = self.lists.templates.known.get(server)
        if resources is None and templates is None:
            return None
        if kind == "template":
            return any(t.uri_template == name for t in templates or ())
        if any(r.uri == name for r in resources or ()):
            return True
        upstream = self.upstreams.upstream(server)
        return any(
            template_matches(t.uri_template, name)
            and self._rules.verdict(server, t.uri_template, "resource").enabled
            and in_scope(upstream, t.uri_template, "resource")
            for t in templates or ()
        )

    def _seen(self, server: str, names: Iterable[str], kind: RuleKind) -> list[str]:
        """Those of `server`'s `names` the request's scope sees (the only ones an error may suggest)."""
        upstream = self.upstreams.upstream(server)
        return [name for name in names if in_scope(upstream, name, kind)]

    def _not_listed(self, kind: ItemKind, server: str, name: str) -> ToolscoutError:
        if kind == "prompt":
            close = closest(
                name, self._seen(server, (p.name for p in self.lists.prompts.known.get(server, ())), "prompt")
            )
            return PromptNotFound(
                f"Server {server!r} lists no prompt {name!r}.{did_you_mean(close)} prompts/list shows every prompt.",
                server=server,
                prompt=name,
                suggestions=close or None,
            )
        if kind == "template":
            known = [t.uri_template for t in self.lists.templates.known.get(server, ())]
            what, where = "resource template", "resources/templates/list shows every template."
        else:
            known = [r.uri for r in self.lists.resources.known.get(server, ())]
            what, where = "resource", "resources/list and resources/templates/list show what each server offers."
        close = closest(name, self._seen(server, known, "resource"))
        extra = " and none of its templates matches it" if kind == "resource" else ""
        return ResourceNotFound(
            f"Server {server!r} lists no {what} {name!r}{extra}.{did_you_mean(close)} {where}",
            server=server,
            uri=name,
            suggestions=close or None,
        )

    async def route_template(self, template: str) -> tuple[str, str]:
        """Route a template: `(server, upstream URI template)` of a gateway resource template, or of a server's own."""
        if split_gateway_uri(template) is not None:
            server, original, _ = await self.route_uri(template)
            return server, original
        for attempt in range(2):
            if attempt:
                await self.lists.gather(self.lists.templates)
            known = self._visible(self.lists.templates.known)
            owners = [s for s, items in known.items() if any(t.uri_template == template for t in items)]
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
                await self.lists.gather(self.lists.resources)
                await self.lists.gather(self.lists.templates)
            offering = [
                u.name
                for u in self.upstreams.upstreams
                if u.server_capabilities is not None and u.server_capabilities.resources is not None
            ]
            owners = uri_owners(
                uri,
                {s: [r.uri for r in items] for s, items in self._visible(self.lists.resources.known).items()},
                {s: [t.uri_template for t in items] for s, items in self._visible(self.lists.templates.known).items()},
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
        """Answer `resources/read` of a gateway URI: the upstream's contents, their `uri`s as the gateway's.

        Read by the upstream's own URI, the contents keep the upstream's URIs: the answer is in
        the names it was asked in.
        """
        server, original, bare = await self.route_uri(uri)
        await self.check_usable("resource", server, original)
        upstream = await self.upstreams.live_upstream(server)

        async def read(client: Client) -> types.ReadResourceResult:
            return await client.read_resource(original)

        result = await upstream.request(f"resources/read {original}", read)
        if bare:
            return without_hop_metadata(result)
        contents = [c.model_copy(update={"uri": gateway_uri(server, c.uri)}) for c in result.contents]
        return without_hop_metadata(result.model_copy(update={"contents": contents}))

    def _visible(self, known: Mapping[str, Sequence[ItemT]]) -> dict[str, list[ItemT]]:
        """Each server's `known` items the request's scope sees, of the servers it sees."""
        seen: dict[str, list[ItemT]] = {}
        for upstream in self.upstreams.upstreams:
            items = known.get(upstream.name)
            if items is not None:
                seen[upstream.name] = [i for i in items if in_scope(upstream, _rule_key(i), _rule_kind(i))]
        return seen

    # Prompts

    def _prompt_names(self) -> dict[tuple[str, str], str]:
        # Disabled prompts get names too, so that disabling one never renames another.
        known = self.lists.prompts.known
        return native_names((server, p.name) for server, items in known.items() for p in items)

    def _route_prompt(self, name: str) -> tuple[str, str] | None:
        names = self._prompt_names()
        seen = {(server, p.name) for server, items in self._visible(self.lists.prompts.known).items() for p in items}
        route = next((pair for pair, native in names.items() if native == name and pair in seen), None)
        if route is not None:
            return route
        owners = [server for server, prompt in names if prompt == name and (server, prompt) in seen]
        server = only_owner("prompt", name, owners, (names[(s, name)] for s in sorted(set(owners))))
        return None if server is None else (server, name)

    async def find_prompt(self, name: str) -> tuple[str, str]:
        """Find a prompt: `(server, prompt)` of a gateway prompt name, or of an upstream's own prompt name."""
        route = self._route_prompt(name)
        if route is None:
            offered = [p.name for p in await self.prompts()]  # it may be new since the last listing
            route = self._route_prompt(name)
            if route is None:
                raise self._prompt_not_found(name, offered)
        return route

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        """Answer `prompts/get` of a gateway prompt name: the upstream's messages, resource URIs as the gateway's."""
        server, prompt = await self.find_prompt(name)
        await self.check_usable("prompt", server, prompt)
        upstream = await self.upstreams.live_upstream(server)

        async def get(client: Client) -> types.GetPromptResult:
            return await client.get_prompt(prompt, arguments)

        result = await upstream.request(f"prompts/get {prompt}", get)
        messages = [m.model_copy(update={"content": gateway_block(server, m.content)}) for m in result.messages]
        return without_hop_metadata(result.model_copy(update={"messages": messages}))

    def _prompt_not_found(self, name: str, offered: Iterable[str]) -> PromptNotFound:
        close = closest(name, list(offered))
        return PromptNotFound(
            f"No prompt named {name!r}.{did_you_mean(close)} "
            "prompts/list shows every server's prompts, named server__prompt.",
            prompt=name,
            suggestions=close or None,
        )


def _rule_key(item: types.Resource | types.ResourceTemplate | types.Prompt) -> str:
    if isinstance(item, types.Resource):
        return item.uri
    return item.uri_template if isinstance(item, types.ResourceTemplate) else item.name


def _rule_kind(item: types.Resource | types.ResourceTemplate | types.Prompt) -> RuleKind:
    return "prompt" if isinstance(item, types.Prompt) else "resource"


NO_COMPLETION = types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


async def complete(mirror: Mirror, params: types.CompleteRequestParams) -> types.CompleteResult:
    """The upstream's completions for the prompt or resource template `params.ref` names."""
    ref = params.ref
    upstream_ref: types.PromptReference | types.ResourceTemplateReference
    if isinstance(ref, types.PromptReference):
        server, prompt = await mirror.find_prompt(ref.name)
        await mirror.check_usable("prompt", server, prompt)
        upstream_ref = ref.model_copy(update={"name": prompt})
    else:
        server, template = await mirror.route_template(ref.uri)
        await mirror.check_usable("template", server, template)
        upstream_ref = ref.model_copy(update={"uri": template})
    upstream = await mirror.upstreams.live_upstream(server)
    capabilities = upstream.server_capabilities
    if capabilities is None or capabilities.completions is None:
        return NO_COMPLETION
    context = params.context.arguments if params.context is not None else None

    async def ask(client: Client) -> types.CompleteResult:
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await client.complete(upstream_ref, argument, context)

    item = upstream_ref.name if isinstance(upstream_ref, types.PromptReference) else upstream_ref.uri
    return without_hop_metadata(await upstream.request(f"completion/complete {item} {params.argument.name}", ask))


SCHEME = "toolscout"
PREFIX = f"{SCHEME}://"


def gateway_uri(server: str, uri: str) -> str:
    """The gateway's URI (or URI template) for `server`'s `uri`: the prefix, then `uri` verbatim."""
    return f"{PREFIX}{quote(server, safe='')}/{uri}"


def split_gateway_uri(uri: str) -> tuple[str, str] | None:
    """Split a gateway URI into `(server, upstream URI)`; None when `uri` is not one."""
    if uri[: len(PREFIX)].lower() != PREFIX:  # a scheme is case-insensitive
        return None
    server, slash, original = uri[len(PREFIX) :].partition("/")
    if not slash or not server:
        return None
    return unquote(server), original


def gateway_block(server: str, block: types.ContentBlock) -> types.ContentBlock:
    """A content block of `server`'s with the resource it embeds or links to named as the gateway names it."""
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"uri": gateway_uri(server, block.resource.uri)})
        return block.model_copy(update={"resource": resource})
    if isinstance(block, types.ResourceLink):
        return block.model_copy(update={"uri": gateway_uri(server, block.uri)})
    return block


_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_PATTERNS: dict[str, str] = {
    "": r"[^/?#]*",  # simple expansion percent-encodes reserved characters, so no `/`
    "+": r".*",  # reserved expansion keeps them
    "#": r"(?:#.*)?",
    ".": r"(?:\.[^/?#]*)*",
    "/": r"(?:/[^?#]*)*",
    ";": r"(?:;[^/?#]*)*",
    "?": r"(?:\?[^#]*)?",
    "&": r"(?:&[^#]*)?",
}


@lru_cache(maxsize=1024)
def _template_pattern(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    position = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[position : match.start()]))
        body = match.group(1)
        operator = body[0] if body and body[0] in "+#./;?&" else ""
        parts.append(_PATTERNS[operator])
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts), re.DOTALL)


def template_matches(template: str, uri: str) -> bool:
    """Whether some expansion of the RFC 6570 `template` could be `uri` (a good guess, not a parser)."""
    return _template_pattern(template).fullmatch(uri) is not None


def uri_owners(
    uri: str,
    resources: Mapping[str, Iterable[str]],
    templates: Mapping[str, Iterable[str]],
    offering: Sequence[str],
) -> list[str]:
    """The servers that could own a bare resource `uri`, best evidence first.

    `resources` and `templates` are each server's known resource URIs and URI templates;
    `offering` the servers that offer resources at all.
    """
    listing = [server for server, uris in resources.items() if uri in uris]
    if listing:
        return listing
    matching = [server for server, found in templates.items() if any(template_matches(t, uri) for t in found)]
    if matching:
        return matching
    return list(offering) if len(offering) == 1 else []
