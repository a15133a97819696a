"""The lists the mirror keeps of every upstream besides tools: their names and what they hold.

The one definition: the mirror, the face (which notice tells a client each list changed) and the
catalog store (which stored lists it reads back) all name the lists by these. A leaf module, so
the persistence layer can use it without importing the mirror itself.
"""

from __future__ import annotations

from typing import Literal

import mcp_types as types
from pydantic import BaseModel

ListName = Literal["resources", "resource_templates", "prompts"]
"""The lists the mirror keeps of every upstream (tools are the catalog's)."""
LIST_NAMES: tuple[ListName, ...] = ("resources", "resource_templates", "prompts")
LIST_ITEMS: dict[ListName, type[BaseModel]] = {
    "resources": types.Resource,
    "resource_templates": types.ResourceTemplate,
    "prompts": types.Prompt,
}
"""What each list holds (the catalog store reads a stored list back as these)."""
