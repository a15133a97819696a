"""Which `Host` and `Origin` headers `toolscout serve --transport http` answers, on every address it listens on.

A web page the user visits can make the browser send requests to the gateway: cross-origin (its
`Origin` is the page's), or after DNS rebinding (the page's own name made to resolve to the
gateway's address, so the browser thinks it is same-origin, and `Host` carries the page's name).
Checking both headers against names the gateway is really reached by closes both ways in. The SDK
does so only when bound to 127.0.0.1, localhost or ::1; `HostOriginGuard` does it for every address
(loopback, wildcard, a LAN address, a host name), stateful or stateless, in both protocol eras,
before a request reaches the session manager (so a refused request never opens a session).

Allowed by default (`AllowList.for_bind`):

* the address the request arrived at (the connection's local IP, any port): an IP literal in
  `Host` means the client dialled this machine by address, which DNS rebinding cannot produce;
* the bind address itself (a host name given to `--host` included);
* `localhost`, `127.0.0.1` and `[::1]` when bound to a loopback or wildcard address;
* the machine's host name (and `<name>.local`, its mDNS name) when bound to a wildcard address:
  other machines reach a gateway listening on every interface by that name, and only whoever
  answers the victim's own name lookups could point it elsewhere.

`Origin` is optional (non-browser clients send none); when sent it must be a page on an allowed
host (http or https, any port), or listed in `allowedOrigins`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from toolscout.config.http import ANY, canonical_name, parse_ip, split_host, split_origin

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _shown(name: str, port: int | str | None = None) -> str:
    text = f"[{name}]" if ":" in name else name
    return text if port is None else f"{text}:{port}"


@dataclass(frozen=True)
class AllowList:
    """The `Host` names (each for any port, or one) and extra `Origin`s a gateway's HTTP face answers."""

    hosts: tuple[tuple[str, int | None], ...]
    origins: tuple[tuple[str, str, int | None], ...] = ()
    """Extra origins as (scheme, name, port), port None for any."""
    any_host: bool = False
    any_origin: bool = False
    arrival: bool = True
    """Whether the address a request arrived at is allowed as its Host (and its pages as Origin)."""

    @classmethod
    def for_bind(cls, bind_host: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> AllowList:
        """The defaults for a gateway listening on `bind_host` (see the module), plus `hosts` and `origins`."""
        names: list[str] = []
        address = parse_ip(bind_host)
        if address is None:
            names.append(bind_host)
            if canonical_name(bind_host) == "localhost":
                names.extend(LOOPBACK_NAMES)
        elif address.is_unspecified:
            names.extend(LOOPBACK_NAMES)
            names.extend(machine_names())
        else:
            names.append(bind_host)
            if address.is_loopback:
                names.extend(LOOPBACK_NAMES)
        return cls.of(names, hosts, origins)

    @classmethod
    def of(cls, defaults: Sequence[str], hosts: Iterable[str], origins: Iterable[str]) -> AllowList:
        """`defaults` and the configured `hosts` (validated entries: `check_host_entry`) and `origins`."""
        parsed: list[tuple[str, int | None]] = []
        any_host = False
        for entry in [*defaults, *hosts]:
            if entry.strip() == ANY:
                any_host = True
                continue
            split = split_host(entry)
            if split is not None and split not in parsed:
                parsed.append(split)
        extra = tuple(
            dict.fromkeys(p for o in origins if o.strip() != ANY and (p := split_origin(o, any_port=True)) is not None)
        )
        any_origin = any(o.strip() == ANY for o in origins)
        return cls(tuple(parsed), extra, any_host=any_host, any_origin=any_origin)

    def host_allowed(self, host: str | None, arrived: str | None = None) -> bool:
        """Whether a request with this `Host` header, arriving at local address `arrived`, is answered."""
        if self.any_host:
            return host is not None
        split = split_host(host) if host else None
        return split is not None and self._known(*split, arrived=arrived)

    def origin_allowed(self, origin: str | None, arrived: str | None = None) -> bool:
        """Whether a request with this `Origin` header (None: not a browser's cross-origin request) is answered."""
        if origin is None or self.any_origin:
            return True
        parsed = split_origin(origin)
        if parsed is None:  # `null` (a sandboxed page, a file) or garbage: no page of an allowed host
            return False
        scheme, name, port = parsed
        if any(scheme == s and name == n and (p is None or port == p) for s, n, p in self.origins):
            return True
        return scheme in ("http", "https") and self._known(name, port, arrived=arrived)

    def _known(self, name: str, port: int | None, *, arrived: str | None) -> bool:
        if self.arrival and arrived is not None and parse_ip(name) is not None and canonical_name(arrived) == name:
            return True
        return any(
            name == allowed and (allowed_port is None or port == allowed_port) for allowed, allowed_port in self.hosts
        )

    def describe(self) -> str:
        """What `serve` prints at start."""
        if self.any_host:
            hosts = "any Host (the check is off: allowedHosts has '*')"
        else:
            listed = [_shown(name, port) for name, port in self.hosts]
            if self.arrival:
                listed.append("the address a request arrives at")
            hosts = "Host " + ", ".join(listed) + " (any port unless one is given)"
        if self.any_origin:
            origins = "any Origin (allowedOrigins has '*')"
        else:
            origins = "Origin: none (non-browser clients), pages on those hosts"
            if self.origins:
                origins += ", " + ", ".join(f"{s}://{_shown(n, '*' if p is None else p)}" for s, n, p in self.origins)
        return f"{hosts}; {origins}"


def machine_names() -> list[str]:
    """This machine's host name, and its mDNS name when the host name is a single label (no DNS lookup:
    `socket.getfqdn` can wait seconds on a machine without a working resolver)."""
    name = canonical_name(socket.gethostname())
    if not name or name == "localhost":
        return []
    return [name] if "." in name else [name, f"{name}.local"]


def _refusal(status: int, message: str) -> tuple[int, bytes]:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    return status, json.dumps(body).encode()


def refusal_for(
    allow: AllowList, host: str | None, origin: str | None, arrived: str | None
) -> tuple[int, bytes] | None:
    """The HTTP status and JSON-RPC error body a request with these headers gets, or None if it is answered."""
    if not allow.host_allowed(host, arrived):
        if not host:
            return _refusal(421, "The request has no Host header; send one naming the gateway's address.")
        return _refusal(
            421,
            f"This gateway does not answer to Host {host!r} (a guard against DNS rebinding). If clients reach it "
            f"under that name, start it with `toolscout serve --allow-host {host}` or add the name to "
            "`http.allowedHosts` in the config.",
        )
    if not allow.origin_allowed(origin, arrived):
        return _refusal(
            403,
            f"Web pages from Origin {origin!r} may not call this gateway (a guard against cross-site requests). "
            f"If that page should, start it with `toolscout serve --allow-origin {origin}` or add it to "
            "`http.allowedOrigins` in the config.",
        )
    return None


class HostOriginGuard:
    """ASGI middleware answering a request whose `Host` or `Origin` is not allowed with 421 or 403."""

    def __init__(self, app: ASGIApp, allow: AllowList) -> None:
        self.app = app
        self.allow = allow

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        server: tuple[str, int | None] | None = scope.get("server")
        arrived = server[0] if server else None
        refused = refusal_for(self.allow, headers.get("host"), headers.get("origin"), arrived)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, body = refused
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated Host or Origin is refused as a whole (joined)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").lower()
        if name in ("host", "origin"):
            value = raw_value.decode("latin-1")
            found[name] = f"{found[name]}, {value}" if name in found else value
    return found
