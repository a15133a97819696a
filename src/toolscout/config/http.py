"""The `http` section of the configuration: what `toolscout serve --transport http` answers, how many
sessions it keeps, and how many connections it holds open and for how long before a request arrives."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from toolscout.config.addresses import check_host_entry, check_origin_entry


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


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
"""At about 40 kB a session, some 40 MB; the SDK's 10,000 took the gateway from 148 to 548 MB."""
DEFAULT_MAX_SESSIONS_PER_CLIENT = 32
DEFAULT_SESSION_OPENING_RATE = 10.0
"""New sessions a second per client address (after a burst of maxSessionsPerClient): a client
needs one session a conversation; a handshake costs the event loop milliseconds, a refusal far less."""
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""10 minutes (the SDK's is 30): a client's open GET stream keeps its session, and one that lost it
opens another; a shorter time would mostly close the sessions of agents waiting on their user."""


class HttpServeConfig(_Model):
    """`toolscout serve --transport http`: which requests it answers, how many sessions it keeps, and
    how many connections it holds open and for how long before a request arrives."""

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
