"""Nothing reaches an upstream unless it listed it under that very name and `toolRules` allow it.

The upstream here (tests/servers/loose.py, a real stdio process) looks names up loosely: case,
Unicode NFKC, zero-width characters, spaces and `server__` prefixes are all forgiven, so any
spelling of `delete_everything` would run it. The rules disable that tool, the resource
`loose://secret` and the prompt `wipe`. Whatever a client sends, in every mode and both protocol
eras, the server's own log of the names it was asked for must hold only listed, enabled ones.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from benchmarks.processes import SERVE_READY, running
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.helpers.paths import PYTHON, ROOT
from tests.servers.kitchen import Kitchen
from toolscout.config import GatewayConfig
from toolscout.config.models import ModeName, StdioServerConfig
from toolscout.config.rules import RuleSet
from toolscout.errors import ToolscoutError
from toolscout.gateway.audit import AuditLog
from toolscout.gateway.core import Gateway
from toolscout.resources.core import template_matches
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, UpstreamSpec
from toolscout.upstream.stdio_child import StdioUpstream

LOOSE = ROOT / "tests" / "servers" / "loose.py"
ERAS = ["legacy", "auto"]  # "auto" lands on 2026-07-28
RULES: list[dict[str, Any]] = [
    {"pattern": "*delete*", "enabled": False},
    {"pattern": "loose://secret*", "kind": "resource", "enabled": False},
    {"pattern": "wipe", "kind": "prompt", "enabled": False},
]
ALLOWED: dict[str, Callable[[str], bool]] = {
    "tools/call": lambda name: name == "list_items",
    "resources/read": lambda uri: uri == "loose://public" or template_matches("loose://items/{id}", uri),
    "prompts/get": lambda name: name == "greet",
    "completion/complete": lambda name: name in ("greet", "loose://items/{id}"),
}
"""What the loose server may ever be asked for, by method: exactly what it listed and the rules allow."""


def loose_spec(name: str, log: Path) -> UpstreamSpec:
    config = StdioServerConfig(command=PYTHON, args=[str(LOOSE), "--log", str(log)])
    return UpstreamSpec(name, StdioUpstream(name, config), connect_timeout=30)


def asked(log: Path) -> list[dict[str, str]]:
    """Every request the loose server was sent that names something, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def assert_only_allowed(log: Path) -> None:
    for request in asked(log):
        assert ALLOWED[request["method"]](request["name"]), f"the upstream was asked for {request}"


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# Names a loose lookup takes for another one.
FULLWIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
LOOKALIKE = {"i": "ı", "k": "\u212a", "s": "ſ", "e": "е", "a": "а"}  # dotless i, Kelvin, long s, Cyrillic
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


def mangle(base: str, how: list[int], zero_width: str, prefix: str, suffix: str) -> str:
    out: list[str] = []
    for i, char in enumerate(base):
        match how[i % len(how)]:
            case 1:
                out.append(char.upper())
            case 2:
                out.append(FULLWIDTH.get(char, char))
            case 3:
                out.append(LOOKALIKE.get(char, char.upper()))
            case 4:
                out.append(char + zero_width)
            case _:
                out.append(char)
    return prefix + "".join(out) + suffix


def spellings(bases: list[str]) -> st.SearchStrategy[str]:
    """Other spellings of `bases` (case, fullwidth, look-alikes, zero-width, prefixes, spaces), the
    bases themselves, and any text."""
    mangled = st.builds(
        mangle,
        st.sampled_from(bases),
        st.lists(st.integers(0, 4), min_size=1, max_size=8),
        st.sampled_from(ZERO_WIDTH),
        st.sampled_from(["", "victim__", "VICTIM__", "spare__", "loose__", "x__", " "]),
        st.sampled_from(["", " ", "\t", "\n", "\u200b", "\ufeff", "__"]),
    )
    return st.one_of(mangled, st.sampled_from(bases), st.text(max_size=30))


@dataclass
class Fronts:
    """Clients of every mode and era in front of the loose server (alone, and with a second one)."""

    clients: dict[tuple[str, str], Client]
    """(face, era) → client; faces: discovery, compact, passthrough (one server), passthrough-multi, dynamic."""
    logs: list[Path]
    audit: Path


