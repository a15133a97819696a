"""One more process between client and upstream, and nothing else: the floor of any proxy.

    python -m benchmarks.byte_relay stdio <upstream command...>
    python -m benchmarks.byte_relay http <upstream URL>

Not an MCP proxy: it copies bytes, without reading a message. On stdio it starts the upstream and
copies its stdin and stdout lines through; over HTTP it listens on a port of its own (printing
`byte relay at URL` on stderr) and copies each TCP connection to the upstream's host and port.
`benchmarks.proxy_latency` measures it next to the proxies: what a proxy adds above this row is the
cost of handling MCP messages (parsing, validating, dispatching, serialising), not of the extra hop.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from urllib.parse import urlsplit

LINE_LIMIT = 1 << 26


Transform = Callable[[bytes], bytes]


def _as_is(line: bytes) -> bytes:
    return line


async def _copy_lines(reader: asyncio.StreamReader, write: Callable[[bytes], object], transform: Transform) -> None:
    while line := await reader.readline():
        write(transform(line))


async def relay_stdio(command: list[str], down: Transform = _as_is, up: Transform = _as_is) -> None:
    """Start `command` and copy lines: stdin → its stdin through `down`, its stdout → stdout through `up`."""
    child = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT
    )
    assert child.stdin is not None and child.stdout is not None
    stdin = asyncio.StreamReader(limit=LINE_LIMIT)
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)

    def to_stdout(line: bytes) -> None:
        view = memoryview(line)
        while view:
            view = view[os.write(1, view) :]

    try:
        await asyncio.gather(_copy_lines(stdin, child.stdin.write, down), _copy_lines(child.stdout, to_stdout, up))
    finally:
        if child.returncode is None:
            child.terminate()
        await child.wait()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def relay_http(url: str) -> None:
    target = urlsplit(url)
    host, port = target.hostname or "127.0.0.1", target.port or 80

    async def connection(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        await asyncio.gather(
            _copy(client_reader, upstream_writer), _copy(upstream_reader, client_writer), return_exceptions=True
        )

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    relay_port = server.sockets[0].getsockname()[1]
    print(f"byte relay at http://127.0.0.1:{relay_port}{target.path}", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        asyncio.run(relay_stdio(sys.argv[2:]))
    else:
        asyncio.run(relay_http(sys.argv[2]))
