"""Presentation for the model: signatures and schema summaries (signatures.py), and the text it
reads, listings in TOON or compact JSON and token counts (text.py). Imports nothing of the gateway
or the MCP server.
"""
