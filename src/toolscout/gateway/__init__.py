"""The gateway core: the `Gateway` facade (core.py) and its parts: the upstreams by name
(registry.py), the catalog and its rules (catalog.py), the search index (index.py), the start-up
policy (startup.py), the snapshots answered from at start (snapshots.py) over the SQLite store
(store.py), argument validation, output caps, the audit log and its redaction, list changes."""
