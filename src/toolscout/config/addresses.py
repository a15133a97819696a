"""Host names, addresses and origins as the HTTP face compares them, and the config entries naming them.

`http.allowedHosts` and `http.allowedOrigins` are checked when the configuration is validated, and the
HTTP face (`toolscout.serve.http_guards`) compares the `Host` and `Origin` headers of every request
with the same parsing: both use this module, which knows nothing of requests or of the config models.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

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
    """`name`, `name:port`, `[v6]` or `[v6]:port` as (name, port); None if it is none of them."""
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
    """`scheme://host[:port]` as (scheme, name, port), the scheme's default port when none is given;
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
