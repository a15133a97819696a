"""The `registry` section: where issued tokens and run-time registrations are kept, and how many
registrations it takes (`toolscout.registry`; the limits: registry/limits.py)."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from toolscout.config.locations import absolute_path

DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE = 50
"""A run (a namespace) registers its few components; 50 is far beyond that, and ten runs fit the total."""
DEFAULT_MAX_REGISTRATIONS = 500
"""Each registration is an upstream kept running (a registered server holds a connection, pinged every
5 s): 500 leave room for clients and stdio children under the common limit of 1,024 open files."""


class RegistryConfig(BaseModel):
    """Where issued tokens and run-time registrations are kept (`toolscout.registry`): the embedded
    SQLite file (default), or Redis, shared by the replicas of one gateway."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    backend: Literal["sqlite", "redis"] = "sqlite"
    path: str | None = None
    """The SQLite file; unset: `registry.sqlite3` beside the persistent catalog's file. `~` is expanded."""
    url: str | None = None
    """Redis: `redis://[:password@]host:6379/0` or `rediss://` (TLS); a password from `${ENV}`."""
    key_prefix: str = Field(default="toolscout:", min_length=1)
    """Redis: the prefix of every key, so that several gateways can share one Redis."""
    advertise_url: str | None = None
    """Redis: where the other replicas reach this one (`http://10.0.0.5:8766`), for the 2026-07-28
    retries they forward here; unset: the address `serve` listens on (not a wildcard one)."""
    max_registrations_per_namespace: int = Field(default=DEFAULT_MAX_REGISTRATIONS_PER_NAMESPACE, ge=1)
    """Servers and callback tools registered into one namespace (the global one included); a new one
    beyond it is refused (HTTP 429) until one is removed or expires."""
    max_registrations: int = Field(default=DEFAULT_MAX_REGISTRATIONS, ge=1)
    """Servers and callback tools registered in all namespaces together; beyond it, likewise."""

    _path_is_absolute = field_validator("path")(absolute_path)

    @field_validator("url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is not None and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return url

    @model_validator(mode="after")
    def _redis_needs_url(self) -> RegistryConfig:
        if self.backend == "redis" and not self.url:
            raise ValueError('backend "redis" needs url, e.g. "redis://localhost:6379/0"')
        return self
