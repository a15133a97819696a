"""What a surface knows of the client it answers: the seam between the surfaces and the face's sessions."""

from __future__ import annotations

from typing import Protocol


class SurfaceClient(Protocol):
    """What a surface knows of the client it answers (the face's per-client state is one)."""

    loaded: dict[tuple[str, str], None]
    """Tools this client loaded in dynamic mode, as `(server, tool)`, in loading order."""
    modern: bool
    """Whether it speaks 2026-07-28 (no tool list of its own: dynamic mode loads nothing for it)."""

    def mark_tools_changed(self) -> None:
        """Record that this client's tool list changed (the face tells the client)."""
        ...
