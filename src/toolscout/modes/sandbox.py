"""Running an agent's Python program in pydantic-monty's sandbox, with every name it reaches outside answered by a host.

Monty is a Python subset interpreted in Rust. Its pool runs each program in a worker *process*, so
neither a program's loop nor its allocations touch the gateway's process. Each program gets a worker
of its own, spawned for it and gone when it ends (nothing of one caller's program is left for the
next), driven through Monty's blocking API from a thread of a limiter of `max_programs`: the event
loop only waits for that thread, and answers every other request meanwhile.

The program is driven here snapshot by snapshot, never with Monty's automatic resumption: every
name the program does not define (a server, `search_tools`), every call of a host function or of a
method of a host object, and every OS call (a file, the environment, the clock when it is not the
worker's) stops the program and comes to `_Driver`. Host calls are answered by the `Host` on the
event loop, in the request's context (anyio carries it into the worker thread and back, so the
request's scope and relay are current), and always through a future, so that `asyncio.gather` runs
them together. OS calls are refused: the program is stopped with a message
naming the call.

Before the program runs, `refusal` reads its tokens: `import` of a module outside `ALLOWED_MODULES`,
`eval`/`exec`/`compile` and the other introspection builtins, and any name that starts with a double
underscore are refused with the line. Monty has no `__class__`, `__subclasses__` or `__globals__`
walks in the first place; the token check makes the refusal say why, and keeps `eval` from running
strings the check could not read.

Limits: the wall clock (`timeout`, tool calls included) is an anyio deadline on the whole drive,
which kills the worker when it passes; Monty's own `max_feed_duration_secs` stops the interpreter at
the same time from the inside, `max_memory` bounds the heap, `max_recursion_depth` the stack, the
print collector what is printed, and `max_calls` the host calls (the next one stops the program).
"""

from __future__ import annotations

import contextlib
import io
import json
import keyword
import os
import re
import signal
import tokenize
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast
from uuid import UUID

import anyio

from toolscout.errors import ProgramFailed, ProgramLimitExceeded, SandboxUnavailable, ToolscoutError

ALLOWED_MODULES = frozenset(
    {
        "asyncio",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "functools",
        "hashlib",
        "itertools",
        "json",
        "math",
        "random",
        "re",
        "time",
        "tomllib",
        "typing",
        "unicodedata",
    }
)
"""The modules a program may import: computation only. Monty's `os`, `sys` and `pathlib` are left out
(their calls would only reach the gateway to be refused, but a program is told at once)."""

REFUSED_NAMES = frozenset({"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint"})
"""Builtins a program may not name: code from strings, and views of the interpreter's own state."""

MAX_RECURSION_DEPTH = 200
"""Nested calls a program may make: far more than a tool-chaining program needs, well within the worker's stack."""

PRELUDE = "ToolError = RuntimeError\n"
"""Run before each program, in its session: Monty cannot define exception classes, so a tool's failure is a
`RuntimeError` the program catches as `ToolError`."""

_PROGRAM_FILE = "<python-input-1>"
"""How Monty names the program's own source in a traceback (the prelude is feed 0)."""


@dataclass(frozen=True)
class Limits:
    """What one program may use."""

    timeout: float
    max_memory: int
    max_calls: int
    max_print_chars: int


@dataclass(frozen=True)
class HostCall:
    """A call the program made of something the host gave it: `receiver.name(*args, **kwargs)`, or
    `name(...)` for a host function (`receiver` None)."""

    receiver: str | None
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    line: int | None


class CallFailed(Exception):
    """What a host call raises to make the program see a `ToolError` (a `RuntimeError`) with `message`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Host(Protocol):
    """What a program's outside names stand for."""

    def objects(self) -> Mapping[str, str]:
        """The host objects by the names a program sees them under, each to the key its calls report
        as `HostCall.receiver` (code mode: each server the caller sees)."""
        ...

    def functions(self) -> frozenset[str]:
        """The host functions a program may call by name."""
        ...

    async def call(self, call: HostCall) -> Any:
        """The value of `call` for the program; `CallFailed` to raise in it, any `ToolscoutError` to stop it."""
        ...


@dataclass
class Outcome:
    """What a program that ended printed and returned, and how many host calls it made."""

    output: str
    value: Any
    calls: int
    dropped: int = 0
    """Characters it printed beyond `Limits.max_print_chars`, not kept."""


