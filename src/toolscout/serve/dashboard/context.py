"""What the dashboard's pages work on (`Dashboard`), and how a page refuses (`DashboardError`,
`require_admin`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request

from toolscout.gateway.core import Gateway
from toolscout.gateway.registrations import Registrations
from toolscout.registry.base import Registry
from toolscout.serve.auth import PrincipalResolver, principal_of
from toolscout.serve.dashboard.sessions import Sessions
from toolscout.serve.reload import ConfigReloader

if TYPE_CHECKING:
    from toolscout.modes.smart import SmartDiscovery


@dataclass
class Dashboard:
    """What the dashboard's pages read and change: the running gateway and what is around it."""

    gateway: Gateway
    principals: PrincipalResolver
    """Who may log in: the same resolver `/mcp` and the HTTP API use."""
    registry: Registry | None = None
    """Issued tokens and run-time registrations (None: the tokens and registry pages say so)."""
    registrations: Registrations | None = None
    """Registering servers and callback tools into the running gateway."""
    config_path: Path | None = None
    """The config file buttons write to (None: the gateway runs without one, e.g. `--demo`)."""
    reloader: ConfigReloader | None = None
    """Asked to apply the config file at once after a page wrote it."""
    sessions: Sessions = field(default_factory=Sessions)
    smart: SmartDiscovery | None = None
    """Smart mode's engine when it is configured (`mode: smart`, or `smartTool: true`): the Run page's
    request box (None: no box)."""
    mode: str = ""
    """The configured `mode:`, marked in the Activity page's token costs."""
    config_lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Held while a page edits the config file: two edits never interleave."""


class DashboardError(Exception):
    """A refusal a page answers with (`status`) and a message saying what to do instead."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def require_admin(request: Request) -> None:
    """Refuse (403) a page to anyone but an admin (a client key or token sees its scope only)."""
    if not principal_of(request).admin:
        raise DashboardError(
            403,
            "This page needs an admin key (auth.adminKeys). "
            "Client keys and tokens see Servers, Tools, Search, Run and Activity.",
        )
