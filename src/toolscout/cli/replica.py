"""What `serve` does when replicas share one registry (Redis): its replica id and where the others
reach it (`registry.advertiseUrl`, else its own address), said while it serves (serve/rounds.py),
and tokens revoked through another replica dropped from its cache."""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import typer

from toolscout.config import GatewayConfig

if TYPE_CHECKING:
    from toolscout.registry.base import Registry
    from toolscout.serve.auth import BearerPrincipals


def replica_of(config: GatewayConfig, registry: Registry, host: str, port: int) -> tuple[str | None, str | None]:
    """This replica's id and where the others reach it, when replicas share a registry (Redis) that can
    say so; (None, None) otherwise. A wildcard bind without `registry.advertiseUrl`: an id (retries of
    its input-required rounds cannot be forwarded to it, and are refused elsewhere), said once."""
    from toolscout.serve.rounds import ReplicaDirectory

    if config.registry.backend != "redis" or not isinstance(registry, ReplicaDirectory):
        return None, None
    replica = secrets.token_hex(4)
    if config.registry.advertise_url:
        return replica, config.registry.advertise_url
    if host in ("0.0.0.0", "[::]"):
        typer.echo(
            "toolscout: WARNING: set registry.advertiseUrl to where the other replicas reach this one: "
            "without it, a 2026-07-28 retry landing elsewhere cannot be passed here",
            err=True,
        )
        return replica, None
    return replica, f"http://{host}:{port}"


@asynccontextmanager
async def announced(registry: Registry, replica: str | None, where: str | None) -> AsyncGenerator[None]:
    from toolscout.serve.rounds import ReplicaDirectory, announcing

    if replica is None or where is None or not isinstance(registry, ReplicaDirectory):
        yield
        return
    async with announcing(registry, replica, where):
        yield


def forget_revoked(principals: BearerPrincipals) -> Callable[[str], None]:
    """A token revoked through another replica (the registry's change feed): refused here at once too."""

    def changed(what: str) -> None:
        if what.startswith("tokens:"):
            principals.token_revoked(what.removeprefix("tokens:"))

    return changed