@dataclass
class _Printed:
    """What a program prints, kept up to `limit` characters; the rest only counted (a program printing in a
    loop costs the gateway nothing)."""

    limit: int
    parts: list[str] = field(default_factory=list[str])
    size: int = 0
    dropped: int = 0

    def __call__(self, stream: str, text: str) -> None:
        room = self.limit - self.size
        kept = text[: max(room, 0)]
        if kept:
            self.parts.append(kept)
            self.size += len(kept)
        self.dropped += len(text) - len(kept)

    @property
    def output(self) -> str:
        return "".join(self.parts)


class ToolServer:
    """What a server is to the sandbox: an object whose every method call comes to the driver (its name
    is what `type(notes)` says in a program)."""


def refusal(code: str) -> ProgramFailed | None:
    """What in `code` is refused before it runs, with its line; None when nothing is (or when the code does
    not tokenize: Monty's parser then says what is wrong, better)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):  # (IndentationError is a SyntaxError)
        return None
    starts_statement = True
    for index, token in enumerate(tokens):
        kind, text, line = token.type, token.string, token.start[0]
        if kind == tokenize.NAME:
            refused = _refused_name(text)
            if refused:
                return _refused(line, refused)
            if starts_statement and text in ("import", "from"):
                problem = _import_refused(tokens, index)
                if problem:
                    return _refused(line, problem)
        elif kind == tokenize.STRING and _is_fstring(text):
            for inner in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _fstring_fields(text)):
                refused = _refused_name(inner)
                if refused:
                    return _refused(line, refused)
        if kind in (tokenize.NL, tokenize.COMMENT):
            continue
        starts_statement = kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or text in (";", ":")
    return None


def _refused_name(name: str) -> str | None:
    if name in REFUSED_NAMES:
        return f"{name}() is not available: write the code itself instead of building it as text"
    if name.startswith("__"):
        return f"{name}: names that start with a double underscore are not available in a program"
    return None


def _import_refused(tokens: list[tokenize.TokenInfo], index: int) -> str | None:
    """What is wrong with the import statement starting at `tokens[index]`, if anything."""
    modules: list[str] = []
    head = tokens[index].string
    expect_module = True
    for token in tokens[index + 1 :]:
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or token.string == ";":
            break
        if head == "from":
            if token.string == ".":
                return "relative imports are not available: a program is one file"
            if token.type == tokenize.NAME:
                modules.append(token.string)
            break
        if token.string == "," or (token.type == tokenize.NL):
            expect_module = True
        elif token.type == tokenize.NAME and expect_module:
            modules.append(token.string)
            expect_module = False
    for module in modules:
        if module not in ALLOWED_MODULES:
            allowed = ", ".join(sorted(ALLOWED_MODULES))
            return f"import {module}: a program may import only {allowed}"
    return None


def _is_fstring(text: str) -> bool:
    prefix = text[: len(text) - len(text.lstrip("rRbBuUfF"))]
    return "f" in prefix.lower()


def _fstring_fields(text: str) -> str:
    """The expressions of an f-string token, run together (the literal text left out)."""
    body = text.replace("{{", "").replace("}}", "")
    return " ".join(re.findall(r"\{([^{}]*)\}", body))


def _refused(line: int, what: str) -> ProgramFailed:
    return ProgramFailed(f"line {line}: {what}.", line=line)


class Sandbox:
    """Runs programs, at most `max_programs` at once, each in a Monty worker process of its own."""

    def __init__(self, *, max_programs: int) -> None:
        self._threads = anyio.CapacityLimiter(max_programs)

    async def run(self, code: str, host: Host, limits: Limits) -> Outcome:
        """Run `code` to its end and return what it printed and its last value; a failure is `ProgramFailed`
        (`ProgramLimitExceeded` for a limit), a worker that cannot start `SandboxUnavailable`."""
        problem = refusal(code)
        if problem is not None:
            raise problem
        driver = _Driver(code, host, limits)
        try:
            with anyio.fail_after(limits.timeout):
                # Monty's blocking API, in a thread of this limiter: its pool never calls back into the event
                # loop on its own (the async API's runtime can wake a closed loop at exit, which aborts).
                return await anyio.to_thread.run_sync(driver.run, abandon_on_cancel=True, limiter=self._threads)
        except TimeoutError:
            raise driver.limit(timed_out(limits.timeout), line=driver.line) from None
        finally:
            driver.stop()


def timed_out(timeout: float) -> str:
    """What a program stopped at its deadline is told."""
    return (
        f"the program ran longer than its {timeout:g} s (code.timeout, or run_code's timeout up to "
        "code.maxTimeout): it was stopped"
    )


@dataclass
class _Pending:
    call: HostCall
    result: dict[str, Any] | None = None
    stop: ToolscoutError | None = None
    """What stops the whole program instead (a limit, a refusal the host says no program gets past)."""


KILL_GRACE = 2.0
"""Seconds past a program's timeout after which the pool itself kills its worker, should the gateway not have."""


