"""The mirror: every upstream's resources, resource templates and prompts under gateway names.

core.py holds `Mirror` (listing, routing, reads, prompts, completions and the `toolscout://`
scheme); lists.py holds each server's lists, kept and fetched, their names, and what the mirror
needs of the upstreams. The subscriptions to resources live with the MCP server (serve/notifications.py).
"""
