"""Checking tool arguments against the tool's input schema before they leave the gateway."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from toolscout.errors import ArgumentsInvalid

logger = logging.getLogger(__name__)

_MAX_CACHED = 4096


class ArgumentValidator:
    """Validates arguments against input schemas, compiling each schema once.

    A schema that is itself invalid cannot judge arguments; the upstream then
    gets the call unvalidated (and a warning is logged) rather than the tool
    becoming unusable because of its own metadata.
    """

    def __init__(self) -> None:
        # Keyed by id(); the schema object is kept alive in the value so the id cannot be reused.
        self._compiled: dict[int, tuple[dict[str, Any], Validator | None]] = {}

    def _validator(self, schema: dict[str, Any], where: str) -> Validator | None:
        cached = self._compiled.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        cls = validator_for(schema, default=Draft202012Validator)
        validator: Validator | None
        try:
            cls.check_schema(schema)
            validator = cls(schema)
        except SchemaError as exc:
            logger.warning("%s has an invalid input schema (%s); its arguments are not validated", where, exc.message)
            validator = None
        if len(self._compiled) >= _MAX_CACHED:
            self._compiled.clear()
        self._compiled[id(schema)] = (schema, validator)
        return validator

    def validate(self, schema: dict[str, Any], arguments: Mapping[str, Any], *, server: str, tool: str) -> None:
        """Raise `ArgumentsInvalid` listing every violation with its JSON path."""
        validator = self._validator(schema, f"{server}.{tool}")
        if validator is None:
            return
        errors = sorted(
            validator.iter_errors(dict(arguments)), key=lambda e: (list(map(str, e.absolute_path)), e.message)
        )
        if not errors:
            return
        violations = [_violation(e) for e in errors]
        listing = "; ".join(f"{v['path']}: {v['message']}" for v in violations)
        raise ArgumentsInvalid(
            f"Arguments for {server}.{tool} do not match its input schema: {listing}. "
            f"Call get_tool_details for the parameters, then retry.",
            server=server,
            tool=tool,
            violations=violations,
        )


def _violation(error: ValidationError) -> dict[str, str]:
    message = error.message
    if error.validator == "additionalProperties" and len(message) > 200:
        message = message[:197] + "..."
    return {"path": error.json_path, "message": message}
