"""Demo MCP server "files": read-only access to one folder, sandboxed against escapes.

Run it with ``python -m toolscout.demo.files [--root PATH] [--transport stdio|http|sse]``;
without ``--root`` it serves the sample folder bundled with this package.
"""

from __future__ import annotations

import argparse
import codecs
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
        except (OSError, RuntimeError, ValueError) as exc:
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
        file = sandbox.resolve(path)
        if file.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_directory to see its contents.")
        size = file.stat().st_size
        with file.open("rb") as f:
            data = f.read(max_bytes)
        truncated = size > len(data)
        # A non-final decode holds back a multi-byte character cut in half by max_bytes instead of mangling it.
        content = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=not truncated)
        return FileContent(path=sandbox.display(file), size=size, truncated=truncated, content=content)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def file_info(path: RelativePath) -> FileInfo:
        """Return the size, last modification time and kind (file or directory) of a path in the sandbox."""
        target = sandbox.resolve(path)
        stat = target.stat()
        modified = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds")
        return FileInfo(path=sandbox.display(target), is_dir=target.is_dir(), size=stat.st_size, modified=modified)

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
            found = (p for p in sandbox.root.glob(pattern) if sandbox.inside(p))
            paths = sorted(islice(found, MAX_SEARCH_RESULTS + 1), key=sandbox.display)
        except (ValueError, NotImplementedError) as exc:
            raise ToolError(f"Invalid glob pattern {pattern!r}: {exc}.") from exc
        matches = [sandbox.entry(p) for p in paths[:MAX_SEARCH_RESULTS]]
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
