"""`dynamic` mode's loaded tools shared by the replicas of one gateway (the Redis registry).

Behind a balancer without stickiness, replicas serve stateless HTTP: a client's `load_tools` may land
on one replica and its next `tools/list` on another. So for a client keyed by its principal and
name (no `Mcp-Session-Id`: `ClientSessions.http_key`), what it loaded is read from the registry
before each `tools/list` and `tools/call`, and written back when a call changed it. Connections
(stdio, in process) and HTTP sessions keep theirs in memory, as before. The registry unreachable:
the replica's own memory answers meanwhile (said once until it is back).
"""

from __future__ import annotations

import logging

from toolscout.errors import RegistryUnavailable
from toolscout.registry.base import SharedClientState
from toolscout.serve.sessions import ClientSessions, ClientState, Context

logger = logging.getLogger(__name__)


class SharedLoads:
    """Pulls and pushes the loaded tools of sessionless HTTP clients through `store`."""

    def __init__(self, store: SharedClientState) -> None:
        self.store = store
        self._down = False

    @staticmethod
    def client_of(ctx: Context) -> str | None:
        """The shared key of the client behind `ctx`, or None when its state is not shared."""
        if ctx.request is None:
            return None
        key = ClientSessions.http_key(ctx)
        return None if key[0] == "session" else repr(key)

    async def pull(self, ctx: Context, state: ClientState) -> tuple[tuple[str, str], ...]:
        """Make `state.loaded` what the registry has for this client; what it is now (to `push` after)."""
        client = self.client_of(ctx)
        if client is not None:
            try:
                loaded = await self.store.loaded_tools(client)
                self._up()
            except RegistryUnavailable as exc:
                self._warn(exc)
            else:
                if loaded is not None:
                    state.loaded = dict.fromkeys(loaded)
        return tuple(state.loaded)

    async def push(self, ctx: Context, state: ClientState, before: tuple[tuple[str, str], ...]) -> None:
        """Write `state.loaded` back if the request changed it."""
        client = self.client_of(ctx)
        if client is None or tuple(state.loaded) == before:
            return
        try:
            await self.store.set_loaded_tools(client, list(state.loaded))
            self._up()
        except RegistryUnavailable as exc:
            self._warn(exc)

    def _warn(self, exc: RegistryUnavailable) -> None:
        if not self._down:
            self._down = True
            logger.warning("loaded tools kept on this replica alone meanwhile: %s", exc.message)

    def _up(self) -> None:
        if self._down:
            self._down = False
            logger.info("loaded tools shared through the registry again")