@asynccontextmanager
async def fronts(tmp: Path) -> AsyncGenerator[Fronts]:
    logs = [tmp / "victim.log", tmp / "spare.log"]
    audit = tmp / "audit.jsonl"
    rules = RuleSet(GatewayConfig.model_validate({"toolRules": RULES}).tool_rules)
    async with AsyncExitStack() as stack:
        alone = await stack.enter_async_context(
            Gateway([loose_spec("victim", logs[0])], rules=rules, audit=AuditLog(audit))
        )
        pair = await stack.enter_async_context(
            Gateway([loose_spec("victim", logs[0]), loose_spec("spare", logs[1])], rules=rules)
        )
        with anyio.fail_after(60):
            await alone.settle()
            await pair.settle()
        clients: dict[tuple[str, str], Client] = {}
        faces: list[tuple[str, Gateway, ModeName]] = [
            ("discovery", alone, "discovery"),
            ("compact", alone, "compact"),
            ("passthrough", alone, "passthrough"),
            ("passthrough-multi", pair, "passthrough"),
            ("dynamic", alone, "dynamic"),
        ]
        for face, gateway, mode in faces:
            for era in ERAS:
                client = Client(build_server(gateway, mode), mode=era)
                clients[(face, era)] = await stack.enter_async_context(client)
        yield Fronts(clients, logs, audit)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, Fronts]]:
    """The gateways and their clients, started once for every example of the properties below."""
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(fronts(tmp_path_factory.mktemp("loose"))) as started,
    ):
        yield portal, started


def result_text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def try_tool(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """What calling `name` answered: its text, or the protocol error's message."""
    try:
        return result_text(await client.call_tool(name, arguments))
    except MCPError as exc:
        return exc.error.message


async def call_every_way(started: Fronts, name: str) -> list[str]:
    """`name` as a tool of the loose server, through every mode and era; the answers."""
    answers: list[str] = []
    for (face, _), client in started.clients.items():
        match face:
            case "discovery":
                answers.append(await try_tool(client, "execute_tool", {"server": "victim", "tool": name}))
            case "compact":
                answers.append(await try_tool(client, "exec", {"server_name": "victim", "tool_name": name}))
            case "passthrough" | "passthrough-multi":
                answers.append(await try_tool(client, name, {}))
                answers.append(await try_tool(client, f"victim__{name}", {}))
            case _:  # dynamic: load it, call it natively, and through execute_tool
                answers.append(await try_tool(client, "load_tools", {"tools": [{"server": "victim", "tool": name}]}))
                answers.append(await try_tool(client, name, {}))
                answers.append(await try_tool(client, f"victim__{name}", {}))
                answers.append(await try_tool(client, "execute_tool", {"server": "victim", "tool": name}))
    return answers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=spellings(["delete_everything", "list_items"]))
def test_a_disabled_tool_never_runs_whatever_its_spelling(live: tuple[BlockingPortal, Fronts], name: str) -> None:
    portal, started = live
    answers = portal.call(call_every_way, started, name)
    assert not any("ran delete_everything" in answer for answer in answers), (name, answers)
    for log in started.logs:
        assert_only_allowed(log)
    # The audit records every refusal as one (an error with the refusal's code), never as "ok".
    for line in audit_lines(started.audit):
        assert line["outcome"] != "ok" or line["tool"] == "list_items", line


def _content_requests(client: Client, name: str) -> list[Awaitable[Any]]:
    def complete(ref: types.PromptReference | types.ResourceTemplateReference) -> Awaitable[Any]:
        return client.complete(ref, {"name": "id", "value": ""})

    return [
        client.read_resource(name),
        client.read_resource(f"toolscout://victim/{name}"),
        client.get_prompt(name),
        client.get_prompt(f"victim__{name}"),
        complete(types.PromptReference(name=name)),
        complete(types.PromptReference(name=f"victim__{name}")),
        complete(types.ResourceTemplateReference(uri=f"toolscout://victim/{name}")),
        complete(types.ResourceTemplateReference(uri=name)),
    ]


async def content_every_way(started: Fronts, name: str) -> None:
    """`name` as a resource URI, prompt and completion reference of the loose server, in both eras."""
    for era in ERAS:
        client = started.clients[("discovery", era)]
        for attempt in _content_requests(client, name):
            with suppress(MCPError):
                await attempt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=spellings(["loose://secret", "wipe", "loose://public", "greet", "loose://items/{id}"]))
def test_disabled_or_unlisted_content_never_reaches_the_upstream(
    live: tuple[BlockingPortal, Fronts], name: str
) -> None:
    portal, started = live
    portal.call(content_every_way, started, name)
    for log in started.logs:
        assert_only_allowed(log)


