"""Safe YAML loading with YAML 1.2 booleans, shared by every reader of YAML files.

PyYAML implements YAML 1.1, where `on`, `off`, `yes` and `no` are booleans: a server called
`off` would silently become `False`. Only `true`/`false` are booleans here.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class Yaml12Loader(yaml.SafeLoader):
    """`yaml.SafeLoader` with YAML 1.2 booleans."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
Yaml12Loader.add_implicit_resolver(  # pyright: ignore[reportUnknownMemberType]
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """Parse YAML text; raises `yaml.YAMLError` (with marks) on bad input."""
    return yaml.load(text, Loader=Yaml12Loader)
