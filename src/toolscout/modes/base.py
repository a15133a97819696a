"""The surface of each `mode`, which is what the agent sees of the gateway: the tools it lists and how calls route.

* `discovery` (default): the five meta-tools (discovery.py).
* `passthrough`: every enabled upstream tool as itself, named `server__tool` or by its own name
  (`toolNames`, passthrough.py).
* `dynamic`: the meta-tools plus `load_tools`/`unload_tools`; loaded tools join that client's
  own list as native tools (dynamic.py).
* `smart`: one tool, `smart_tool_discovery`, that takes plain words and runs the right tool (smart.py).
* `code`: `search_tools` and `get_tool_details`, each tool written as the Python call a program makes,
  and `run_code`, which runs the agent's program in a sandbox (code.py, sandbox.py); `codeTool: true`
  adds `run_code` to discovery's and dynamic's meta-tools.
* `compact`: two tools, `inspect(server_name, tool_name?)` and `exec(server_name, tool_name,
  arguments)`, with every server and tool listed in `inspect`'s own description, as MCPX
  does it (compact.py).

The face (`serve/server.py`) asks the surface for its tools on every `tools/list`, with the calling
client's state (serve/sessions.py), so a tool list that depends on the catalog (compact's description)
or on the client (dynamic's loaded tools) is always current.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types

from toolscout.config import GatewayConfig
from toolscout.config.models import (
    DEFAULT_MAX_DESCRIPTION_LEN,
    DEFAULT_MAX_LOADED_TOOLS,
    CodeConfig,
    CompactFormat,
    ExecuteResult,
    ListingFormat,
    LLMConfig,
    ModeName,
    SmartConfig,
    ToolNaming,
)
from toolscout.config.scopes import current_scope
from toolscout.errors import Phrasing
from toolscout.gateway.core import Gateway
from toolscout.gateway.index import import_search_package
from toolscout.modes.client import SurfaceClient
from toolscout.modes.code import CodeSurface, CodeTool, WithCodeTool
from toolscout.modes.compact import CompactSurface
from toolscout.modes.discovery import DiscoverySurface
from toolscout.modes.dynamic import DynamicSurface
from toolscout.modes.passthrough import PassthroughSurface, PinnedTools
from toolscout.modes.smart import SmartDiscovery, SmartSurface, llm_source, memory_path, smart_tool
from toolscout.smart.confirmation import Confirmations


class Surface(Protocol):
    """The tools of one mode and the routing of their calls."""

    instructions: str
    next_steps: Phrasing
    """How an error tells this surface's agent what to do next, in terms of the tools it has."""
    per_client: bool
    """Whether two clients may see different tools (else one list serves them all)."""

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        """The tools `client` sees."""
        ...

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        """The result of `client` calling `name`, or None when this surface has no such tool."""
        ...

    def native(self, name: str) -> bool:
        """Whether `name` stands for an upstream's own tool rather than one of toolscout's.

        An upstream's protocol error (`UpstreamRefused`) on a native tool reaches the client as that
        same JSON-RPC error, as it would without the gateway; on toolscout's own tools it is a failed
        result, with the upstream's code in it.
        """
        ...


