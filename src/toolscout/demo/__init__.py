"""Small demo MCP servers bundled with toolscout.

They are the upstreams behind ``toolscout serve --demo`` and the test suite, and
templates for writing your own server with the official SDK. Each one runs on its
own with ``python -m toolscout.demo.<name> [--transport stdio|http|sse]``:

- ``notes``: an in-memory notes store (create, get, list, search, update, delete),
  optionally persisted to a JSON file with ``--store PATH``.
- ``units``: unit conversion (length, mass, temperature, time, data) and a safe
  arithmetic calculator.
- ``text``: word counts, case styles, slugs, regex matches and unified diffs.
- ``files``: a read-only file reader sandboxed to ``--root PATH`` (by default the
  bundled ``sample/`` folder).
"""
