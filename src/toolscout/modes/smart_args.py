"""The arguments of `smart_tool_discovery`: spec 004's, plus the explicit second round (`tool`, `arguments`,
`confirm`, and the `confirmation_id` a `confirmation_required` answer proposed)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from toolscout.modes.arguments import ArgsModel, forgive_arguments

MAX_REQUEST_CHARS = 2000
"""As long as a search query may be (`search.maxQueryChars`' default): the request is searched."""

MAX_CONFIRMATION_ID_CHARS = 200
"""Longer than any id the gateway proposes (68 characters): a longer one is refused as it comes."""


class SmartArgs(ArgsModel):
    request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to do, in plain words.")
    context: str | None = Field(None, max_length=MAX_REQUEST_CHARS, description="Details that help.")
    preferred_tools: list[str] | None = None
    confidence_threshold: float | None = Field(None, ge=0.0, le=1.0)
    # 1: run the best tool; more: rank that many, run none.
    max_suggestions: int = Field(1, ge=1, le=10)
    include_reasoning: bool = True
    include_error_details: bool = False
    tool: str | None = Field(None, description="server/tool from an earlier answer: run it with arguments.")
    arguments: dict[str, Any] | None = None
    confirm: bool = False
    confirmation_id: str | None = Field(
        None,
        max_length=MAX_CONFIRMATION_ID_CHARS,
        description="A confirmation_required answer's id: with confirm, runs that call once.",
    )
    max_output_chars: int | None = Field(None, ge=0)

    _forgive = field_validator("arguments", mode="before")(forgive_arguments)
