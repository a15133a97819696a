"""What `toolscout serve` runs: the gateway's MCP server and its handlers, its clients and their
sessions, authentication and the guards in front of HTTP, the HTTP API, and serving on stdio or HTTP."""
