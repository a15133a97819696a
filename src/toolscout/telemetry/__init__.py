"""What the gateway tells its operator about itself while it runs: Prometheus metrics (metrics.py),
OpenTelemetry traces (tracing.py) and the log's JSON lines (logs.py).

Below everything else: the gateway, its upstreams and its face record into these, and nothing here
knows of them. Attribute and label names follow the OpenTelemetry semantic conventions for MCP
(`mcp.method.name`, `gen_ai.tool.name`, `error.type`), dots becoming underscores in Prometheus.
"""
