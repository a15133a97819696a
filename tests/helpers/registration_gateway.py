"""The names the tests import from here now live in `benchmarks.processes`, shared with the benchmarks.

The tests may import them from there directly; this module only keeps their old imports working.
"""

from __future__ import annotations

from benchmarks.processes import (
    ServedGateway,
    served_gateway,
    servers,
    status_of,
    structured,
    until,
    write_config,
)

__all__ = ["ServedGateway", "served_gateway", "servers", "status_of", "structured", "until", "write_config"]
