"""What both sides of the gateway use: its MCP face (`toolscout.face`) and its upstreams
(`toolscout.upstream`), as the SDK's `mcp.shared` is for its client and server."""
