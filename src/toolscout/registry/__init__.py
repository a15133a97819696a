"""The token and registration store (`registry:` in the config): issued tokens, and the servers and
single tools registered at run time into namespaces.

base.py holds the `Registry` seam and its records, sqlite.py the embedded default, redis.py the store
the replicas of a gateway share, and requests.py what the HTTP API and the command line ask of it.
"""
