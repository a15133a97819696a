"""The garbage collector during start-up: off while the command starts, on (start-up frozen) once it serves."""

from __future__ import annotations

import gc
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import PYTHON
from toolscout.cli import defer_collection, startup_over

# Runs the `toolscout` entry point after wrapping serve_stdio, to see the collector as serving begins.
SERVE_WATCHED = """
import gc, sys
import toolscout.serve.http as serve
original = serve.serve_stdio
async def serve_stdio(*args, **kwargs):
    # One string: the gateway's log thread writes to stderr too, between two parts of a print.
    print(f"serving: {gc.isenabled()} {gc.get_freeze_count() > 0}", file=sys.stderr)
    return await original(*args, **kwargs)
serve.serve_stdio = serve_stdio
from toolscout.cli import main
sys.argv = ["toolscout", *sys.argv[1:]]
try:
    main()
finally:
    print(f"after: {gc.isenabled()}", file=sys.stderr)
"""


@pytest.fixture
def collector() -> Iterator[None]:
    """Puts the test process's collector back as it was (and unfreezes what a test froze)."""
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


@pytest.mark.usefixtures("collector")
def test_deferred_collection_is_frozen_and_resumed_once() -> None:
    gc.enable()
    defer_collection()
    assert not gc.isenabled()
    made: list[list[int]] = [[] for _ in range(1000)]  # start-up's objects
    startup_over()
    assert gc.isenabled() and gc.get_freeze_count() >= len(made)
    startup_over()  # a second end changes nothing
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    defer_collection()
    startup_over()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize("command", ["serve", "version"])
def test_commands_run_with_the_collector_back_on(tmp_path: Path, command: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    args = ["serve", "--config", str(config)] if command == "serve" else ["version"]
    done = subprocess.run(
        [PYTHON, "-c", SERVE_WATCHED, *args],
        stdin=subprocess.DEVNULL,  # serving ends at once, at EOF
        capture_output=True,
        text=True,
        env={**os.environ, "TOOLSCOUT_CACHE_DIR": str(tmp_path / "cache")},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if command == "serve":
        assert "serving: True True" in done.stderr  # on, with start-up's objects frozen, before the first request
    assert "after: True" in done.stderr
