"""Where things are: the repository, the Python running the tests, and the npm-installed reference
servers (tools/npm, installed by scripts/test)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = ROOT / "tools" / "npm"
NPM_BIN = NPM_DIR / "node_modules" / ".bin"
PYTHON = sys.executable


def npm_tool(name: str) -> Path:
    """A binary from tools/npm (installed by scripts/test); a clear failure when it is missing."""
    path = NPM_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run ./scripts/test (it installs the npm reference servers).")
    return path


def node_path() -> str:
    """A PATH that starts with the pinned Node 22 from tools/npm."""
    npm_tool("node")  # fails clearly when tools/npm is not installed
    return f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
