"""Where toolscout's files live: the configuration file in use, and the per-user directories.

The configuration is looked for in a fixed order (`find_config`); caches and logs go to the
platform's per-user directories, which an environment variable can replace (tests, sandboxes,
the demo). Nothing here reads a file's content: that is `toolscout.config.loader`'s job.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from toolscout.errors import ConfigurationError

CONFIG_ENV_VAR = "TOOLSCOUT_CONFIG"
CACHE_ENV_VAR = "TOOLSCOUT_CACHE_DIR"
STATE_ENV_VAR = "TOOLSCOUT_STATE_DIR"
EXTENSIONS = ("json", "yaml", "yml", "toml")


@dataclass(frozen=True)
class ConfigSource:
    """Where a configuration was found and why it was chosen."""

    path: Path
    origin: str


def user_config_dir() -> Path:
    """The per-user directory toolscout reads `config.{json,yaml,yml,toml}` from (always absolute)."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Application Support")
    else:
        # The XDG spec: an unset, empty or relative $XDG_CONFIG_HOME means ~/.config.
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = xdg if os.path.isabs(xdg) else str(Path.home() / ".config")
    return Path(base) / "toolscout"


def user_cache_dir() -> Path:
    """The per-user directory for caches toolscout can rebuild (embeddings, the catalog); always absolute.

    `$TOOLSCOUT_CACHE_DIR` replaces it (tests and sandboxes point it at a directory of their own).
    """
    override = os.environ.get(CACHE_ENV_VAR, "")
    if override:
        return Path(override).expanduser().absolute()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "toolscout" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "toolscout"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return Path(xdg if os.path.isabs(xdg) else Path.home() / ".cache") / "toolscout"


def user_log_dir() -> Path:
    """The per-user directory for logs toolscout keeps (the audit log); always absolute.

    On Linux that is XDG's state directory, which the spec names as the place for logs and
    history: unlike a cache, it must not be deleted at will. `$TOOLSCOUT_STATE_DIR` replaces it
    on every platform (the demo keeps its log in a temporary directory this way).
    """
    override = os.environ.get(STATE_ENV_VAR, "")
    if override:
        return Path(override).expanduser().absolute()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "toolscout" / "Logs"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Logs" / "toolscout"
    xdg = os.environ.get("XDG_STATE_HOME", "")
    return Path(xdg if os.path.isabs(xdg) else Path.home() / ".local" / "state") / "toolscout"


def candidate_paths(cwd: Path | None = None) -> list[ConfigSource]:
    """Return every implicit location, in lookup order (after `--config` and $TOOLSCOUT_CONFIG)."""
    here = cwd or Path.cwd()
    found = [ConfigSource(here / f"toolscout.{ext}", "working directory") for ext in EXTENSIONS]
    found += [ConfigSource(user_config_dir() / f"config.{ext}", "user config directory") for ext in EXTENSIONS]
    return found


def find_config(
    explicit: Path | None = None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ConfigSource:
    """Resolve which file to load: `--config`, then $TOOLSCOUT_CONFIG, then the implicit locations.

    Raises:
        ConfigurationError: an explicitly named file does not exist, or no file was found anywhere.
    """
    environ = os.environ if env is None else env
    if explicit is not None:
        source = ConfigSource(explicit.expanduser(), "--config")
    elif environ.get(CONFIG_ENV_VAR):
        source = ConfigSource(Path(environ[CONFIG_ENV_VAR]).expanduser(), f"${CONFIG_ENV_VAR}")
    else:
        candidates = candidate_paths(cwd)
        for candidate in candidates:
            if candidate.path.is_file():
                return candidate
        looked = "\n".join(f"  {c.path}" for c in candidates)
        raise ConfigurationError(
            "No configuration file found. Looked in:\n"
            f"{looked}\n"
            f"Pass --config FILE, set ${CONFIG_ENV_VAR}, or try the bundled demo servers with --demo."
        )
    if not source.path.is_file():
        what = "is a directory" if source.path.is_dir() else "does not exist"
        raise ConfigurationError(f"Configuration file {source.path} (from {source.origin}) {what}.")
    return source


def absolute_path(path: str | None) -> str | None:
    """A validator: a file toolscout writes is named absolutely (clients start it in any directory)."""
    if path is not None and not os.path.isabs(os.path.expanduser(path)):
        raise ValueError(f"must be an absolute path (or start with ~), got {path!r}")
    return path
