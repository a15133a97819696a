"""Demo MCP server "notes": a small notes store, in memory or persisted to a JSON file.

Run it with ``python -m toolscout.demo.notes [--store notes.json] [--transport stdio|http|sse]``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from toolscout.demo._serve import parse_args, serve, tool_doc

NoteId = Annotated[str, Field(description='The note\'s id, e.g. "1"; list_notes and search_notes return ids.')]
# The description sits on the whole optional type: inside "X | None" pydantic would drop it from the schema.
OptionalTags = Annotated[
    list[str] | None,
    Field(description='Labels for grouping and filtering, e.g. ["work", "ideas"]; matched case-insensitively.'),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class Note(BaseModel):
    """A complete note."""

    id: str = Field(description="Stable identifier, used by get_note, update_note and delete_note.")
    title: str = Field(description="Short title.")
    body: str = Field(description="Free-form text of the note.")
    tags: list[str] = Field(description="Lower-case labels.")
    created_at: str = Field(description="Creation time, ISO 8601 UTC.")
    updated_at: str = Field(description="Last modification time, ISO 8601 UTC.")


class NoteSummary(BaseModel):
    """A note without its body, as listed and searched."""

    id: str = Field(description="Identifier to pass to get_note for the full text.")
    title: str = Field(description="Short title.")
    tags: list[str] = Field(description="Lower-case labels.")
    updated_at: str = Field(description="Last modification time, ISO 8601 UTC.")
    snippet: str | None = Field(default=None, description="For search results: the text around the first match.")


class NoteList(BaseModel):
    """Notes returned by list_notes or search_notes, most recently updated first."""

    count: int = Field(description="Number of notes returned.")
    notes: list[NoteSummary] = Field(description="The matching notes.")


class Deleted(BaseModel):
    """What delete_note removed."""

    id: str = Field(description="Id of the deleted note.")
    title: str = Field(description="Title of the deleted note.")
    remaining: int = Field(description="Number of notes left in the store.")


class _StoreFile(BaseModel):
    next_id: int
    notes: list[Note]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _clean_tags(tags: list[str]) -> list[str]:
    # Lower-cased and de-duplicated so filtering by tag is predictable for a model.
    return list(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))


def _seed() -> list[Note]:
    now = _now()
    return [
        Note(
            id="1",
            title="Groceries for the weekend",
            body="Eggs, milk, flour and blueberries for Saturday pancakes. Coffee beans, lemons and olive oil.",
            tags=["shopping", "home"],
            created_at=now,
            updated_at=now,
        ),
        Note(
            id="2",
            title="Gateway rollout plan",
            body="Put toolscout in front of the team's MCP servers, keep delete tools disabled, "
            "and compare token use before and after.",
            tags=["work", "mcp"],
            created_at=now,
            updated_at=now,
        ),
    ]


class NoteStore:
    """Notes keyed by id; every change is written through to ``path`` when one is given."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        # Sync tools run in worker threads, so concurrent calls must not interleave updates.
        self._lock = threading.Lock()
        self._notes: dict[str, Note] = {}
        self._next_id = 1
        if path is not None and path.exists():
            try:
                data = _StoreFile.model_validate_json(path.read_bytes())
            except (OSError, ValidationError) as exc:
                raise SystemExit(f"notes: cannot read store {path}: {exc}") from exc
            self._notes = {n.id: n for n in data.notes}
            self._next_id = data.next_id
        else:
            self._notes = {n.id: n for n in _seed()}
            self._next_id = len(self._notes) + 1

    def _save(self) -> None:
        if self.path is None:
            return
        payload = _StoreFile(next_id=self._next_id, notes=list(self._notes.values())).model_dump(mode="json")
        # Write a sibling temp file and rename it over the store, so a crash never leaves half a file.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(payload, f, indent=2, ensure_ascii=False)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _require(self, note_id: str) -> Note:
        note = self._notes.get(note_id.strip())
        if note is None:
            raise ToolError(
                f"No note with id {note_id!r}. Call list_notes (optionally filtered by tag) or "
                "search_notes to find the ids of existing notes."
            )
        return note

    def create(self, title: str, body: str, tags: list[str]) -> Note:
        with self._lock:
            now = _now()
            note = Note(
                id=str(self._next_id), title=title, body=body, tags=_clean_tags(tags), created_at=now, updated_at=now
            )
            self._notes[note.id] = note
            self._next_id += 1
            self._save()
            return note

    def get(self, note_id: str) -> Note:
        with self._lock:
            return self._require(note_id)

    def all(self) -> list[Note]:
        with self._lock:
            return sorted(self._notes.values(), key=lambda n: (n.updated_at, len(n.id), n.id), reverse=True)

    def update(self, note_id: str, changes: dict[str, Any]) -> Note:
        with self._lock:
            note = self._require(note_id).model_copy(update={**changes, "updated_at": _now()})
            self._notes[note.id] = note
            self._save()
            return note

    def delete(self, note_id: str) -> Deleted:
        with self._lock:
            note = self._notes.pop(self._require(note_id).id)
            self._save()
            return Deleted(id=note.id, title=note.title, remaining=len(self._notes))


