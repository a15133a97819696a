"""The embedded default configuration: the gateway in front of the bundled demo servers."""

from __future__ import annotations

import sys

from toolscout.config.models import GatewayConfig

DEMO_SERVERS = {
    "notes": "A small notes store: create, find, update and delete notes.",
    "units": "Unit conversion and a safe calculator.",
    "text": "Text utilities: counting, case changes, slugs, regex matches and diffs.",
    "files": "Read-only access to a sandboxed folder of sample files.",
}


def demo_config() -> GatewayConfig:
    """Every demo server over stdio, run by this Python, with a rule that keeps deletes away from agents."""
    return GatewayConfig.model_validate(
        {
            "mcpServers": {
                name: {"command": sys.executable, "args": ["-m", f"toolscout.demo.{name}"], "description": about}
                for name, about in DEMO_SERVERS.items()
            },
            "toolRules": [
                {"pattern": ["delete_*", "/^(drop|remove)_/"], "enabled": False, "tags": ["dangerous"]},
                {"server": "files", "pattern": ["*"], "tags": ["read-only"]},
            ],
        }
    )
