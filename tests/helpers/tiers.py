"""The quick tier: telling, before a test runs, whether it starts a child process, and checking it after.

A test starts a child process (Redis, nginx, Node, a `toolscout serve` child, a stdio server in
Python) when its code, the fixtures it uses, the test helpers they call or the values it is
parametrized with name one of the things that start or describe one: the Python that runs the tests
(a stdio server's command), the npm tools, the process helpers, the SDK's stdio client. Such a test
is marked `processes` at collection, so `pytest -m "not processes"` (`scripts/test --quick`) runs
the rest. What the names miss, the check catches: a test not marked that starts a process anyway
fails, in every run, with a message saying what it started, so the quick tier stays right as tests
are added.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterable
from typing import Any

import pytest

MARK = "processes"
"""The marker of tests that start a child process; the quick tier is `-m "not processes"`."""

PROCESS_NAMES = frozenset(
    {
        "PYTHON",  # tests.helpers.paths: the Python that runs the tests, a stdio server's command
        "executable",  # sys.executable, likewise
        "NPM_BIN",
        "npm_tool",
        "node_path",
        "node_env",
        "running",  # benchmarks.processes: a child that prints a readiness line
        "open_process",
        "run_process",
        "Popen",
        "subprocess",
        "create_subprocess_exec",
        "create_subprocess_shell",
        "check_output",
        "redis_server",
        "RedisServer",
        "balancer",
        "stdio_client",
        "StdioServerParameters",
    }
)
"""Names whose mention in a test's code (or in what it reaches) means the test starts a child process."""

PROCESS_HELPERS = frozenset({"benchmarks.processes"})
"""The helper modules whose process-starting functions PROCESS_NAMES names."""

AUDITED = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.system", "os.exec"})
"""The audit events of starting a process (`sys.addaudithook`)."""

_MAX_DEPTH = 6


def _is_ours(value: object) -> bool:
    """Whether `value` was defined in the tests or the benchmarks' shared helpers (code worth looking
    into), not in a library."""
    module = getattr(value, "__module__", None) or ""
    return module in {"tests", "conftest"} or module.startswith(("tests.", "test_", "benchmarks."))


def _names_child(value: object, depth: int = 0) -> bool:
    """Whether a plain value (a command, a config mapping) holds the Python or a Node tool to run."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, str):
        return value == sys.executable or "node_modules/.bin" in value
    if isinstance(value, dict):
        return any(_names_child(v, depth + 1) for v in value.values())  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_names_child(v, depth + 1) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return False


class _Reach:
    """A walk over code that remembers what it has seen (helpers are shared by many tests)."""

    def __init__(self) -> None:
        self._seen: dict[int, bool] = {}

    def code(self, code: types.CodeType, namespace: dict[str, Any]) -> bool:
        key = id(code)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = False  # a recursive helper reaches itself: not a child by that path
        found = self._code(code, namespace)
        self._seen[key] = found
        return found

    def _code(self, code: types.CodeType, namespace: dict[str, Any]) -> bool:
        for name in PROCESS_NAMES.intersection(code.co_names):
            here = namespace.get(name)
            if not (_is_ours(here) and getattr(here, "__module__", "") not in PROCESS_HELPERS):
                return True  # a test helper of the same name (a gateway `running`) is judged by its code
        for const in code.co_consts:
            if isinstance(const, types.CodeType) and self.code(const, namespace):
                return True
        names: Iterable[str] = (*code.co_names, *code.co_freevars)
        return any(self.value(namespace[name]) for name in names if name in namespace)

    def value(self, value: object) -> bool:
        """Whether a test's global (a helper, a class, a constant) starts or names a child process."""
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        wrapped = inspect.unwrap(value) if callable(value) else value  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(wrapped, types.FunctionType):
            if not _is_ours(wrapped):
                return False
            defaults = [*(wrapped.__defaults__ or ()), *(wrapped.__kwdefaults__ or {}).values()]
            return _names_child(defaults) or self.code(wrapped.__code__, wrapped.__globals__)
        if isinstance(wrapped, type):
            if not _is_ours(wrapped):
                return False
            key = id(wrapped)
            if key in self._seen:
                return self._seen[key]
            self._seen[key] = False
            found = any(self.value(member) for member in vars(wrapped).values())
            self._seen[key] = found
            return found
        if isinstance(wrapped, property):
            return any(self.value(f) for f in (wrapped.fget, wrapped.fset) if f is not None)
        return _names_child(wrapped)


_reach = _Reach()


def starts_processes(item: pytest.Item) -> bool:
    """Whether the test `item`, its fixtures or its parameters name what starts a child process."""
    if item.get_closest_marker(MARK) is not None:
        return True
    function = getattr(item, "function", None)
    if isinstance(function, types.FunctionType) and _reach.value(function):
        return True
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name in item.fixturenames:  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
            if name in PROCESS_NAMES:
                return True
            for fixturedef in info.name2fixturedefs.get(name, ()):  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if _reach.value(fixturedef.func):  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
                    return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and _names_child(list(callspec.params.values()))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]


class ProcessWatch:
    """An audit hook that notes each process the running test starts, for the check after it."""

    def __init__(self) -> None:
        self.current: pytest.Item | None = None
        self.started: list[str] = []

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event in AUDITED and self.current is not None:
            what = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:1]
            self.started.append(f"{event} {what!r}"[:300])
