"""Where the gateway's upstream servers come from: the seam between a source of server configs and the
gateway that connects to them.

Today there is one source, the configuration file's `mcpServers` (`ConfiguredServers`): read when the
gateway starts, and again whenever `serve` reloads the file (serve/reload.py), whose servers it then
hands to `Gateway.set_servers` (owner "config"). Servers registered at run time reach the gateway the
same way, under their own owner ("registry").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from toolscout.config.models import AnyServerConfig, GatewayConfig


class ServerSource(Protocol):
    """A source of upstream server configs, by the name the gateway shows them under."""

    def servers(self) -> Mapping[str, AnyServerConfig]:
        """The server configs as they are now, in the order the source declares them."""
        ...


@dataclass(frozen=True)
class ConfiguredServers:
    """The servers of a configuration's `mcpServers`, or only those named in `only` (unknown names are
    ignored: the caller checked them against the configuration, with a did-you-mean, if it had to)."""

    config: GatewayConfig
    only: Collection[str] | None = None

    def servers(self) -> Mapping[str, AnyServerConfig]:
        """Every configured server (disabled ones too: the gateway lists them as disabled), in file order."""
        servers = self.config.mcp_servers.items()
        return {name: server for name, server in servers if self.only is None or name in self.only}
