"""Telling clients that their tool, resource (template) or prompt list changed, once per change.

The catalog (`gateway.catalog.changes`) and the mirror of upstream resources and prompts
(`gateway.mirror.changes`) say that something changed; the watchers here work out which clients
would now get a different list than the one they got, and tell only those (sessions.py sends the
notice in the client's era). The server's lifespan runs them for as long as it serves
(`watching_changes`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Hashable
from contextlib import asynccontextmanager

import anyio
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from toolscout.config.scopes import Scope, scoped
from toolscout.gateway.core import Gateway
from toolscout.gateway.visibility import scope_key
from toolscout.modes.base import Surface
from toolscout.modes.client import digest_off_loop
from toolscout.resources.lists import LIST_NAMES, ListName
from toolscout.serve.sessions import ClientSessions, ClientState, ConnectionScope, ListChanged

logger = logging.getLogger(__name__)

CHANGE_QUIET_SECONDS = 0.2
"""How long catalog changes are gathered before clients are told about them."""

_NOTICES: dict[str, ListChanged] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "resource_templates": ResourcesListChanged(),  # templates have no notice of their own
    "prompts": PromptsListChanged(),
}

News = dict[int, tuple[ClientState, set[ListChanged]]]
"""The notices due to each client (by the id of its state)."""


def view_key(scope: Scope) -> Hashable:
    """What two clients whose lists are the same share: what their scopes see, and pin."""
    return (scope_key(scope), scope.pinned_tools)


@asynccontextmanager
async def watching_changes(
    gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope, *, tools_change: bool
) -> AsyncGenerator[None]:
    """Tell the clients of `scope` and the HTTP clients of `clients` about list changes while the block runs.

    `tools_change`: whether the surface's tool list can change at all (the five meta-tools never do).
    """
    async with anyio.create_task_group() as tg:
        if tools_change:
            tg.start_soon(watch_catalog, gateway, surface, clients, scope)
        tg.start_soon(watch_mirror, gateway, clients, scope)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def tell_news(clients: ClientSessions, news: News) -> None:
    """Send each client its notices, once each."""
    for state, notices in news.values():
        for notice in notices:
            try:
                await clients.tell(state, notice)
            except Exception as exc:  # a client gone away must not stop the others being told
                logger.debug("could not tell a client %s: %s", notice, exc)


async def watch_catalog(gateway: Gateway, surface: Surface, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose tool list the catalog changed, once per change, until cancelled.

    Only clients that have listed tools are told, and only when what they would now get differs
    from what they got (or were last told about): a server reconnecting with the same tools
    tells no one. Changes that come together (start-up, several servers at once) are told once.
    Each client's list is made under its principal's scope: a change it cannot see tells it nothing.
    """
    async for _ in gateway.catalog.changes.bursts(CHANGE_QUIET_SECONDS):
        news: News = {}
        shared: dict[Hashable, str] = {}  # a list that is the same for every client of a view is listed once
        for state in [scope.client, *clients.http_states()]:
            if "tools" not in state.listed:
                continue
            view = view_key(state.scope)
            current = shared.get(view)
            if current is None:
                with scoped(state.scope):
                    current = await digest_off_loop(await surface.tools(state))
                if not surface.per_client:
                    shared[view] = current
            if state.news("tools", current):
                news[id(state)] = (state, {_NOTICES["tools"]})
        await tell_news(clients, news)


async def watch_mirror(gateway: Gateway, clients: ClientSessions, scope: ConnectionScope) -> None:
    """Tell each client whose resource, template or prompt list changed, once per change, until cancelled.

    As `watch_catalog` for tools. Templates and resources share one notice
    (`notifications/resources/list_changed`), sent once when both changed.
    """
    mirror = gateway.mirror
    async for _ in mirror.changes.bursts(CHANGE_QUIET_SECONDS):
        states = [scope.client, *clients.http_states()]
        news: News = {}
        for name in LIST_NAMES:
            listeners = [state for state in states if name in state.listed]
            digests: dict[Hashable, str | None] = {}  # per scope: each client compares what it sees
            for state in listeners:
                view = scope_key(state.scope)
                if view not in digests:
                    digests[view] = await _mirror_digest(gateway, name, state.scope)
                current = digests[view]
                if current is not None and state.news(name, current):
                    news.setdefault(id(state), (state, set()))[1].add(_NOTICES[name])
        await tell_news(clients, news)


async def _mirror_digest(gateway: Gateway, name: ListName, scope: Scope) -> str | None:
    """The digest of the mirror's list `name` as `scope` sees it (None: it could not be listed)."""
    try:
        with scoped(scope):
            return await digest_off_loop(await gateway.mirror.listed(name))
    except Exception:  # never a reason to stop telling clients about later changes
        logger.exception("could not list %s to compare", name)
        return None
