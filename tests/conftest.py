"""Shared fixtures: the anyio backend, and where the npm-installed reference servers live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / "tools" / "npm" / "node_modules" / ".bin"
PYTHON = sys.executable


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def npm_tool(name: str) -> Path:
    """A binary from tools/npm (installed by scripts/test); a clear failure when it is missing."""
    path = NPM_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run ./scripts/test (it installs the npm reference servers).")
    return path


@pytest.fixture
def node_env() -> dict[str, str]:
    """An environment whose PATH starts with the pinned Node 22 from tools/npm."""
    return {**os.environ, "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
