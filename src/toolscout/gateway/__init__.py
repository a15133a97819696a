"""The gateway core: the `Gateway` facade (core.py) and its parts: the upstreams by name
(upstreams.py), who sees what (visibility.py), the search index (index.py), the upstreams while
running and at start (runtime.py), the snapshots answered from at start (snapshots.py) over the
catalog store (store.py), tool pins (pins.py), poisoned descriptions (poisoning.py), argument
validation (validation.py), output caps (output_cap.py), the audit log (audit.py) and the
Registry's registrations (registrations.py)."""
