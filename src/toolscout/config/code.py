"""The `code` section: the limits of the programs `run_code` runs (code mode, or `codeTool: true`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel


class CodeConfig(BaseModel):
    """The limits of the programs `run_code` runs (code mode, or `codeTool: true`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    timeout: float = Field(default=30.0, gt=0)
    """Seconds a program may run, wall clock, its tool calls included, unless its call asks for another."""
    max_timeout: float = Field(default=120.0, gt=0)
    """The most seconds a call's `timeout` may ask."""
    max_memory: int = Field(default=64 * 1024 * 1024, ge=1024 * 1024)
    """Bytes of a program's heap."""
    max_tool_calls: int = Field(default=50, ge=1, le=10_000)
    """Tool calls (and `search_tools` calls) one program may make; the next one stops it."""
    max_output_chars: int = Field(default=20_000, ge=100)
    """Characters of the answer's text: what the program printed, then its last value."""
    max_code_chars: int = Field(default=20_000, ge=100, le=1_000_000)
    """Characters of a program."""
    max_programs: int = Field(default=2, ge=1, le=64)
    """Programs running at once, each in a worker process of its own; more wait their turn within their timeout."""
    allow_destructive: bool = False
    """Run tools annotated `destructiveHint: true` (or tagged `dangerous`) without asking the user."""

    @model_validator(mode="after")
    def _timeout_within_maximum(self) -> CodeConfig:
        if self.timeout > self.max_timeout:
            raise ValueError(f"code.timeout ({self.timeout:g}) is over code.maxTimeout ({self.max_timeout:g})")
        return self
