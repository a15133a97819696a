"""The log as JSON lines (`toolscout serve --log-format json`): one object a record, for a log
collector to read without parsing text.

Each line has `timestamp` (ISO 8601, UTC), `level`, `logger` and `message`; `exception` when the
record has a traceback; `trace_id` and `span_id` (hex) while a span is current, as the OpenTelemetry
log data model names them; and any attribute the record was given under a dotted name
(`mcp.method.name`, `gen_ai.tool.name`, `error.type`, `server.name`...), as in the traces. Secrets
are masked as in the text log: the message and traceback by the record factory
(`toolscout.masking.install_log_masking`), the attributes here.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

from toolscout.masking import mask_text


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line (see the module)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if "." in key:  # an attribute given with `extra=`, named as in the traces
                line[key] = mask_text(value) if isinstance(value, str) else value
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            line["trace_id"] = format(context.trace_id, "032x")
            line["span_id"] = format(context.span_id, "016x")
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_text(self.formatException(record.exc_info))
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)
