"""Demo MCP server "files": read-only access to one folder, sandboxed against escapes.

Run it with ``python -m toolscout.demo.files [--root PATH] [--transport stdio|http|sse]``;
without ``--root`` it serves the sample folder bundled with this package.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import os
import stat
from collections.abc import Generator
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from toolscout.demo._serve import parse_args, serve, tool_doc

SAMPLE_ROOT = Path(__file__).parent / "sample"
MAX_SEARCH_RESULTS = 500

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

RelativePath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        description='Path relative to the sandbox root, with "/" separators, e.g. "recipes/pancakes.md"; '
        '"." is the root itself.',
    ),
]


class Entry(BaseModel):
    """A file or directory inside the sandbox."""

    path: str = Field(description="Path relative to the sandbox root; pass it to the other tools as is.")
    type: Literal["file", "directory"] = Field(description="Whether this is a file or a directory.")
    size: int | None = Field(description="Size in bytes for files; null for directories.")


class DirectoryListing(BaseModel):
    """The result of list_directory."""

    path: str = Field(description="The listed directory, relative to the sandbox root.")
    count: int = Field(description="Number of entries.")
    entries: list[Entry] = Field(description="Directories first, then files, each sorted by name.")


class FileContent(BaseModel):
    """The result of read_file."""

    path: str = Field(description="The file read, relative to the sandbox root.")
    size: int = Field(description="Full size of the file in bytes.")
    truncated: bool = Field(description="True when only the first max_bytes bytes were read.")
    content: str = Field(description="The text, decoded as UTF-8; undecodable bytes appear as U+FFFD.")


class FileInfo(BaseModel):
    """The result of file_info."""

    path: str = Field(description="Path relative to the sandbox root.")
    is_dir: bool = Field(description="True for a directory.")
    size: int = Field(description="Size in bytes (for a directory, as reported by the file system).")
    modified: str = Field(description="Last modification time, ISO 8601 in UTC.")


class SearchResult(BaseModel):
    """The result of search_files."""

    pattern: str = Field(description="The glob pattern searched for.")
    count: int = Field(description="Number of matches returned.")
    truncated: bool = Field(description=f"True when more than {MAX_SEARCH_RESULTS} paths matched.")
    matches: list[Entry] = Field(description="Matching files and directories, sorted by path.")


_OS_REASONS = {
    errno.ENAMETOOLONG: "the path, or one name in it, is too long for the file system",
    errno.ELOOP: "it goes through a loop of symbolic links, or a link that changed while it was opened",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a part of it is a file, not a directory",
    errno.ENOENT: "no such file or directory",
}


@contextlib.contextmanager
def tool_errors(relative: str) -> Generator[None]:
    """Any OSError on ``relative`` as a ToolError that says why and what to do: a bad path is the
    caller's mistake to fix, not a server failure with a traceback."""
    try:
        yield
    except OSError as exc:
        reason = _OS_REASONS.get(exc.errno or 0) or exc.strerror or type(exc).__name__
        raise ToolError(
            f"Cannot use {relative[:200]!r}{'...' if len(relative) > 200 else ''}: {reason}. "
            "Call list_directory or search_files to see what exists."
        ) from None


def open_regular(path: Path, relative: str) -> int:
    """A descriptor of the regular file at ``path``, opened without blocking and without following
    a symlink put in its place since it was resolved; anything else (a directory, a named pipe,
    a device, a socket) is refused. Opening a FIFO for reading would wait for a writer forever,
    and a device such as /dev/zero never ends: each such call would hold one of the server's threads."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ToolError(f"{relative!r} is a directory; use list_directory to see its contents.")
        if not stat.S_ISREG(mode):
            raise ToolError(
                f"{relative!r} is not a regular file (a named pipe, device or socket), so it cannot be read; "
                "read_file reads regular files only."
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Sandbox:
    """Resolves caller-supplied paths, refusing any that lead outside ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"sandbox root is not a directory: {root}")

    def inside(self, path: Path) -> bool:
        """Whether ``path`` exists and, with every symlink followed, lies inside the root."""
        try:
            return path.exists() and path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop on Python < 3.13
            return False

    def resolve(self, relative: str, *, must_exist: bool = True) -> Path:
        """The real path for ``relative``; raises ToolError for escapes and missing paths."""
        try:
            # resolve() follows symlinks, so a link pointing outside is caught by the check below.
            path = (self.root / relative).resolve()
        except RuntimeError:  # a symlink loop (Python < 3.13), told as an OSError is by `tool_errors`
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
        except ValueError as exc:  # (an OSError is the caller's `tool_errors`)
            raise ToolError(f"Invalid path {relative!r}: {exc}.") from exc
        if not path.is_relative_to(self.root):
            raise ToolError(f"{relative!r}: path escapes the sandbox root. Use paths relative to the root.")
        if must_exist and not path.exists():
            raise ToolError(
                f"No such file or directory: {relative!r}. Call list_directory or search_files to see what exists."
            )
        return path

    def display(self, path: Path) -> str:
        """``path`` relative to the root, with "/" separators; a symlink keeps its own name."""
        return PurePosixPath(*path.relative_to(self.root).parts).as_posix() or "."

    def entry(self, path: Path) -> Entry:
        is_dir = path.is_dir()
        return Entry(
            path=self.display(path),
            type="directory" if is_dir else "file",
            size=None if is_dir else path.stat().st_size,
        )