@pytest.mark.anyio
async def test_the_issue_s_case_is_refused_as_an_unknown_tool_and_audited_as_refused(tmp_path: Path) -> None:
    """The probe that found the bypass: one loose upstream in passthrough, `DELETE_EVERYTHING` called by name."""
    async with fronts(tmp_path) as started:
        for era in ERAS:
            client = started.clients[("passthrough", era)]
            with pytest.raises(MCPError) as raised:
                await client.call_tool("DELETE_EVERYTHING", {})
            error = raised.value.error
            assert error.code == types.INVALID_PARAMS
            assert error.message.startswith("Unknown tool 'DELETE_EVERYTHING'.")
            assert "list_items" in error.message  # what it does offer (delete_everything is not offered)
            assert "delete_everything" not in error.message
            # The listed name is refused as disabled; the one enabled tool still runs.
            disabled = await client.call_tool("delete_everything", {})
            assert disabled.is_error and "TOOL_DISABLED" in str(disabled.structured_content)
            assert result_text(await client.call_tool("list_items", {})) == "ran list_items"
        assert [r["name"] for r in asked(started.logs[0])] == ["list_items", "list_items"]
        records = audit_lines(started.audit)
        refused = [r for r in records if r["tool"] == "DELETE_EVERYTHING"]
        assert len(refused) == 2 and all((r["outcome"], r["code"]) == ("error", "TOOL_NOT_FOUND") for r in refused)


async def _serve_and_call(command: list[str], era: str, url: str | None, errlog: Path) -> None:
    with errlog.open("a") as err:
        if url is None:
            connection: Any = stdio_client(StdioServerParameters(command=command[0], args=command[1:]), errlog=err)
        else:
            connection = url
        async with Client(connection, mode=era) as client:
            await _other_spellings_refused(client)


async def _other_spellings_refused(client: Client) -> None:
    with pytest.raises(MCPError, match="Unknown tool 'DELETE_EVERYTHING'"):
        await client.call_tool("DELETE_EVERYTHING", {})
    with pytest.raises(MCPError, match="Unknown tool 'ｄelete_everything'"):
        await client.call_tool("ｄelete_everything", {})
    assert result_text(await client.call_tool("list_items", {})) == "ran list_items"


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_toolscout_serve_refuses_other_spellings_on_both_faces(tmp_path: Path, transport: str, era: str) -> None:
    """The same through `toolscout serve --mode passthrough` as a real process, over stdio and HTTP."""
    log = tmp_path / "victim.log"
    config = tmp_path / "toolscout.json"
    server = {"command": PYTHON, "args": [str(LOOSE), "--log", str(log)]}
    config.write_text(json.dumps({"mcpServers": {"victim": server}, "toolRules": RULES}))
    command = [PYTHON, "-m", "toolscout", "serve", "--config", str(config), "--mode", "passthrough"]
    with anyio.fail_after(90):
        if transport == "stdio":
            await _serve_and_call(command, era, None, tmp_path / "gateway.log")
        else:
            async with running([*command, "--transport", "http", "--port", "0"], ready=SERVE_READY) as gateway:
                await _serve_and_call(command, era, gateway.match.group(1), tmp_path / "gateway.log")
    assert [r["name"] for r in asked(log)] == ["list_items"]


class HeldKitchen(Kitchen):
    """The kitchen, whose tool listings wait for `release` once it is set (a slow list after a change)."""

    def __init__(self) -> None:
        super().__init__()
        self.release: anyio.Event | None = None
        self.listing = anyio.Event()
        """Set when a held listing has started."""

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self.release is not None:
            self.listing.set()
            await self.release.wait()
        return await super()._list_tools(ctx, params)


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_call_waits_for_the_tool_list_its_server_announced(protocol: str) -> None:
    """A server drops a tool and says its list changed: a call to that tool made before the new
    list arrives is decided on the new list (refused), never sent on the old one."""
    kitchen = HeldKitchen()
    spec = UpstreamSpec("kitchen", InProcessUpstream(kitchen.server), protocol=protocol)
    async with Gateway([spec]) as gateway:
        with anyio.fail_after(10):
            await gateway.settle()
        kitchen.tools = [t for t in kitchen.tools if t.name != "get_weather"]
        kitchen.release = anyio.Event()
        await gateway.execute("kitchen", "learn_trick", {"name": "juggle"})  # announces the change
        with anyio.fail_after(10):
            await kitchen.listing.wait()
        outcome: list[str] = []

        async def call() -> None:
            try:
                await gateway.execute("kitchen", "get_weather", {"city": "Oslo"})
                outcome.append("ran")
            except ToolscoutError as exc:
                outcome.append(exc.code)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.wait_all_tasks_blocked()  # the call has gone as far as it goes before the list
                kitchen.release.set()
        assert outcome == ["TOOL_NOT_FOUND"]
        assert "get_weather" not in [name for name, _ in kitchen.calls]
