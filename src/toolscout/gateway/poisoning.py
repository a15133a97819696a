"""Instructions to the model hidden in a tool's description (tool poisoning): a placeholder.

The detector itself is written on another branch; until it is merged, nothing is flagged.
"""

from __future__ import annotations

import mcp_types


def instructions_in(tool: mcp_types.Tool) -> tuple[str, ...]:
    """Why `tool`'s description reads as instructions to the model, in words for people; empty when clean."""
    return ()
