"""Keeping a running gateway in step with its config file: the file is watched (its content looked at
about once a second, so an editor that replaces the file is seen as one that rewrites it), as are the
files its `sources` name (a client's config edited later), and read again on `SIGHUP`; what changed in
`mcpServers` is applied (`Gateway.set_servers`, owner "config"), `toolRules` and `search` too, and
every other setting that changed is named as needing a restart. With `configReload: restart` none of
this runs: `serve` says at start that changes take a restart, and `SIGHUP` only says so again.
`toolscout config reload` asks for the same on the command line's local socket (`reload_route`), and
is answered with what the reload did (`ReloadOutcome`).

A broken edit (bad syntax, an invalid value, a `${VAR}` not set) is reported in the log, without a
traceback, and the running set is kept. One seen by the watch is looked at once more first, since a
file caught half-way through an editor's save is fixed by the next poll.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolscout.config.models import ConfiguredServers, GatewayConfig
from toolscout.config.sources import load_with_sources, source_paths
from toolscout.errors import ConfigurationError
from toolscout.gateway.core import Gateway
from toolscout.gateway.upstreams import CONFIG_OWNER
from toolscout.upstream import UpstreamSpec

if TYPE_CHECKING:
    from starlette.routing import Route

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often the config file is looked at."""
LIVE_SETTINGS = frozenset(
    {
        "mcp_servers",
        "tool_rules",
        "tool_rules_evaluation",
        "schema_url",
        "search",
        "sources",
        "discovery",
        "cache",
        "cli",
    }
)
"""The settings a reload applies to the running gateway (`cli` is read by each command, not by the
gateway); any other that changed takes a restart."""


@dataclass
class ReloadOutcome:
    """What one reload did: applied (and what changed), or refused (and why)."""

    applied: bool = False
    why: str = ""
    """What made the serve read the file: `the file changed` (its watch), `on SIGHUP`, or the command line."""
    changes: str = ""
    """The servers added, removed or changed, and whether the rules and search settings were applied."""
    error: str | None = None
    """Why the file was not applied (the running set is kept)."""
    restart_needed: list[str] = field(default_factory=list[str])
    """Settings that changed but take a restart of `serve`."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "why": self.why,
            "changes": self.changes,
            "error": self.error,
            "restartNeeded": self.restart_needed,
        }


class ConfigReloader:
    """Applies the config file at `path` to `gateway` whenever it changes, or when asked (`request`).

    `config`: the configuration as the file gave it when the gateway was built (before any command-line
    option changed it), what the next version of the file is compared with.
    """

    def __init__(self, gateway: Gateway, path: Path, config: GatewayConfig) -> None:
        self._gateway = gateway
        self._path = path
        self._config = config
        self._requested = anyio.Event()
        self._applied: str = _digest(_read_all(self._watched()))
        """The digest of the file's content last applied (or found broken and reported)."""
        self._doubted: str | None = None
        """The digest of content that would not load, to be looked at once more before it is reported."""
        self._started = config
        self._lock = anyio.Lock()
        self.outcome = ReloadOutcome()
        """What the last reload that was tried did."""
        self._outcome_of: str | None = None
        """The digest of the content `outcome` is about."""

    @property
    def path(self) -> Path:
        """The config file followed."""
        return self._path

    async def reload_now(self) -> ReloadOutcome:
        """Read the file again and apply it now (`toolscout config reload`); what that did. Content the
        watch has tried already (the command usually comes a moment after the save) is not applied
        twice: its outcome is the answer."""
        async with self._lock:
            digest = _digest(await anyio.to_thread.run_sync(_read_all, self._watched()))
            if digest != self._outcome_of:
                await self._check(asked=True, why="asked by `toolscout config reload`")
            return self.outcome

    def _watched(self) -> list[Path]:
        """The config file, then the files its sources name (as the configuration last applied says)."""
        return [self._path, *source_paths(self._config, self._path)]

    def request(self) -> None:
        """Read the file again now, whatever the watch says (`SIGHUP`); callable from any task."""
        self._requested.set()

    async def run(self) -> None:
        """Watch the file and serve requests until cancelled (a task of the serving process's)."""
        while True:
            with anyio.move_on_after(POLL_SECONDS):
                await self._requested.wait()
            asked = self._requested.is_set()
            if asked:
                self._requested = anyio.Event()
            try:
                await self.check(asked=asked)
            except Exception:  # never a reason to stop serving, nor to stop watching
                logger.exception("the configuration could not be reloaded")

    async def check(self, *, asked: bool = False) -> bool:
        """Reload if the file changed since last applied (or `asked`); whether the gateway changed."""
        async with self._lock:
            return await self._check(asked=asked)

    async def _check(self, *, asked: bool, why: str | None = None) -> bool:
        digest = _digest(await anyio.to_thread.run_sync(_read_all, self._watched()))
        if digest == self._applied and not asked:
            return False
        why = why or ("on SIGHUP" if asked else "the file changed")
        try:
            config = await anyio.to_thread.run_sync(load_with_sources, self._path)
        except ConfigurationError as exc:
            if not asked and digest != self._doubted:
                self._doubted = digest  # perhaps caught half-way through a save: once more at the next poll
                return False
            self._doubted, self._applied = None, digest
            self.outcome, self._outcome_of = ReloadOutcome(why=why, error=_sentence(exc.message)), digest
            logger.error(
                "configuration not reloaded (%s): %s Still serving the servers it had; fix the file and save it again.",
                why,
                _sentence(exc.message),
            )
            return False
        self._doubted = None
        return await self._apply(config, digest, why)

    async def _apply(self, config: GatewayConfig, digest: str, why: str) -> bool:
        servers = ConfiguredServers(config).servers()
        try:
            specs = [UpstreamSpec.from_config(name, server) for name, server in servers.items()]
            changes = await self._gateway.set_servers(specs, owner=CONFIG_OWNER)
        except ConfigurationError as exc:
            self._applied = digest
            self.outcome, self._outcome_of = ReloadOutcome(why=why, error=_sentence(exc.message)), digest
            logger.error("configuration not reloaded (%s): %s Still serving the servers it had.", why, exc.message)
            return False
        previous, self._config = self._config, config
        # The sources may have changed with the file: what is watched from now on is what it names now.
        self._applied = (
            digest
            if source_paths(config, self._path) == source_paths(previous, self._path)
            else (_digest(_read_all(self._watched())))
        )
        rules_changed = (config.tool_rules, config.tool_rules_evaluation) != (
            previous.tool_rules,
            previous.tool_rules_evaluation,
        )
        if rules_changed:
            self._gateway.rules.replace(config.tool_rules, config.tool_rules_evaluation)
            self._gateway.catalog.rules_changed()  # verdicts again: the index and clients follow
            self._gateway.mirror.changes.bump()  # resources and prompts are listed by the rules too
        self._gateway.list_cache = config.cache  # (read at each listing: nothing else to do)
        search_changed = config.search != self._gateway.search_config
        if search_changed:
            try:  # (`PUT /api/v1/config/semantic` applies it first, then writes the file: nothing to do then)
                await self._gateway.configure_search(config.search)
            except ConfigurationError as exc:
                logger.error("configuration: the search settings were not applied: %s", exc.message)
                search_changed = False
        applied = changes.describe() if changes else "no server changed"
        notes = ("; toolRules applied" if rules_changed else "") + ("; search applied" if search_changed else "")
        logger.info("configuration reloaded (%s): %s%s", why, applied, notes)
        later = restart_needed(previous, config)
        # (Against the settings it started with: one changed by an earlier reload still takes a restart.)
        pending = restart_needed(self._started, config)
        self.outcome, self._outcome_of = ReloadOutcome(True, why, applied + notes, restart_needed=pending), digest
        if later:
            logger.warning("configuration: restart toolscout serve to apply %s", ", ".join(later))
        return bool(changes) or rules_changed or search_changed