@dataclass(frozen=True)
class SurfaceOptions:
    """What the configuration says about the agent's view beyond its mode."""

    max_loaded_tools: int = DEFAULT_MAX_LOADED_TOOLS
    listing_format: ListingFormat = "text"
    execute_result: ExecuteResult = "native"
    """Discovery and dynamic modes: what `execute_tool` answers (`executeResult`)."""
    tool_names: ToolNaming = "auto"
    schema_compression_enabled: bool = True
    """Compact mode: schemas as TypeScript in `inspect`'s text."""
    max_description_len: int = DEFAULT_MAX_DESCRIPTION_LEN
    """Compact mode: the characters of a property's description a TypeScript signature keeps."""
    compact_format: CompactFormat = "toon"
    """Compact mode: TOON in its text, or whichever of TOON and compact JSON is fewer tokens."""
    smart: SmartConfig = field(default_factory=SmartConfig)
    llm: LLMConfig | None = None
    smart_tool: bool = False
    """Discovery mode: `smart_tool_discovery` beside the five meta-tools."""
    memory_path: Path | None = None
    """Where smart mode's learning is kept (None: in memory only, or learning is off)."""
    code_tool: bool = False
    """Discovery and dynamic mode: `run_code` beside the meta-tools."""
    code: CodeConfig = field(default_factory=CodeConfig)
    """The limits of `run_code`'s programs."""
    confirmations: Confirmations | None = None
    """Smart mode's confirmation ids (None: signed and spent in this process alone); the face gives
    one over the Redis registry, so that replicas honour each other's."""

    @classmethod
    def from_config(cls, config: GatewayConfig) -> SurfaceOptions:
        return cls(
            max_loaded_tools=config.max_loaded_tools,
            listing_format=config.listing_format,
            execute_result=config.execute_result,
            tool_names=config.tool_names,
            schema_compression_enabled=config.schema_compression_enabled,
            max_description_len=config.max_description_len,
            compact_format=config.compact_format,
            smart=config.smart,
            llm=config.llm,
            smart_tool=config.smart_tool,
            code_tool=config.code_tool,
            code=config.code,
            memory_path=memory_path(config) if config.smart.enable_learning else None,
        )

    def smart_discovery(self, gateway: Gateway) -> SmartDiscovery:
        """Smart mode's engine over `gateway`, as these options say."""
        import_search_package()  # smart.memory needs search.text, which the index may be importing in a thread
        from toolscout.smart.memory import SmartMemory  # (search.text: numpy, when smart mode is on)

        memory = SmartMemory(self.memory_path)
        confirmations = self.confirmations or Confirmations(ttl=self.smart.confirmation_ttl)
        return SmartDiscovery(
            gateway, self.smart, llm=llm_source(self.llm, self.smart), memory=memory, confirmations=confirmations
        )


class WithPinnedTools:
    """A surface, plus the pinned tools of the request's principal (modes/passthrough.py) after its own."""

    def __init__(self, surface: Surface, gateway: Gateway) -> None:
        self.surface = surface
        self.pinned = PinnedTools(gateway)
        self.instructions = surface.instructions
        self.next_steps = surface.next_steps
        self.per_client = surface.per_client

    async def tools(self, client: SurfaceClient) -> list[types.Tool]:
        tools = await self.surface.tools(client)
        if current_scope().pinned_tools:
            await self.pinned.gateway.settle_startup()  # a pinned server still starting: its moment first
        pinned = self.pinned.tools()
        if not pinned:
            return tools
        own = {tool.name for tool in tools}  # (dynamic mode: a loaded tool that is also pinned, once)
        return [*tools, *(tool for tool in pinned if tool.name not in own)]

    async def call(self, client: SurfaceClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        result = await self.pinned.call(name, arguments)
        return result if result is not None else await self.surface.call(client, name, arguments)

    def native(self, name: str) -> bool:
        return self.surface.native(name) or self.pinned.route(name) is not None


def make_surface(mode: ModeName, gateway: Gateway, options: SurfaceOptions | None = None) -> Surface:
    """Return the surface of `mode` over `gateway`, with each principal's pinned tools.

    Passthrough mode gets no pinned tools: it lists every tool a principal sees natively already.
    """
    options = options or SurfaceOptions()
    match mode:
        case "discovery":
            extra = [smart_tool(options.smart_discovery(gateway))] if options.smart_tool else []
            discovery = DiscoverySurface(
                gateway, listing_format=options.listing_format, execute_result=options.execute_result, extra=extra
            )
            return WithPinnedTools(_with_code_tool(discovery, gateway, options), gateway)
        case "code":
            return WithPinnedTools(CodeSurface(gateway, options.code), gateway)
        case "smart":
            return WithPinnedTools(SmartSurface(gateway, options.smart_discovery(gateway)), gateway)
        case "compact":
            compact = CompactSurface(
                gateway,
                schema_compression_enabled=options.schema_compression_enabled,
                max_description_len=options.max_description_len,
                text_format=options.compact_format,
            )
            return WithPinnedTools(compact, gateway)
        case "passthrough":
            return PassthroughSurface(gateway, naming=options.tool_names)
        case "dynamic":
            dynamic = DynamicSurface(
                gateway,
                max_loaded=options.max_loaded_tools,
                listing_format=options.listing_format,
                execute_result=options.execute_result,
            )
            return WithPinnedTools(_with_code_tool(dynamic, gateway, options), gateway)


def _with_code_tool(surface: Surface, gateway: Gateway, options: SurfaceOptions) -> Surface:
    """`surface`, with `run_code` after its tools when `codeTool` says so."""
    return WithCodeTool(surface, CodeTool(gateway, options.code)) if options.code_tool else surface
