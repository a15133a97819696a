"""toolscout: an MCP gateway that lets an agent discover tools instead of carrying all of them."""

__version__ = "0.1.0"
