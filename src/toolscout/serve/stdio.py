"""The gateway served on this process's own stdin/stdout, what it answers a line that is not a valid
JSON-RPC message, and its log on stderr, written so that a client that never reads it cannot stall it.

The protocol stream is one JSON-RPC message a line (`toolscout.jsonrpc_lines`), and serving ends
without waiting on a client that does not read. As the SDK does, while the gateway serves on stdio
fd 0 and 1 point at /dev/null and stderr, so anything that writes to stdout by accident (a library,
a child that inherits it) cannot corrupt the protocol stream.

The SDK drops such a line (it logs it at debug level), so a client that sent a request it waits on
(a batch, `"jsonrpc": "1.0"`, nesting too deep to parse, an id of thousands of digits, a field of
the wrong type) waited forever. JSON-RPC 2.0 says what to answer: -32700 (parse error) for what is
not JSON, -32600 (invalid request) for JSON that is not a request, with the request's id when it
can be made out and `null` otherwise; a response, even a malformed one, is never answered.

Nothing here recurses or takes more than linear time: JSON is parsed by pydantic-core, whose depth
is capped; when that fails, `top_level_id` reads the top-level `"id"` member with an iterative scan
(and `too_deep`, the same scan, tells the HTTP API a body nested too deep before it is parsed).

An MCP client that launches `toolscout serve` owns the other end of its stderr, and many never read
it. Once the pipe's 64 KiB are full, a plain `StreamHandler` blocks the event loop at the next log
line: every call stalls, and so does every stdio upstream whose stderr lines the gateway logs. Here
the lines are written by a thread of their own; while it is blocked, up to `limit` bytes wait, and
lines past that are dropped and counted in a line written once stderr moves again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import threading
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from mcp.shared.message import SessionMessage

from toolscout.jsonrpc_lines import MessageReader, MessageWriter, parse_message

logger = logging.getLogger(__name__)

STDOUT_FLUSH_SECONDS = 0.5
"""How long a response half-written to stdout may take to get out once serving ends."""
EOF_ANSWER_SECONDS = 2.0
"""How long, once stdin has ended, the requests already read may take to be answered before serving
ends (and cancels what is left): `serve < requests.jsonl` gets its answers. An MCP client that
closes stdin to stop the gateway signals it after about as long (the SDK's client: 2 s)."""


_OPEN_ENDED = frozenset({"subscriptions/listen"})
"""Requests that are answered only when the client ends them: never waited for at EOF."""


class _Unanswered:
    """The requests read from the client and not yet answered, so that its EOF can wait for them."""

    def __init__(self) -> None:
        self._ids: set[types.RequestId] = set()
        self._none = anyio.Event()
        self._none.set()

    def read(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            if message.method in _OPEN_ENDED:
                return
            if not self._ids:
                self._none = anyio.Event()
            self._ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # A cancelled request gets no answer (the spec): there is nothing to wait for.
            self._answered((message.params or {}).get("requestId"))

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._answered(message.id)

    def _answered(self, request_id: object) -> None:
        if isinstance(request_id, int | str) and request_id in self._ids:
            self._ids.discard(request_id)
            if not self._ids:
                self._none.set()

    async def wait(self) -> None:
        with anyio.move_on_after(EOF_ANSWER_SECONDS):
            await self._none.wait()


def _parse_text(line: bytes) -> SessionMessage | Exception:
    # As the SDK's stdio_server reads its stdin: undecodable bytes become U+FFFD, not an error.
    message = parse_message(line.decode("utf-8", "replace"))
    if (
        isinstance(message, SessionMessage)
        and isinstance(message.message, types.JSONRPCNotification)
        and b'"id"' in line
        and has_id_member(line)
    ):
        # A request whose id is not a string or an integer (1.5, true, null) parses as a notification,
        # the id dropped; its sender waits for an answer.
        return InvalidMessage("a request with an invalid id")
    return message


def _answering_invalid(writer: MessageWriter) -> Callable[[bytes], Awaitable[None]]:
    """Answer a line that is not a JSON-RPC message with its JSON-RPC error (see `answers`)."""

    async def answer(line: bytes) -> None:
        errors = answers(line.decode("utf-8", "replace"))
        for error in errors:
            logger.debug("answered a line that is not a JSON-RPC message: %s", error.error.message)
            try:
                await writer.send(SessionMessage(error))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return

    return answer


@asynccontextmanager
async def serve_process_stdio() -> AsyncGenerator[tuple[MessageReader, MessageWriter]]:
    """MCP streams over this process's stdin/stdout, restored when the block ends.

    A client that stops reading our stdout (EPIPE) ends the read stream too, as its EOF would. At
    stdin's EOF, the requests already read are answered first (for up to `EOF_ANSWER_SECONDS`).

    Ending never waits on the client: once stdin has ended (and that wait is over), or the block is
    cancelled (a stop signal), a line half-written to a stdout nobody reads gets
    `STDOUT_FLUSH_SECONDS` to get out (twice that at EOF, where the answers still due are written
    too), then is cut, and so is the session's write stream. Without that cut, the task writing it
    (its sender, cancelled, finishes the line) would hold serving open for as long as the client
    does not read.
    """
    wire_in, wire_out = os.dup(0), os.dup(1)
    was_blocking = os.get_blocking(wire_in)
    was_writing_blocking = os.get_blocking(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        unanswered = _Unanswered()
        ending = anyio.Event()

        async def at_eof() -> None:
            await unanswered.wait()
            ending.set()

        reader = MessageReader(wire_in, _parse_text, on_message=unanswered.read, before_eof=at_eof)
        writer = MessageWriter(wire_out, on_broken=reader.end, on_sent=unanswered.sent)
        reader.on_invalid = _answering_invalid(writer)

        async def cut_when_ending() -> None:
            try:
                await ending.wait()
                await anyio.sleep(STDOUT_FLUSH_SECONDS)  # unless serving ends first (this task is then cancelled)
            finally:
                # A response cut in the middle would be garbage to the client; it gets a moment to take it.
                with anyio.move_on_after(STDOUT_FLUSH_SECONDS, shield=True):
                    await writer.flushed()
                writer.abort()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cut_when_ending)
            try:
                yield reader, writer
            finally:
                tg.cancel_scope.cancel()
    finally:
        os.set_blocking(wire_in, was_blocking)
        os.set_blocking(wire_out, was_writing_blocking)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


# Lines that are not JSON-RPC messages

MAX_ID_DIGITS = 19
"""The longest integer id echoed back (int64's): a longer one is answered with `"id": null`."""
_HOW = "Send each JSON-RPC 2.0 message as one JSON object on one line."

_SPACE = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_STRUCTURE = re.compile(r'["{}\[\]]')
_INTEGER = re.compile(rf"-?(?:0|[1-9][0-9]{{0,{MAX_ID_DIGITS - 1}}})(?=[ \t\r\n]*[,}}])")


class InvalidMessage(ValueError):
    """A line that parses as JSON-RPC only by ignoring part of it (a request whose id is not valid)."""


def answers(line: str) -> list[types.JSONRPCError]:
    """The errors to send for `line`, which did not parse as a JSON-RPC message (none for a blank
    line or a response)."""
    if not line.strip():
        return []
    try:
        decoded: Any = pydantic_core.from_json(line)
    except ValueError as exc:
        reason = str(exc)
        return [_error(types.PARSE_ERROR, f"Parse error: {reason}. {_HOW}", top_level_id(line))]
    if isinstance(decoded, list):
        items: list[Any] = decoded  # pyright: ignore[reportUnknownVariableType]
        message = f"Invalid Request: batches are not supported (MCP removed them in 2025-06-18). {_HOW}"
        ids = [_valid_id(item) for item in items if isinstance(item, dict) and _is_request(item)]  # pyright: ignore[reportUnknownArgumentType]
        return [_error(types.INVALID_REQUEST, message, i) for i in ids if i is not None] or [
            _error(types.INVALID_REQUEST, message, None)
        ]
    if not isinstance(decoded, dict):
        return [_error(types.INVALID_REQUEST, f"Invalid Request: a message is a JSON object. {_HOW}", None)]
    fields: dict[str, Any] = decoded  # pyright: ignore[reportUnknownVariableType]
    if not _is_request(fields):
        return []
    return [_error(types.INVALID_REQUEST, f"Invalid Request: {_what_is_wrong(fields)}.", _valid_id(fields))]


def has_id_member(line: str | bytes) -> bool:
    """Whether `line` (valid JSON) is an object with an `id` member."""
    try:
        decoded: Any = pydantic_core.from_json(line)
    except ValueError:
        return False
    return isinstance(decoded, dict) and "id" in decoded


def top_level_id(text: str) -> types.RequestId | None:
    """The `id` member of the JSON object `text`, read without parsing the rest (which may be too
    deep, too large, or broken after it): a string, or an integer of at most `MAX_ID_DIGITS`
    digits; None when there is none such. One pass, no recursion."""
    start = _SPACE.match(text).end()  # type: ignore[union-attr]  # (matches the empty string)
    if not text.startswith("{", start):
        return None
    depth, pos = 1, start + 1
    while (found := _STRUCTURE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:  # never closed
                return None
            pos = string.end()
            if depth == 1 and string.group() == '"id"':
                colon = _skip_space(text, pos)
                if text.startswith(":", colon):
                    return _id_at(text, _skip_space(text, colon + 1))
        elif char in "{[":
            depth += 1
            pos += 1
        else:
            depth -= 1
            if depth == 0:
                return None
            pos += 1
    return None


def too_deep(text: str, limit: int) -> bool:
    """Whether the JSON `text` nests objects and arrays more than `limit` deep (strings skipped),
    told before it is parsed: one pass, no recursion, whatever the depth."""
    depth, pos = 0, 0
    while (found := _STRUCTURE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:  # never closed: the parser says so
                return False
            pos = string.end()
            continue
        depth += 1 if char in "{[" else -1
        if depth > limit:
            return True
        pos += 1
    return False


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # (matches the empty string)


def _id_at(text: str, pos: int) -> types.RequestId | None:
    if (string := _STRING.match(text, pos)) is not None:
        try:
            value = json.loads(string.group())
        except ValueError:  # a bad escape
            return None
        return value if isinstance(value, str) else None
    if (integer := _INTEGER.match(text, pos)) is not None:
        return int(integer.group())
    return None


def _is_request(fields: dict[str, Any]) -> bool:
    """Whether a JSON object is meant as a request or notification (what has no `method` and has a
    `result` or an `error` is a response: never answered)."""
    return "method" in fields or not ("result" in fields or "error" in fields)


def _valid_id(fields: dict[str, Any]) -> types.RequestId | None:
    value = fields.get("id")
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**MAX_ID_DIGITS:
        return value
    return None


def _what_is_wrong(fields: dict[str, Any]) -> str:
    if fields.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "id" in fields and _valid_id(fields) is None:
        return f'"id" must be a string or an integer of at most {MAX_ID_DIGITS} digits'
    method = fields.get("method")
    if method is None:
        return 'a request needs a "method"'
    if not isinstance(method, str):
        return '"method" must be a string'
    if "params" in fields and not isinstance(fields["params"], dict):
        return '"params" must be an object'
    return "not a JSON-RPC 2.0 request or notification"


def _error(code: int, message: str, request_id: types.RequestId | None) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


# The log on stderr

DEFAULT_LIMIT = 1 << 20
"""Bytes of log lines kept waiting while stderr is not read; later lines are dropped."""
LINGER_SECONDS = 0.02
"""How long the writer gathers lines after the first before writing them: one wake-up per burst, not
per line, because waking a thread for each line takes event-loop time from every tool call."""
CLOSE_WAIT_SECONDS = 1.0
"""How long closing waits for waiting lines to be written (a reader that never reads must not hold up exit)."""


class BackgroundStderrHandler(logging.Handler):
    """A logging handler that never blocks its caller on a full stderr pipe."""

    def __init__(self, fd: int = 2, *, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__()
        # A descriptor of its own: the line writes go on whatever the process does with fd 2 later.
        self._fd = os.dup(fd)
        self._limit = limit
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._dropped = 0
        self._writing = False
        self._idle = False
        self._flushing = False
        self._stuck = False
        """A flush ran out of time with the writer blocked on a full stderr."""
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._write_lines, name="toolscout stderr log", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Lines dropped since the last note about dropped lines."""
        return self._dropped

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "backslashreplace")
        except Exception:
            self.handleError(record)
            return
        with self._ready:
            if self._closed:
                return
            if self._pending_bytes + len(line) > self._limit:
                self._dropped += 1
                return
            if self._dropped:
                note = f"toolscout: {self._dropped} log lines dropped: stderr was not read fast enough\n".encode()
                self._pending.append(note)
                self._pending_bytes += len(note)
                self._dropped = 0
            self._pending.append(line)
            self._pending_bytes += len(line)
            if self._idle:
                self._ready.notify_all()

    def flush(self) -> None:
        """Wait (a bounded while) until the lines logged so far are written.

        Once a wait has run out, later flushes return at once until stderr moves again: at exit,
        logging flushes and closes every handler, and a reader that never reads costs one wait.
        """
        with self._ready:
            if self._stuck:
                return
            self._flushing = True
            self._ready.notify_all()
            done = self._ready.wait_for(
                lambda: not (self._pending or self._writing) or self._closed, CLOSE_WAIT_SECONDS
            )
            self._flushing = False
            self._stuck = not done

    def close(self) -> None:
        self.flush()
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self._thread.join(0 if self._stuck else CLOSE_WAIT_SECONDS)
        if not self._thread.is_alive():
            os.close(self._fd)
        super().close()

    def _write_lines(self) -> None:
        while True:
            with self._ready:
                self._idle = True
                self._ready.wait_for(lambda: bool(self._pending) or self._closed)
                self._idle = False
                self._ready.wait_for(lambda: self._flushing or self._closed, LINGER_SECONDS)
                if self._closed:
                    return
                chunk = b"".join(self._pending)
                self._pending.clear()
                self._pending_bytes = 0
                self._writing = True
            try:
                view = memoryview(chunk)
                while view:
                    try:
                        view = view[os.write(self._fd, view) :]
                    except BlockingIOError:  # a terminal shared with a non-blocking stdout: wait for room
                        select.select([], [self._fd], [])
            except OSError:  # stderr is gone (the reader closed it): nothing more can be said there
                with self._ready:
                    self._closed = True
                    self._pending.clear()
                    self._ready.notify_all()
                return
            with self._ready:
                self._writing = False
                self._stuck = False
                self._ready.notify_all()
