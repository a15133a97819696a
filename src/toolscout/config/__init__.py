"""The configuration: its models, and how a file is found and loaded."""

from toolscout.config.loader import load_config, parse_config
from toolscout.config.locations import CONFIG_ENV_VAR, ConfigSource, find_config
from toolscout.config.models import (
    AnyServerConfig,
    GatewayConfig,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
)
from toolscout.config.rules import ToolRule

__all__ = [
    "CONFIG_ENV_VAR",
    "AnyServerConfig",
    "ConfigSource",
    "GatewayConfig",
    "HttpServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "ToolRule",
    "find_config",
    "load_config",
    "parse_config",
]