@dataclass
class _Driver:
    """One program's run, in a worker thread: its worker process, its snapshots answered one by one.

    Host calls cross to the event loop (`anyio.from_thread.run`), all those one snapshot waits on in one
    crossing, under cancel scopes `stop` cancels; `stop` also kills the worker process, which ends the
    thread's wait at once: nothing of a program outlives its `run_code` call.
    """

    code: str
    host: Host
    limits: Limits
    calls: int = 0
    line: int | None = None
    """The program's line last seen suspended (where a deadline found it, roughly)."""
    _objects: dict[UUID, str] = field(default_factory=dict[UUID, str])
    _pending: dict[int, _Pending] = field(default_factory=dict[int, _Pending])
    _source: bytes = b""
    _pid: int | None = None
    _stopped: bool = False
    _finished: bool = False
    _scopes: set[anyio.CancelScope] = field(default_factory=set[anyio.CancelScope])

    def stop(self) -> None:
        """End the program wherever it is (on the event loop: its host calls are cancelled, its worker killed)."""
        self._stopped = True
        for scope in self._scopes:
            scope.cancel()
        if self._pid is not None and not self._finished:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._pid, signal.SIGKILL)

    def run(self) -> Outcome:
        import pydantic_monty as monty  # (a Rust extension: loaded with the first program, not with the modes)

        self._source = self.code.encode()
        printed = _Printed(self.limits.max_print_chars)
        try:
            limits = monty.ResourceLimits(
                max_feed_duration_secs=self.limits.timeout,
                max_memory=self.limits.max_memory,
                max_recursion_depth=MAX_RECURSION_DEPTH,
                max_suspensions=4 * self.limits.max_calls + 1000,
            )
            pool = monty.Monty(min_processes=1, max_processes=1, request_timeout=self.limits.timeout + KILL_GRACE)
            policy = monty.OSPolicy(sleep="zero")
            with pool, pool.checkout(script_name="program.py", limits=limits, os_policy=policy) as session:
                self._pid = session.worker_pid
                if self._stopped:
                    raise anyio.get_cancelled_exc_class()()
                session.feed_run(PRELUDE)
                snapshot = session.feed_start(self.code, print_callback=printed)
                while not isinstance(snapshot, monty.MontyComplete):
                    snapshot = self._answer(snapshot)
                return Outcome(printed.output, snapshot.output, self.calls, printed.dropped)
        except monty.MontyCrashedError as exc:
            if self._stopped:
                raise anyio.get_cancelled_exc_class()() from None
            raise SandboxUnavailable(f"the sandbox's worker process stopped under the program: {exc}") from None
        except monty.MontyError as exc:
            raise self._failure(exc, printed.output) from None
        except FileNotFoundError as exc:
            raise SandboxUnavailable(
                f"pydantic-monty's worker binary was not found ({exc}): reinstall toolscout with its dependencies."
            ) from None
        finally:
            self._finished = True

    def _answer(self, snapshot: Any) -> Any:
        import pydantic_monty as monty

        position = snapshot.position
        self.line = self._line_of(position.start) if position.filename == _PROGRAM_FILE else self.line
        if isinstance(snapshot, monty.NameLookupSnapshot):
            return snapshot.resume(**self._lookup(snapshot.variable_name))
        if isinstance(snapshot, monty.FunctionSnapshot):
            if snapshot.is_os_function:
                raise ProgramFailed(
                    f"line {self.line}: {snapshot.function_name} is refused: a program has no files, "
                    "environment or network; it reaches the outside only through the tools.",
                    line=self.line,
                )
            receiver = self._objects.get(snapshot.object_id) if snapshot.object_id is not None else None
            self.calls += 1
            if self.calls > self.limits.max_calls:
                raise self.limit(
                    f"line {self.line}: the program made more than {self.limits.max_calls} tool calls "
                    "(code.maxToolCalls): it was stopped",
                    line=self.line,
                )
            call = HostCall(receiver, str(snapshot.function_name), snapshot.args, dict(snapshot.kwargs), self.line)
            self._pending[snapshot.call_id] = _Pending(call)
            return snapshot.resume({"future": ...})
        if isinstance(snapshot, monty.FutureSnapshot):
            waiting = [self._pending[i] for i in snapshot.pending_call_ids if i in self._pending]
            anyio.from_thread.run(self._settle_all, waiting)
            stop = next((p.stop for p in waiting if p.stop is not None), None)
            if stop is not None:
                raise stop
            results = {i: self._pending.pop(i).result for i in snapshot.pending_call_ids if i in self._pending}
            return snapshot.resume(cast(Any, results))
        raise SandboxUnavailable(f"the sandbox stopped in a state toolscout does not know: {type(snapshot).__name__}")

    def _lookup(self, name: str) -> dict[str, Any]:
        """How to resume a lookup of the undefined `name`: a host object or function, else nothing (`NameError`)."""
        import pydantic_monty as monty

        key = self.host.objects().get(name)
        if key is not None:
            wrapped = monty.ClassInstance(ToolServer())
            self._objects[wrapped.id] = key
            return {"value": wrapped}
        if name in self.host.functions():
            return {"value": _host_function(name)}
        return {}

    async def _settle_all(self, waiting: list[_Pending]) -> None:
        """Answer the calls a snapshot waits on, together, on the event loop (in the request's context)."""
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            if self._stopped:
                scope.cancel()
            try:
                async with anyio.create_task_group() as group:
                    for pending in waiting:
                        group.start_soon(self._settle, pending)
            finally:
                self._scopes.discard(scope)
        if scope.cancelled_caught or self._stopped:
            raise anyio.get_cancelled_exc_class()()

    async def _settle(self, pending: _Pending) -> None:
        try:
            value = await self.host.call(pending.call)
        except CallFailed as exc:
            pending.result = {"exc_type": "RuntimeError", "message": exc.message}
        except ToolscoutError as exc:
            pending.stop = exc
        else:
            pending.result = {"return_value": value}

    def _line_of(self, offset: int) -> int:
        return self._source[:offset].count(b"\n") + 1

    def limit(self, message: str, *, line: int | None) -> ProgramLimitExceeded:
        return ProgramLimitExceeded(f"{message}.", line=line, tool_calls=self.calls)

    def _failure(self, exc: Any, printed: str) -> ProgramFailed:
        """A Monty error as the agent reads it: the program's line, Python's own message, what it printed."""
        frames = [f for f in exc.traceback() if f.filename == _PROGRAM_FILE] if hasattr(exc, "traceback") else []
        line = frames[-1].line if frames else None
        source = (frames[-1].source_line or "").strip().splitlines() if frames else []
        message = exc.display("type-msg") if hasattr(exc, "display") else str(exc)
        kind = message.split(":", 1)[0]
        where = f"line {line}: " if line is not None else ""
        text = where + message + (f"\n    {source[0]}" if source else "")
        if printed:
            text += f"\nPrinted before it failed:\n{printed[-2000:]}"
        if kind == "MemoryError":
            return ProgramLimitExceeded(
                f"{text}\nThe program used more memory than it may (code.maxMemory).",
                line=line,
            )
        if kind == "TimeoutError" and "limit exceeded" in message:
            # Monty's own clock and the gateway's deadline end a looping program together: one message.
            return self.limit(timed_out(self.limits.timeout), line=line)
        if kind == "RecursionError":
            return ProgramLimitExceeded(f"{text}\nCalls nest at most {MAX_RECURSION_DEPTH} deep.", line=line)
        return ProgramFailed(text, line=line, tool_calls=self.calls)


def _host_function(name: str) -> Callable[..., Awaitable[None]]:
    """A stand-in the program holds for the host function `name`: its calls come to the driver, never here."""

    async def function(*args: Any, **kwargs: Any) -> None:  # pragma: no cover - never called on the host
        raise RuntimeError(f"{name} is answered by the driver")

    function.__name__ = function.__qualname__ = name
    return function


def identifier(name: str) -> str:
    """`name` as a Python identifier: every other character `_`, a `_` before a leading digit."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    return f"_{text}" if text[0].isdigit() else text


def is_reserved(name: str) -> bool:
    """Whether a program cannot use `name` for a server: a keyword, or a name Python or the sandbox gives."""
    import builtins

    return keyword.iskeyword(name) or hasattr(builtins, name) or name in ALLOWED_MODULES


def rendered(value: Any) -> str:
    """A program's last value as its answer's text: a string as it is, anything else as JSON (else its repr)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)
