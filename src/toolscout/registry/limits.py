"""How many registrations a registry takes: at most `registry.maxRegistrationsPerNamespace` in one
namespace and `registry.maxRegistrations` in all, checked before a new one is written (the HTTP API and
the command line alike). Each registration is an upstream the gateway keeps running, so without a
limit anyone holding the admin key could make it hold thousands of connections.

Re-registering an existing name replaces it and is never refused; only live registrations count
against a limit (expired ones not swept yet take no room), and a refusal is one read, never a write.
"""

from __future__ import annotations

import time

from toolscout.registry.base import Registry, ServerRegistration, ToolRegistration
from toolscout.registry.requests import RegistrationRefused


class TooManyRegistrations(RegistrationRefused):
    """A new registration over a limit (the API answers 429); the message names the limit and its key."""


async def check_room(
    registry: Registry,
    registration: ServerRegistration | ToolRegistration,
    *,
    replaces: bool,
    per_namespace: int,
    total: int,
) -> None:
    """Refuse (`TooManyRegistrations`) a new `registration` that would put its namespace over
    `per_namespace` or the registry over `total`; `replaces`: one of that kind and name is there already."""
    if replaces:
        return
    inside, every = await registry.counts(registration.namespace, time.time())
    if inside < per_namespace and every < total:
        return
    where = f"namespace {registration.namespace!r}" if registration.namespace is not None else "the global namespace"
    if inside >= per_namespace:
        raise TooManyRegistrations(
            f"{where} already has {inside} registrations, its limit (registry.maxRegistrationsPerNamespace: "
            f"{per_namespace}); remove one, let one expire, or raise the limit in the gateway's config"
        )
    if every >= total:
        raise TooManyRegistrations(
            f"the registry already has {every} registrations, its limit (registry.maxRegistrations: {total}); "
            "remove some, let them expire, or raise the limit in the gateway's config"
        )