def restart_needed(before: GatewayConfig, after: GatewayConfig) -> list[str]:
    """The settings (as the file names them) that changed from `before` to `after` and that a running
    gateway cannot take on: everything but `mcpServers` and `toolRules`."""
    fields = type(after).model_fields
    return [
        field.alias or name
        for name, field in fields.items()
        if name not in LIVE_SETTINGS and getattr(before, name) != getattr(after, name)
    ]


def reload_route(reloader: ConfigReloader) -> Route:
    """`POST /config/reload` (under the API's prefix) for the command line's local socket only: the
    body names the config file the command means (`{"path": ...}`, its resolved path); a serve of another
    file answers 404, so that a command may ask every serve of this user and reach the right one."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    mine = reloader.path.resolve()

    async def reload(request: Request) -> JSONResponse:
        try:
            asked = (await request.json()).get("path")
        except (ValueError, AttributeError):
            asked = None
        if not isinstance(asked, str) or Path(asked) != mine:
            return JSONResponse({"path": str(reloader.path)}, status_code=404)
        outcome = await reloader.reload_now()
        return JSONResponse({"path": str(reloader.path), **outcome.to_dict()})

    return Route("/config/reload", reload, methods=["POST"])


@asynccontextmanager
async def reloading(reloader: ConfigReloader | None) -> AsyncGenerator[None]:
    """Run `reloader` (if any) while the block runs."""
    if reloader is None:
        yield
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(reloader.run, name="config reload")
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # (between an editor's delete and its write, say): a change like any other
        return None


def _read_all(paths: list[Path]) -> list[bytes | None]:
    return [_read(path) for path in paths]


def _digest(contents: list[bytes | None]) -> str:
    """The files' digest (a file that could not be read counts as one state like any other content)."""
    digest = hashlib.sha256()
    for content in contents:
        digest.update(b"-" if content is None else b"+" + hashlib.sha256(content).digest())
    return digest.hexdigest()


def _sentence(message: str) -> str:
    return message if message.rstrip().endswith((".", "!", "?")) else message.rstrip() + "."
