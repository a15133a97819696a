"""The surfaces: what an agent sees of the gateway's tools, one module per mode.

base.py (the `Surface` protocol, mode selection), discovery.py, compact.py, passthrough.py,
dynamic.py; meta_tool.py and arguments.py (toolscout's own tools and their arguments);
digest.py (how the face tells a list changed).
"""