def _summary(note: Note, snippet: str | None = None) -> NoteSummary:
    return NoteSummary(id=note.id, title=note.title, tags=note.tags, updated_at=note.updated_at, snippet=snippet)


def _snippet(note: Note, needle: str, width: int = 60) -> str:
    where = note.body.lower().find(needle)
    if where < 0:
        return note.body[:width] + ("…" if len(note.body) > width else "")
    start = max(0, where - width // 2)
    end = min(len(note.body), where + len(needle) + width // 2)
    return ("…" if start else "") + note.body[start:end] + ("…" if end < len(note.body) else "")


def build_server(store_path: Path | None = None) -> MCPServer[Any]:
    """Create the notes server, backed by ``store_path`` or (when None) by memory only."""
    store = NoteStore(store_path)
    mcp: MCPServer[Any] = MCPServer(
        "notes",
        instructions="A personal notes store. Find notes with list_notes or search_notes, "
        "read one with get_note, and change them with create_note, update_note and delete_note.",
        version="0.1.0",
    )

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    @tool_doc
    def create_note(
        title: Annotated[str, Field(min_length=1, max_length=200, description="Short title of the note.")],
        body: Annotated[str, Field(description="Text of the note; plain text or Markdown.")],
        tags: OptionalTags = None,
    ) -> Note:
        """Create a new note and return it with its assigned id.

        Tags are stored lower-case without duplicates. Creating the same note twice makes two notes.
        """
        return store.create(title.strip(), body, tags or [])

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def get_note(id: NoteId) -> Note:
        """Return one note in full, including its body and timestamps."""
        return store.get(id)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def list_notes(
        tag: Annotated[
            str | None, Field(description="Only notes carrying this tag (case-insensitive); omit for all notes.")
        ] = None,
    ) -> NoteList:
        """List notes as summaries (id, title, tags, last update), most recently updated first.

        Bodies are left out; call get_note with an id for the full text.
        """
        wanted = tag.strip().lower() if tag else None
        notes = [_summary(n) for n in store.all() if wanted is None or wanted in n.tags]
        return NoteList(count=len(notes), notes=notes)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def search_notes(
        text: Annotated[
            str, Field(min_length=1, description="Text to look for in titles and bodies; a plain substring.")
        ],
    ) -> NoteList:
        """Find notes whose title or body contains the given text, ignoring case.

        This is a plain substring match, not a regex or keyword search: "pancake" matches
        "pancakes", but "weekend groceries" only matches that exact phrase. Each result
        carries a snippet of the body around the match.
        """
        needle = text.strip().lower() or text.lower()
        hits = [
            _summary(n, _snippet(n, needle))
            for n in store.all()
            if needle in n.title.lower() or needle in n.body.lower()
        ]
        return NoteList(count=len(hits), notes=hits)

    @mcp.tool(
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        )
    )
    @tool_doc
    def update_note(
        id: NoteId,
        title: Annotated[
            str | None, Field(min_length=1, max_length=200, description="New title; omit to keep the current one.")
        ] = None,
        body: Annotated[str | None, Field(description="New body, replacing the old one; omit to keep it.")] = None,
        tags: Annotated[
            list[str] | None, Field(description="New tags, replacing all current tags; omit to keep them.")
        ] = None,
    ) -> Note:
        """Change a note's title, body or tags and return the updated note.

        Only the fields you pass change; each one you pass replaces the old value entirely
        (to add a tag, pass the full new list).
        """
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title.strip()
        if body is not None:
            changes["body"] = body
        if tags is not None:
            changes["tags"] = _clean_tags(tags)
        if not changes:
            raise ToolError("Nothing to update: pass at least one of title, body or tags.")
        return store.update(id, changes)

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    @tool_doc
    def delete_note(id: NoteId) -> Deleted:
        """Permanently delete a note; this cannot be undone.

        Returns the id and title of the deleted note and how many notes remain.
        """
        return store.delete(id)

    return mcp


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        metavar="PATH",
        help="JSON file to load notes from and save them to (created on first change); default: memory only",
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point for ``python -m toolscout.demo.notes``."""
    args = parse_args(argv, description=__doc__, add_arguments=_add_arguments)
    store: Path | None = args.store
    serve(build_server(store), args=args)


if __name__ == "__main__":
    main()
