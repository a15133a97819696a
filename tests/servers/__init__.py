"""Servers the tests run as real MCP upstreams: in process (`Kitchen().server`), or as child processes
(`python -m tests.servers.<name>`, or by file path)."""
