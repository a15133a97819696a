"""The `oauth` key of a remote server entry: how the gateway signs in to a server protected by OAuth."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The hosts a redirect URI may name: the sign-in's listener is on this machine, for its browser only."""


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
    redirect_uri: str | None = None
    """The whole redirect URI, for a client registered with another host or path than toolscout's own
    (Claude Code's `http://localhost:PORT/callback`, Gemini CLI's `http://localhost:7777/oauth/callback`):
    `http://` on 127.0.0.1, localhost or [::1], with a port."""

    @field_validator("redirect_uri")
    @classmethod
    def _loopback_only(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS or port is None:
            raise ValueError(
                f"{value!r} is not a loopback redirect URI: write http://127.0.0.1:PORT/PATH (or localhost, or "
                "[::1]) with a port, as registered at the provider. A browser on another machine reaches it "
                "through a port forward (ssh -L PORT:127.0.0.1:PORT)."
            )
        if parts.query or parts.fragment:
            raise ValueError(f"{value!r}: a redirect URI carries no query or fragment (the sign-in adds its own).")
        return value

    @model_validator(mode="after")
    def _one_port(self) -> OAuthSettings:
        ports = (self.callback_port, urlsplit(self.redirect_uri).port if self.redirect_uri else None)
        if None not in ports and ports[0] != ports[1]:
            raise ValueError(
                f"callbackPort {self.callback_port} and the port of redirectUri {self.redirect_uri!r} differ: "
                "keep redirectUri alone, which names the port"
            )
        return self

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        # OAuth writes scopes as one space-separated string; a list is accepted as well.
        return value.split() if isinstance(value, str) else value
