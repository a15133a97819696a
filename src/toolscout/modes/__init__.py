"""The modes: what an agent sees of the gateway's tools, one module per value of `mode:`.

base.py holds the `Surface` protocol and picks the surface the configuration asks for; client.py is
what a surface knows of its client and how the face tells a client that a list changed;
meta_tool.py is how toolscout's own tools declare their arguments and run. Then one module per mode:
discovery.py, compact.py, passthrough.py (with every mode's pinned tools), dynamic.py and smart.py.
"""
