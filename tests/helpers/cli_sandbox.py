"""Running `toolscout` as a real child process in a sandboxed home directory."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.paths import NPM_BIN, PYTHON


@dataclass
class Sandbox:
    """A home, a working directory and an environment where toolscout sees only what a test put there."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def cwd(self) -> Path:
        return self.root / "work"

    @property
    def user_config(self) -> Path:
        return self.home / ".config" / "toolscout"

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            # Where `toolscout serve` listens for the command line (conftest.py keeps it the tests' own).
            "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
            "COLUMNS": "200",
            "TERM": "dumb",
            # Coverage's settings for child processes, so the command line's own code is measured too.
            **{name: value for name, value in os.environ.items() if name.startswith("COVERAGE_")},
        }

    def run(
        self, *args: str, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `toolscout` with `args` in the sandbox (`env` adds variables to its environment)."""
        return subprocess.run(
            [PYTHON, "-m", "toolscout", *args],
            cwd=self.cwd,
            env={**self.env(), **(env or {})},
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def json(self, *args: str, expect: int = 0) -> Any:
        done = self.run(*args, "--json")
        assert done.returncode == expect, done.stdout + done.stderr
        return json.loads(done.stdout)

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def make_sandbox(tmp_path: Path) -> Sandbox:
    sandbox = Sandbox(tmp_path)
    sandbox.home.mkdir()
    sandbox.cwd.mkdir()
    return sandbox