def build_server(root: Path = SAMPLE_ROOT) -> MCPServer[Any]:
    """Create the files server, sandboxed to ``root``."""
    sandbox = Sandbox(root)
    mcp: MCPServer[Any] = MCPServer(
        "files",
        instructions="Read-only access to one folder of files. Explore with list_directory and search_files, "
        "then read with read_file. All paths are relative to that folder; nothing outside it is reachable.",
        version="0.1.0",
    )

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def list_directory(path: RelativePath = ".") -> DirectoryListing:
        """List the files and subdirectories of a directory in the sandbox, with file sizes.

        Start with "." (the root). Entries that are symlinks leading outside the sandbox are left out.
        """
        with tool_errors(path):
            directory = sandbox.resolve(path)
            if not directory.is_dir():
                raise ToolError(f"{path!r} is a file, not a directory; use read_file or file_info on it.")
            children = [c for c in directory.iterdir() if sandbox.inside(c)]
            children.sort(key=lambda c: (not c.is_dir(), c.name.lower()))
            entries = [sandbox.entry(c) for c in children]
        return DirectoryListing(path=sandbox.display(directory), count=len(entries), entries=entries)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def read_file(
        path: RelativePath,
        max_bytes: Annotated[
            int, Field(ge=1, le=1_048_576, description="Read at most this many bytes from the start of the file.")
        ] = 65536,
    ) -> FileContent:
        """Read a text file from the sandbox and return its content as UTF-8 text.

        Files longer than max_bytes are cut off and marked truncated. Bytes that are not valid
        UTF-8 come back as the replacement character, so binary files read as noise.
        """
        with tool_errors(path):
            file = sandbox.resolve(path)
            with os.fdopen(open_regular(file, path), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = f.read(max_bytes)
        truncated = size > len(data)
        # A non-final decode holds back a multi-byte character cut in half by max_bytes instead of mangling it.
        content = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=not truncated)
        return FileContent(path=sandbox.display(file), size=size, truncated=truncated, content=content)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def file_info(path: RelativePath) -> FileInfo:
        """Return the size, last modification time and kind (file or directory) of a path in the sandbox."""
        with tool_errors(path):
            target = sandbox.resolve(path)
            info = target.stat()  # (a stat never blocks, on a named pipe either)
        modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds")
        is_dir = stat.S_ISDIR(info.st_mode)
        return FileInfo(path=sandbox.display(target), is_dir=is_dir, size=info.st_size, modified=modified)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def search_files(
        pattern: Annotated[
            str,
            Field(
                min_length=1,
                max_length=256,
                description='Glob relative to the root: "*" matches within one name, "**" any number of '
                'directories, e.g. "**/*.md" or "data/*.csv".',
            ),
        ],
    ) -> SearchResult:
        """Find files and directories in the sandbox whose paths match a glob pattern.

        "*.md" only looks at the root; use "**/*.md" to search every subdirectory. Matching is
        case-sensitive on most systems. At most 500 paths are returned.
        """
        parts = PurePosixPath(pattern).parts
        if pattern.startswith(("/", "\\")) or ".." in parts:
            raise ToolError(f"{pattern!r}: path escapes the sandbox root. Patterns must stay below the root.")
        try:
            with tool_errors(pattern):
                found = (p for p in sandbox.root.glob(pattern) if sandbox.inside(p))
                paths = sorted(islice(found, MAX_SEARCH_RESULTS + 1), key=sandbox.display)
                matches = [sandbox.entry(p) for p in paths[:MAX_SEARCH_RESULTS]]
        except (ValueError, NotImplementedError) as exc:
            raise ToolError(f"Invalid glob pattern {pattern!r}: {exc}.") from exc
        return SearchResult(
            pattern=pattern, count=len(matches), truncated=len(paths) > MAX_SEARCH_RESULTS, matches=matches
        )

    return mcp


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        default=SAMPLE_ROOT,
        metavar="PATH",
        help="directory to serve, read-only (default: the bundled sample folder)",
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point for ``python -m toolscout.demo.files``."""
    args = parse_args(argv, description=__doc__, add_arguments=_add_arguments)
    root: Path = args.root
    try:
        mcp = build_server(root)
    except OSError as exc:
        raise SystemExit(f"files: cannot serve {root}: {exc}") from exc
    serve(mcp, args=args)


if __name__ == "__main__":
    main()
