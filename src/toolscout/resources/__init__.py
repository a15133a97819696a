"""The mirror: every upstream's resources, resource templates and prompts under gateway names.

core.py (`Mirror`: lists, routing, reads, prompts), lists.py (each server's lists, kept and
fetched), list_names.py (the names of those lists), uris.py (the `toolscout://` scheme),
routing.py (a bare URI's server), completions.py, subscriptions.py, and upstreams.py (the
protocol of what the mirror needs from the gateway).
"""
