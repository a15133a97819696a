"""`MessageReader` and `MessageWriter` (jsonrpc_lines.py) on real pipes: lines, EOF, a full pipe, a peer that left."""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from contextlib import contextmanager, suppress

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from toolscout.jsonrpc_lines import MessageReader, MessageWriter

pytestmark = pytest.mark.anyio

BOUND = 10


@contextmanager
def pipe() -> Generator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    try:
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            with suppress(OSError):  # a test closed it already
                os.close(fd)


def request(request_id: int, text: str = "") -> SessionMessage:
    return SessionMessage(
        types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={"name": "echo", "text": text})
    )


def read_lines(fd: int) -> list[bytes]:
    """Everything left in a pipe whose write end is closed, as lines (blocking: run it in a thread)."""
    os.set_blocking(fd, True)
    data = bytearray()
    while chunk := os.read(fd, 1 << 20):
        data += chunk
    return bytes(data).splitlines(keepends=True)


async def test_lines_across_reads_a_long_line_garbage_and_a_last_line_without_newline() -> None:
    long_text = "x" * 300_000  # several reads of the pipe
    first = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    long_line = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"text": long_text}}).encode()
    last = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    with pipe() as (read_end, write_end):
        reader = MessageReader(read_end)

        def feed() -> None:
            os.write(write_end, first[:10])
            os.write(write_end, first[10:] + b"\n" + long_line[:1000])
            view = memoryview(long_line[1000:] + b"\nnot json\n" + last)
            while view:
                view = view[os.write(write_end, view) :]
            os.close(write_end)

        received: list[SessionMessage | Exception] = []
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, feed)
                async for item in reader:
                    received.append(item)
    assert len(received) == 4
    one, two, bad, initialized = received
    assert isinstance(one, SessionMessage) and isinstance(one.message, types.JSONRPCRequest) and one.message.id == 1
    assert isinstance(two, SessionMessage) and isinstance(two.message, types.JSONRPCRequest)
    assert two.message.params == {"text": long_text}
    assert isinstance(bad, ValueError)
    assert isinstance(initialized, SessionMessage) and isinstance(initialized.message, types.JSONRPCNotification)
    with pytest.raises(anyio.EndOfStream):
        await reader.receive()
    await reader.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await reader.receive()


async def test_end_from_another_task_ends_a_receive_that_waits() -> None:
    with pipe() as (read_end, _write_end):
        reader = MessageReader(read_end)
        ended = False

        async def receive() -> None:
            nonlocal ended
            with pytest.raises(anyio.EndOfStream):
                await reader.receive()
            ended = True

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receive)
                await anyio.wait_all_tasks_blocked()
                reader.end()
        assert ended


async def test_a_line_the_pipe_cannot_take_at_once_stays_whole_when_its_sender_is_cancelled() -> None:
    big = request(1, "y" * 1_000_000)  # far more than a pipe holds
    result: list[bytes] = []
    with pipe() as (read_end, write_end):
        writer = MessageWriter(write_end, on_broken=lambda: None)
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                sending = anyio.CancelScope()

                async def send_big() -> None:
                    with sending:
                        await writer.send(big)

                tg.start_soon(send_big)
                await anyio.wait_all_tasks_blocked()  # the pipe is full: the line is half-written
                sending.cancel()
                tg.start_soon(writer.send, request(2))  # waits for the big line to be finished
                await anyio.wait_all_tasks_blocked()
                lines = anyio.Event()

                async def drain() -> None:
                    result.extend(await anyio.to_thread.run_sync(read_lines, read_end))
                    lines.set()

                tg.start_soon(drain)
                await writer.flushed()
                await writer.send(request(3))
                await writer.aclose()
                os.close(write_end)
                await lines.wait()
    assert [json.loads(line)["id"] for line in result] == [1, 2, 3]
    assert json.loads(result[0])["params"]["text"] == "y" * 1_000_000
    with pytest.raises(anyio.ClosedResourceError):
        await writer.send(request(4))


async def test_abort_cuts_a_half_written_line_and_its_sender_gets_broken_resource() -> None:
    broken: list[bool] = []
    with pipe() as (_read_end, write_end):
        writer = MessageWriter(write_end, on_broken=lambda: broken.append(True))
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:

                async def send_big() -> None:
                    with pytest.raises(anyio.BrokenResourceError):
                        await writer.send(request(1, "z" * 1_000_000))

                tg.start_soon(send_big)
                await anyio.wait_all_tasks_blocked()
                writer.abort()
            await writer.flushed()
    assert broken == [True]


async def test_a_reader_that_left_breaks_the_writer_once_and_ends_the_paired_reader() -> None:
    with pipe() as (to_peer_read, to_peer_write), pipe() as (from_peer_read, _from_peer_write):
        reader = MessageReader(from_peer_read)
        calls: list[bool] = []

        def on_broken() -> None:
            calls.append(True)
            reader.end()

        writer = MessageWriter(to_peer_write, on_broken=on_broken)
        os.close(to_peer_read)  # the peer is gone
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:

                async def receive() -> None:
                    with pytest.raises(anyio.EndOfStream):
                        await reader.receive()

                tg.start_soon(receive)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(anyio.BrokenResourceError):
                    await writer.send(request(1))
            with pytest.raises(anyio.BrokenResourceError):
                await writer.send(request(2))
    assert calls == [True]


async def test_drain_reads_to_eof_after_the_session_has_gone() -> None:
    with pipe() as (read_end, write_end):
        reader = MessageReader(read_end)
        await reader.aclose()
        payload = b"x" * 1_000_000  # a peer that goes on writing more than the pipe holds

        def peer() -> None:
            os.set_blocking(write_end, True)
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view) :]
            os.close(write_end)

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader.drain)
                await anyio.to_thread.run_sync(peer)  # returns only if the drain keeps reading


async def test_before_eof_runs_once_at_the_peers_eof_and_not_when_ended_from_here() -> None:
    waited: list[str] = []

    async def before_eof() -> None:
        waited.append("eof")

    with pipe() as (read_end, write_end):
        reader = MessageReader(read_end, before_eof=before_eof)
        os.write(write_end, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        os.close(write_end)
        with anyio.fail_after(BOUND):
            assert isinstance(await reader.receive(), SessionMessage)
            assert waited == []
            for _ in range(2):
                with pytest.raises(anyio.EndOfStream):
                    await reader.receive()
        assert waited == ["eof"]
    with pipe() as (read_end, _write_end):
        reader = MessageReader(read_end, before_eof=before_eof)
        reader.end()  # a broken pipe on the other side: nobody is left to answer
        with anyio.fail_after(BOUND), pytest.raises(anyio.EndOfStream):
            await reader.receive()
        assert waited == ["eof"]
