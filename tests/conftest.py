"""Shared fixtures: the anyio backend, private state/runtime/cache directories, and a PATH with Node 22.

Constants and helper functions live in tests/helpers/ (test modules import those, never this file)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import mcp.client.stdio as mcp_stdio
import pytest

from tests.helpers.paths import node_path
from toolscout.masking import forget_secrets


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Gateways built from a config write an audit log to the user state directory: keep the
    tests' executions out of the developer's own (children started by tests inherit this too)."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))


@pytest.fixture(scope="session", autouse=True)
def _private_runtime_dir() -> Iterator[None]:
    """`toolscout serve` listens for this machine's command line on a socket in the user runtime
    directory (local_socket.py): the tests' are kept out of the developer's. In the temporary
    directory, as pytest's own would make socket paths too long."""
    runtime = tempfile.mkdtemp(prefix="ts-run-")
    os.environ["XDG_RUNTIME_DIR"] = runtime
    yield
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test caches (the persistent catalog, embeddings) in a directory of its own, never the
    developer's: a catalog saved by one test must not answer for another. Children inherit it, those
    started through the SDK's stdio client too (it passes on only a few variables by name)."""
    monkeypatch.setenv("TOOLSCOUT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    inherited = [*mcp_stdio.DEFAULT_INHERITED_ENV_VARS, "TOOLSCOUT_CACHE_DIR", "XDG_STATE_HOME"]  # + the audit log's
    monkeypatch.setattr(mcp_stdio, "DEFAULT_INHERITED_ENV_VARS", inherited)


@pytest.fixture(autouse=True)
def _forget_remembered_secrets() -> Iterator[None]:
    """Loading a config makes its secrets masked by value process-wide (toolscout.masking): one
    test's planted values must not be masked in the next test's output."""
    yield
    forget_secrets()


@pytest.fixture
def node_env() -> dict[str, str]:
    """An environment whose PATH starts with the pinned Node 22 from tools/npm."""
    return {**os.environ, "PATH": node_path()}
