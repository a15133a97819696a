"""The `auth` section of the configuration: admin keys and client keys with their scopes.

An admin key may do everything, the HTTP API (`/api/v1`) included; a client key may use `/mcp`
within its scope (`toolscout.config.scopes.Scope`: a namespace, servers, tool rules, pinned tools).
Values come from `${ENV}` references; once loaded they are kept as hashes only
(`toolscout.serve.auth`) and remembered for masking (`toolscout.config.secrets.config_secrets`).
A key's value is never echoed in an error, even a malformed one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from toolscout.config.patterns import compile_pattern

DEFAULT_REGISTRY_OUTAGE_GRACE = 300.0
"""Seconds an issued token read valid keeps working while the registry cannot be read: longer than a
Redis restart or failover takes, short enough that a gateway cut off from Redis while a token is
revoked elsewhere honours it no longer than that."""
MIN_KEY_CHARS = 16
"""The shortest accepted admin or client key: anything shorter could be guessed (`new_secret` makes 46)."""


def _long_enough(key: str, what: str) -> str:
    if len(key) < MIN_KEY_CHARS:
        # Not echoed (as pydantic's own length check would): it is a secret, even a bad one.
        raise ValueError(f"{what} must have at least {MIN_KEY_CHARS} characters")
    return key


class ClientKey(BaseModel):
    """One entry of `auth.keys`: a client key and the scope it grants."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    key: str = Field(repr=False)
    """The secret, normally `${VAR}`: kept only as a hash once loaded, never printed."""
    label: str = Field(min_length=1, max_length=100)
    """Names the key in the audit log and the log (never the key itself)."""
    namespace: str
    """Spec 002's run id: the servers registered in it, and the global ones, are what it may see."""
    servers: list[str] | None = None
    """Allowed servers (exact, a group by prefix, or `*`); unset: every server its namespace sees."""
    tools: list[str | dict[str, Any]] = Field(default_factory=list[str | dict[str, Any]])
    """Tool rules narrowing further: patterns (`!*delete*`) or `toolRules` entries."""
    pinned_tools: list[str] = Field(default_factory=list[str])
    """`server/tool` names shown natively in this key's tools/list beside the meta-tools."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """HTTP requests a minute (a burst of as many), answered 429 with Retry-After beyond; unset: no limit."""

    @field_validator("key")
    @classmethod
    def _key_long_enough(cls, key: str) -> str:
        return _long_enough(key, "a client key")

    @field_validator("tools")
    @classmethod
    def _patterns_compile(cls, tools: list[str | dict[str, Any]]) -> list[str | dict[str, Any]]:
        # toolRules entries are checked with the namespace, when the loader builds the key's scope.
        for pattern in tools:
            if isinstance(pattern, str):
                compile_pattern(pattern)
        return tools

    @field_validator("pinned_tools")
    @classmethod
    def _pinned_are_qualified(cls, pinned: list[str]) -> list[str]:
        for name in pinned:
            server, _, tool = name.partition("/")
            if not server or not tool:
                raise ValueError(f"pinned tool {name!r} must be written server/tool")
        return pinned


class AuthConfig(BaseModel):
    """Who may use `serve --transport http`. See docs/CONFIGURATION.md, "auth"."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    admin_keys: list[str] = Field(default_factory=list[str], repr=False)
    keys: list[ClientKey] = Field(default_factory=list[ClientKey], repr=False)
    registry_outage_grace: float = Field(default=DEFAULT_REGISTRY_OUTAGE_GRACE, ge=0, allow_inf_nan=False)
    """Seconds since its record was last read that an issued token keeps working while the registry
    (Redis) cannot be read; 0: refused (503) as soon as its record is due to be read again."""

    @field_validator("admin_keys")
    @classmethod
    def _admin_keys_long_enough(cls, keys: list[str]) -> list[str]:
        return [_long_enough(key, "an admin key") for key in keys]

    @model_validator(mode="after")
    def _keys_are_distinct(self) -> AuthConfig:
        every = [*self.admin_keys, *(k.key for k in self.keys)]
        if len(set(every)) != len(every):
            raise ValueError("the same key is configured twice (each admin and client key must be its own)")
        return self

    @property
    def configured(self) -> bool:
        """Whether any key is configured (then every HTTP request needs a credential)."""
        return bool(self.admin_keys or self.keys)
