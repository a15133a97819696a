"""The demo servers (templates users copy) do not lock up on hostile input.

Each runs as a real process over stdio, driven by the SDK's client: the files server refuses
named pipes and other non-regular files at once (reading one waited forever for a writer, and 45
such calls took all its threads), and bad paths are tool errors, not tracebacks; the text server
stops a backtracking regular expression at its time bound and keeps answering meanwhile.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import AsyncGenerator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from toolscout.demo.text import MATCH_SECONDS

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def demo(module: str, *args: str, errlog: Path, obey_file_modes: bool = False) -> AsyncGenerator[Client]:
    command = [sys.executable, "-m", f"toolscout.demo.{module}", *args]
    if obey_file_modes:
        # Root reads every file whatever its mode, so a permission error needs root without the
        # two capabilities that override file modes. Still root, it can run this checkout's Python
        # wherever the checkout lives (another user could not enter a 0700 temporary clone).
        dropped = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--bounding-set={dropped}", f"--inh-caps={dropped}", *command]
    params = StdioServerParameters(command=command[0], args=command[1:])
    with errlog.open("w") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            yield client


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.fixture
def root() -> Iterator[Path]:
    # Its own directory, world-readable but for `locked` (mode 0), which the permission cases need.
    root = Path(tempfile.mkdtemp(prefix="ts-files-"))
    root.chmod(0o755)
    (root / "sub").mkdir()
    (root / "note.txt").write_text("hello\n")
    os.mkfifo(root / "pipe")
    (root / "loop").symlink_to("loop")  # a link to itself: ELOOP
    locked = root / "locked"
    locked.mkdir()
    (locked / "secret.txt").write_text("x")
    locked.chmod(0)
    yield root
    locked.chmod(0o700)
    shutil.rmtree(root)


async def test_files_refuses_named_pipes_without_holding_a_thread(root: Path, tmp_path: Path) -> None:
    async with demo("files", "--root", str(root), errlog=tmp_path / "files.log") as client:
        with anyio.fail_after(60):
            # More calls at once than the server has worker threads (40): each one used to wait for
            # a writer forever, and the 41st waited for a thread.
            answers: list[types.CallToolResult] = []

            async def read_pipe() -> None:
                answers.append(await client.call_tool("read_file", {"path": "pipe"}))

            async with anyio.create_task_group() as tg:
                for _ in range(45):
                    tg.start_soon(read_pipe)
            assert len(answers) == 45
            for answer in answers:
                assert answer.is_error and "'pipe' is not a regular file" in text(answer), text(answer)
            ok = await client.call_tool("read_file", {"path": "note.txt"})
            assert not ok.is_error and ok.structured_content is not None
            assert ok.structured_content["content"] == "hello\n"
            # A stat does not open: file_info on the pipe answers as for any path.
            info = await client.call_tool("file_info", {"path": "pipe"})
            assert not info.is_error and info.structured_content is not None
            assert info.structured_content["is_dir"] is False


@pytest.mark.parametrize(
    ("tool", "arguments", "reason"),
    [
        ("read_file", {"path": "a" * 1024}, "too long for the file system"),
        ("file_info", {"path": "a" * 1024}, "too long for the file system"),
        ("list_directory", {"path": "a" * 1024}, "too long for the file system"),
        ("read_file", {"path": "loop"}, "loop of symbolic links"),
        ("read_file", {"path": "locked/secret.txt"}, "permission denied"),
        ("list_directory", {"path": "locked"}, "permission denied"),
        ("read_file", {"path": "sub"}, "is a directory; use list_directory"),
        ("read_file", {"path": "note.txt/more"}, "No such file or directory"),
    ],
)
async def test_files_answers_bad_paths_with_a_tool_error(
    root: Path, tmp_path: Path, tool: str, arguments: dict[str, Any], reason: str
) -> None:
    errlog = tmp_path / "files.log"
    obey_file_modes = reason == "permission denied" and os.geteuid() == 0
    async with demo("files", "--root", str(root), errlog=errlog, obey_file_modes=obey_file_modes) as client:
        with anyio.fail_after(30):
            answer = await client.call_tool(tool, arguments)
    assert answer.is_error and reason in text(answer), text(answer)
    assert str(root) not in text(answer)  # (nothing of where the sandbox is on disk)
    assert "Call list_directory or search_files" in text(answer) or "use list_directory" in text(answer)
    assert "Traceback" not in errlog.read_text()


async def test_text_stops_a_backtracking_pattern_and_keeps_answering(tmp_path: Path) -> None:
    async with demo("text", errlog=tmp_path / "text.log") as client:
        with anyio.fail_after(60):
            answers: dict[str, types.CallToolResult] = {}
            started = anyio.Event()

            async def catastrophic() -> None:
                started.set()
                # `(a|a)+$` defeats the regex module's own guards too: only the time bound stops it.
                answers["slow"] = await client.call_tool("find_matches", {"text": "a" * 40 + "!", "pattern": "(a|a)+$"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(catastrophic)
                await started.wait()
                answers["quick"] = await client.call_tool("word_count", {"text": "still here"})
            issue = await client.call_tool("find_matches", {"text": "a" * 27 + "!", "pattern": "(a+)+$"})
        assert not answers["quick"].is_error
        slow = answers["slow"]
        assert slow.is_error and f"more than {MATCH_SECONDS:g} s to match" in text(slow), text(slow)
        assert "a+ instead of (a+)+" in text(slow)
        # The issue's own pattern: answered (no match), whether by the time bound or the engine's guards.
        assert issue.is_error or issue.structured_content == {"count": 0, "truncated": False, "matches": []}
        found = await client.call_tool(
            "find_matches", {"text": "on 2026-11-25 and 2026-12-01", "pattern": r"\d{4}-\d\d"}
        )
        assert found.structured_content is not None and found.structured_content["count"] == 2


async def test_units_bounds_every_exact_result_so_that_the_answer_can_be_read(tmp_path: Path) -> None:
    async with demo("units", errlog=tmp_path / "units.log") as client:
        with anyio.fail_after(30):
            # Each power is within the limit; their product (38,700 bits) was sent as a JSON number
            # the client's parser refuses, so the call was never answered.
            product = await client.call_tool("calculate", {"expression": "*".join(["(9**1290)"] * 30)})
            sum_ = await client.call_tool("calculate", {"expression": "9**1290 + 1"})
    assert product.is_error and "results are limited to 4096 bits" in text(product), text(product)
    assert not sum_.is_error and sum_.structured_content is not None
    assert str(sum_.structured_content["result"]).endswith("2")  # 9**1290 ends in 1
