"""The gateway's stderr log: never blocks on a full pipe, drops and counts what it cannot keep."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from toolscout.serve.stdio import CLOSE_WAIT_SECONDS, BackgroundStderrHandler


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("toolscout.test", logging.INFO, __file__, 1, message, None, None)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_lines_are_written_whole_and_in_order() -> None:
    read_end, write_end = os.pipe()
    handler = BackgroundStderrHandler(write_end)
    os.close(write_end)  # the handler has its own descriptor
    for n in range(1000):
        handler.emit(_record(f"line {n}"))
    handler.close()
    assert _read_all(read_end).decode().splitlines() == [f"line {n}" for n in range(1000)]
    os.close(read_end)


def test_a_pipe_nobody_reads_never_blocks_the_logger_and_the_loss_is_counted() -> None:
    read_end, write_end = os.pipe()
    handler = BackgroundStderrHandler(write_end, limit=100_000)
    os.close(write_end)
    line = "x" * 1000
    done = threading.Event()
    emitted = 0

    def log_a_lot() -> None:
        nonlocal emitted
        # 2 MB into a 64 KiB pipe and a 100 kB queue, then on until a loss is pending. On a busy machine
        # the writer thread may first run near the end, take the full queue, and let the last lines fit:
        # the lines after it are then the ones dropped (once the pipe is full, nothing drains).
        while emitted < 2000 or (handler.dropped == 0 and emitted < 200_000):
            handler.emit(_record(line))
            emitted += 1
        done.set()

    threading.Thread(target=log_a_lot, daemon=True).start()
    assert done.wait(10), "logging blocked on the full pipe"
    assert handler.dropped > 0  # (counted since the last note about dropped lines)
    # Once the pipe is read again, the next line logged is preceded by the count of the lost ones.
    reader = threading.Thread(target=lambda: read.append(_read_all(read_end)), daemon=True)
    read: list[bytes] = []
    reader.start()
    handler.flush()
    handler.emit(_record("after"))
    handler.close()
    reader.join(10)
    lines = read[0].decode().splitlines()
    assert lines[-1] == "after"
    notes = [n for n in lines if n.startswith("toolscout: ")]
    assert lines[-2] in notes  # the count of the lines lost since the last one written comes first
    assert all(n.endswith(" log lines dropped: stderr was not read fast enough") for n in notes)
    written = [n for n in lines[:-1] if n == line]
    assert len(written) + len(notes) == len(lines) - 1
    dropped = sum(int(n.split()[1]) for n in notes)
    assert len(written) + dropped == emitted  # every line written or counted
    assert dropped > 1000  # a full pipe and queue hold a few hundred: the rest was dropped, not waited for
    os.close(read_end)


def test_closing_with_a_pipe_nobody_reads_returns_in_bounded_time() -> None:
    read_end, write_end = os.pipe()
    handler = BackgroundStderrHandler(write_end)
    os.close(write_end)
    for _ in range(200):
        handler.emit(_record("y" * 1000))
    closed = threading.Event()
    # As logging.shutdown() at exit: flush, then close. One wait for the stuck writer, not one each.
    threading.Thread(target=lambda: (handler.flush(), handler.close(), closed.set()), daemon=True).start()
    assert closed.wait(CLOSE_WAIT_SECONDS + 0.9)
    os.close(read_end)


def test_a_closed_reader_ends_the_log_without_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    errors: list[object] = []

    def thread_failed(args: threading.ExceptHookArgs) -> None:  # the writer thread's
        errors.append(args.exc_value)

    monkeypatch.setattr(threading, "excepthook", thread_failed)
    descriptors = len(os.listdir("/proc/self/fd"))
    read_end, write_end = os.pipe()
    handler = BackgroundStderrHandler(write_end)
    monkeypatch.setattr(handler, "handleError", errors.append)  # what logging would print as "Logging error"
    os.close(write_end)
    os.close(read_end)
    for _ in range(10):
        handler.emit(_record("nobody hears this"))  # EPIPE in the writer thread, nothing raised here
    handler.flush()
    handler.close()
    assert errors == []
    # The writer ended (close() lets go of the handler's own descriptor only once it has): nothing leaks.
    assert len(os.listdir("/proc/self/fd")) == descriptors
