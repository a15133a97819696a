"""Shared fixtures: the anyio backend, private state/runtime/cache directories, and a PATH with Node 22.

The hooks here also mark each test that starts a child process `processes` (the quick tier,
`scripts/test --quick`, leaves those out) and fail a test that starts one without the mark; what
decides it is in tests/helpers/tiers.py. Constants and helper functions live in tests/helpers/ (test
modules import those, never this file)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Generator, Iterator

import mcp.client.stdio as mcp_stdio
import pytest

from tests.helpers.paths import node_path
from tests.helpers.thread_start import guard_thread_start
from tests.helpers.tiers import MARK, ProcessWatch, starts_processes
from toolscout.masking import forget_secrets

guard_thread_start()


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


_watch = ProcessWatch()
sys.addaudithook(_watch.hook)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARK}: the test starts a child process (Redis, nginx, Node, a serve child, a stdio server); "
        "set at collection by tests/helpers/tiers.py, left out by `scripts/test --quick`",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that start a child process, so that `-m "not processes"` is the quick tier."""
    for item in items:
        if starts_processes(item):
            item.add_marker(MARK)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Note the processes each test not marked `processes` starts (setup, call and teardown)."""
    _watch.current = None if item.get_closest_marker(MARK) else item
    _watch.started.clear()
    try:
        return (yield)
    finally:
        _watch.current = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Fail a test that started a child process without being marked: it would slow the quick tier."""
    report = yield
    if call.when == "teardown" and _watch.current is item and _watch.started and report.passed:
        started = "\n  ".join(_watch.started[:5])
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a child process but is not marked `{MARK}`, so the quick tier "
            f"(scripts/test --quick) would run it:\n  {started}\nAdd the name that starts it to "
            f"PROCESS_NAMES in tests/helpers/tiers.py, or mark the test @pytest.mark.{MARK}."
        )
    return report
