"""What `toolscout serve --transport http` takes from the configuration: the `http` and `auth` sections,
and the host names, addresses and origins they name.

The `http` section says which requests the server answers, how many sessions it keeps, and how many
connections it holds open and for how long before a request arrives. `http.allowedHosts` and
`http.allowedOrigins` are checked here when the configuration is validated, and the HTTP server
(`toolscout.serve.http_guards`) compares the `Host` and `Origin` headers of every request with the
same parsing, which knows nothing of requests or of the config models.

The `auth` section holds admin keys and client keys with their scopes. An admin key may do
everything, the HTTP API (`/api/v1`) included; a client key may use `/mcp` within its scope
(`toolscout.config.scopes.Scope`: a namespace, servers, tool rules, pinned tools). Values come from
`${ENV}` references; once loaded they are kept as hashes only (`toolscout.serve.auth`) and remembered
for masking (`toolscout.config.secrets.config_secrets`). A key's value is never echoed in an error,
even a malformed one.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from toolscout.config.rules import compile_pattern


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


ANY = "*"
"""An `allowedHosts` or `allowedOrigins` entry that allows every host or every origin."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address `name` spells (an IPv4-mapped IPv6 address as IPv4), or None if it is a host name."""
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])  # a scope id (fe80::1%eth0) is not part of the address
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
    return address


def canonical_name(name: str) -> str:
    """A host name or IP literal as compared: lower case, no trailing dot, IPs in canonical form."""
    name = name.strip().lower().removesuffix(".")
    address = parse_ip(name)
    return str(address) if address is not None else name


def split_host(value: str) -> tuple[str, int | None] | None:
    """Return `name`, `name:port`, `[v6]` or `[v6]:port` as (name, port); None if it is none of them."""
    value = value.strip()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    elif ":" in value:  # a bare IPv6 address (allowed in the config, never valid in a Host header)
        name, port_text = value, None
    else:
        name, port_text = value, None
    if not name or any(c in name for c in "/@?#\\ "):
        return None
    if port_text is None:
        return canonical_name(name), None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return canonical_name(name), int(port_text)


def _origin_entry(origin: str) -> str:
    return origin.strip().lower().rstrip("/")


def split_origin(origin: str, *, any_port: bool = False) -> tuple[str, str, int | None] | None:
    """Return `scheme://host[:port]` as (scheme, name, port), the scheme's default port when none is given;
    with `any_port`, `:*` gives port None. None if it is not an origin."""
    parts = urlsplit(_origin_entry(origin))
    netloc = parts.netloc
    wildcard = any_port and netloc.endswith(":*")
    if wildcard:
        netloc = netloc[:-2]
    if not parts.scheme or not netloc or parts.path or parts.query or parts.fragment or "@" in netloc:
        return None
    split = split_host(netloc)
    if split is None:
        return None
    name, port = split
    if wildcard:
        return parts.scheme, name, None
    return parts.scheme, name, port if port is not None else _DEFAULT_PORTS.get(parts.scheme)


def check_host_entry(entry: str) -> str:
    """A configured `allowedHosts` entry, validated: `*`, or a name or address with an optional port."""
    if entry.strip() != ANY and split_host(entry) is None:
        raise ValueError(
            f"{entry!r} is not a host: give a name or address, with an optional port (example.com, "
            "example.com:8765, 192.168.1.5, [fe80::1]:8765), or '*' to turn the Host check off"
        )
    return entry


def check_origin_entry(entry: str) -> str:
    """A configured `allowedOrigins` entry, validated: `*`, or `scheme://host[:port]` (`:*` for any port)."""
    if entry.strip() == ANY:
        return entry
    if split_origin(entry, any_port=True) is None:
        raise ValueError(
            f"{entry!r} is not an origin: give scheme://host[:port] as a browser sends it (http://localhost:6274, "
            "https://app.example.com, http://localhost:* for any port), or '*' to allow every origin"
        )
    return entry


DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds from a connection's start (or the end of its last response) until its request's headers
must be complete. A client program sends its headers in one write, in milliseconds even across the
world; ten seconds leaves room for a congested link and still frees a stalled connection quickly
(nginx allows 60, Apache's mod_reqtimeout 20 to 40 unless bytes keep arriving)."""
DEFAULT_MAX_CONNECTIONS = 4096
"""Room for a busy shared gateway (ten agents making a hundred calls at once each hold a thousand
connections: an MCP client opens one per request in flight, plus its SSE stream), while still
bounded: `serve` raises the process's soft limit on open files toward its hard limit to fit it, as
Go's runtime does, and where the hard limit is lower (a desktop's 1,024) serves fewer, leaving the
rest for what the gateway itself holds (three pipes per stdio upstream, connections to HTTP
upstreams and Redis, the registry, the catalog store, logs), with a warning saying how to allow more."""


DEFAULT_MAX_SESSIONS = 1000
"""Every open session holds memory of its own, so far fewer are kept than the SDK's 10,000."""
DEFAULT_MAX_SESSIONS_PER_CLIENT = 32
DEFAULT_SESSION_OPENING_RATE = 10.0
"""New sessions a second per client address (after a burst of maxSessionsPerClient): a client
needs one session a conversation; a handshake costs the event loop milliseconds, a refusal far less."""
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""10 minutes (the SDK's is 30): a client's open GET stream keeps its session, and one that lost it
opens another; a shorter time would mostly close the sessions of agents waiting on their user."""


class HttpServeConfig(_Model):
    """The `http` section of `toolscout serve --transport http`: which requests it answers, how many
    sessions it keeps, and how many connections it holds open and for how long before a request arrives."""

    allowed_hosts: list[str] = Field(default_factory=list[str])
    """`Host` names answered besides the defaults (the bind address, the address a request arrives at,
    the loopback names on a loopback or wildcard bind, the host name on a wildcard bind): `name`
    (any port), `name:port`, or `*` to turn the check off (behind a proxy that checks it)."""
    allowed_origins: list[str] = Field(default_factory=list[str])
    """Browser `Origin`s allowed besides pages on an allowed host: `scheme://host[:port]`, `:*` for any
    port, or `*` for any origin."""
    max_sessions: int = Field(default=DEFAULT_MAX_SESSIONS, ge=1)
    """Stateful sessions open at once; at the limit the least recently used idle one is closed."""
    max_sessions_per_client: int = Field(default=DEFAULT_MAX_SESSIONS_PER_CLIENT, ge=1)
    """Stateful sessions one client address may have open; its own least recently used idle one is
    closed for a new one. Behind a reverse proxy every client has the proxy's address: raise it."""
    session_opening_rate: float = Field(default=DEFAULT_SESSION_OPENING_RATE, gt=0)
    """New sessions a second one client address may open, after a burst of maxSessionsPerClient."""
    session_idle_timeout: float = Field(default=DEFAULT_SESSION_IDLE_TIMEOUT, gt=0)
    """Seconds a session may go without a request in flight before it is closed (an open GET stream
    counts as one); its client then gets 404 and opens a new session."""
    header_timeout: float = Field(default=DEFAULT_HEADER_TIMEOUT, gt=0)
    """Seconds a connection may take to send its request's headers, from its start and again after
    each response (a keep-alive connection); then it gets 408 and is closed. A request being answered
    (an SSE stream included) is never timed out by it."""
    max_connections: int = Field(default=DEFAULT_MAX_CONNECTIONS, ge=2)
    """HTTP connections held open at once. At the limit, the connection that has waited longest for its
    request's headers is closed for a new one; only when every connection has a request being answered
    is the new one refused (503). Kept below the process's open-file limit (see serve/http_guards.py)."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_parse(cls, hosts: list[str]) -> list[str]:
        return [check_host_entry(host) for host in hosts]

    @field_validator("allowed_origins")
    @classmethod
    def _origins_parse(cls, origins: list[str]) -> list[str]:
        return [check_origin_entry(origin) for origin in origins]


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


class ClientKey(_Model):
    """One entry of `auth.keys`: a client key and the scope it grants."""

    key: str = Field(repr=False)
    """The secret, normally `${VAR}`: kept only as a hash once loaded, never printed."""
    label: str = Field(min_length=1, max_length=100)
    """Names the key in the audit log and the log (never the key itself)."""
    namespace: str
    """The key's namespace (a run's id): the servers registered in it, and the global ones, are what it may see."""
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


class AuthConfig(_Model):
    """Who may use `serve --transport http`. See docs/CONFIGURATION.md, "auth"."""

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
