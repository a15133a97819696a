"""The upstream of one registration (a server's endpoint, or a callback tool's one-tool server), and
how long its connection waits and retries: what `gateway/registrations.py` applies to the gateway.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Hashable

from toolscout.config.models import HttpServerConfig, SseServerConfig
from toolscout.config.scopes import qualified_name
from toolscout.masking import remember_secrets
from toolscout.registry.base import ServerRegistration, ToolRegistration
from toolscout.upstream import UpstreamSpec
from toolscout.upstream.transport import CallbackToolUpstream, callback_server

REGISTERED_BACKOFF_MAX = 10.0
"""The longest wait between two attempts to reach a registered endpoint: a run's endpoint that starts
late is found within seconds, and a dead one costs an attempt every 10 s until it expires."""
REGISTERED_CONNECT_TIMEOUT = 10.0
"""How long one attempt to reach a registered endpoint may take: a hanging one is tried again rather
than waited for (an agent's first search waits for a new server's first attempt)."""
PING_SECONDS = 5.0
"""How often a registered server is pinged: one that died is seen to be down (and retried) within seconds."""
CALLBACK_SECONDS = 55.0
"""How long a callback tool's URL may take to answer; the call's own timeout is a little longer, so
that a slow callback is told as such."""

Registration = ServerRegistration | ToolRegistration


def _key(registration: Registration) -> Hashable:
    """What decides how a registration is reached: equal keys keep the same upstream running."""
    if isinstance(registration, ServerRegistration):
        headers = tuple(sorted(registration.headers.items()))
        return ("server", registration.url, registration.transport, headers, registration.description)
    schema = json.dumps(dict(registration.input_schema), sort_keys=True)
    return ("tool", registration.description, schema, registration.callback_url)


def registered_spec(registration: Registration, *, shared: bool = False) -> UpstreamSpec:
    """The upstream of one registration (a new transport each time: build once per change, see `_Specs`).

    `shared`: the catalog store is shared by replicas (Redis), so that a replica that starts later
    answers at once from what another one listed of this very registration, marked stale, while it
    connects (the registration's expiry bounds how long)."""
    shown = qualified_name(registration.namespace, registration.name)
    if isinstance(registration, ServerRegistration):
        # A header's value (a bearer token, say) is masked wherever it could show: logs, errors, audit.
        remember_secrets(registration.headers.values())
        config_type = SseServerConfig if registration.transport == "sse" else HttpServerConfig
        config = config_type(url=registration.url, headers=dict(registration.headers))
        spec = UpstreamSpec.from_config(shown, config)
        description = registration.description
    else:
        server = callback_server(
            registration.name,
            registration.description,
            registration.input_schema,
            registration.callback_url,
            timeout=CALLBACK_SECONDS,
        )
        spec = UpstreamSpec(shown, CallbackToolUpstream(server, registration.callback_url))
        description = registration.description
    return dataclasses.replace(
        spec,
        namespace=registration.namespace,
        description=description,
        call_timeout=max(spec.call_timeout, CALLBACK_SECONDS + 5),
        reconnect=True,  # whatever happens, until the registration expires
        connect_timeout=REGISTERED_CONNECT_TIMEOUT,
        backoff_max=REGISTERED_BACKOFF_MAX,
        relist_empty=isinstance(registration, ServerRegistration),
        ping_seconds=PING_SECONDS if isinstance(registration, ServerRegistration) else None,
        # This machine's own catalog never answers for a registration: an endpoint of a run that is gone
        # must not look as if its tools were there; a shared one does, for as long as it is registered.
        cache_key=_cache_key(registration) if shared else None,
    )


def _cache_key(registration: Registration) -> str:
    """The key of a registration's catalog: changes with how it is reached, as a server's config hash does."""
    return "registered:" + hashlib.sha256(repr(_key(registration)).encode()).hexdigest()[:32]


class Specs:
    """One spec per registration for as long as it is unchanged: the gateway restarts an upstream
    whose spec differs (its transport compared by identity), so an unchanged one must get the same."""

    def __init__(self, *, shared: bool = False) -> None:
        self._made: dict[str, tuple[Hashable, UpstreamSpec]] = {}
        self._shared = shared

    def of(self, registration: Registration) -> UpstreamSpec:
        shown = qualified_name(registration.namespace, registration.name)
        key = _key(registration)
        made = self._made.get(shown)
        if made is None or made[0] != key:
            made = self._made[shown] = (key, registered_spec(registration, shared=self._shared))
        return made[1]

    def keep_only(self, names: set[str]) -> None:
        for name in set(self._made) - names:
            del self._made[name]

    def drop(self, name: str) -> None:
        self._made.pop(name, None)
