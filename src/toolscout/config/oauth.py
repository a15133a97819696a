"""The `oauth` key of a remote server entry: how the gateway signs in to a server protected by OAuth."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class OAuthSettings(_Model):
    """How the gateway signs in to a remote server protected by OAuth (`toolscout auth login SERVER`).

    A server that asks for OAuth is signed in to without any of these: the client registers itself
    dynamically where the server allows it. They are for a server that does not: the client its
    provider issued (`clientId`, `clientSecret`) and the loopback port its redirect URI names.
    """

    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = None
    scopes: list[str] = Field(default_factory=list[str])
    """The scopes to ask for; unset: what the server's challenge or metadata asks for."""
    callback_port: int | None = Field(default=None, ge=1, le=65535)
    """The port of the redirect URI (`http://127.0.0.1:PORT/callback`); unset: a free one, kept with the
    registration."""

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        # OAuth writes scopes as one space-separated string; a list is accepted as well.
        return value.split() if isinstance(value, str) else value
