"""The registry the configuration names: the embedded SQLite file, or Redis (`registry.backend`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from toolscout.config.models import GatewayConfig
from toolscout.registry.base import Registry


def describe(config: GatewayConfig) -> str:
    """Where the registry is, for messages (never a password)."""
    if config.registry.backend == "redis" and config.registry.url:
        from toolscout.registry.redis import where

        return f"Redis at {where(config.registry.url)}"
    from toolscout.registry.sqlite import registry_path

    return str(registry_path(config))


@asynccontextmanager
async def open_registry(config: GatewayConfig) -> AsyncGenerator[Registry]:
    """The configured registry for the block (Redis: its connection pool, closed after it)."""
    if config.registry.backend == "redis" and config.registry.url:
        from toolscout.registry.redis import RedisRegistry

        async with RedisRegistry(config.registry.url, prefix=config.registry.key_prefix) as registry:
            yield registry
        return
    from toolscout.registry.sqlite import SqliteRegistry, registry_path

    yield SqliteRegistry(registry_path(config))
