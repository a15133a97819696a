"""The gateway's MCP face: the server and its handlers, the error edge, change notices, sessions,
rounds, and serving it on stdio or HTTP."""
