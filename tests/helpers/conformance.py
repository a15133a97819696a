"""The names the tests import from here now live in `benchmarks.conformance`, shared with the benchmarks.

The tests may import them from there directly; this module only keeps their old imports working.
"""

from __future__ import annotations

from benchmarks.conformance import (
    SUITES,
    ConfigName,
    Suite,
    SuiteRun,
    UpstreamName,
    passthrough_gateway,
    run_suite,
    upstream_server,
)

__all__ = [
    "SUITES",
    "ConfigName",
    "Suite",
    "SuiteRun",
    "UpstreamName",
    "passthrough_gateway",
    "run_suite",
    "upstream_server",
]
