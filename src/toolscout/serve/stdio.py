"""The gateway served on this process's own stdin/stdout: one JSON-RPC message a line
(`toolscout.jsonrpc_lines`), answering a line that is not one with its JSON-RPC error
(`invalid_messages.py`), and ending without waiting on a client that does not read.

As the SDK does, while the gateway serves on stdio fd 0 and 1 point at /dev/null and stderr, so
anything that writes to stdout by accident (a library, a child that inherits it) cannot corrupt
the protocol stream.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolscout.jsonrpc_lines import MessageReader, MessageWriter, parse_message
from toolscout.serve.invalid_messages import InvalidMessage, answers, has_id_member

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
    """Answer a line that is not a JSON-RPC message with its JSON-RPC error (invalid_messages.py)."""

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
