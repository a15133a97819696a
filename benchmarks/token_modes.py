"""Tokens an agent reads in each exposure mode: `tools/list`, and a flow that runs one tool, on real catalogs.

    python -m benchmarks token_modes [--eval-dir ../shared/eval]

Three catalogs behind the gateway, each to an `mcp.Client` over the SDK's in-memory transport
(2025-11-25 era):

* the LiveMCPTool catalog (527 tools, 70 servers), served in process by
  `toolscout.demo.catalog_server`;
* 10,000 tools: the same servers copied under new names;
* five public reference servers together, run as real stdio servers: server-everything,
  server-filesystem and server-memory (npm, tools/npm) and mcp-server-time and mcp-server-git (PyPI).

Counted with o200k_base (`quicktok-v1`): each server's own `tools/list` summed (no gateway);
`tools/list` as a new client receives it in every mode of `ModeName` (`toolscout.serve.server`,
the figures `toolscout tokens` prints); and the text blocks of the results the model reads to
run one tool: search → details → execute (discovery), inspect → exec (compact), the call alone
(passthrough), search → load → the call (dynamic, plus the loaded tool's definition its list
gains). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client

from benchmarks import harness
from benchmarks.search import DEFAULT_EVAL_DIR
from toolscout.config import GatewayConfig
from toolscout.demo.catalog_server import build_server as catalog_server
from toolscout.gateway.core import Gateway
from toolscout.naming import native_names
from toolscout.render.examples import example_arguments
from toolscout.render.signatures import signature
from toolscout.render.text import ENCODING, compact_json, count_tokens, tool_tokens
from toolscout.search import make_backend
from toolscout.search.evaluation import load_catalog_servers
from toolscout.serve.server import build_server
from toolscout.upstream import InProcessUpstream, Status, UpstreamSpec

NPM_BIN = Path(__file__).resolve().parent.parent / "tools" / "npm" / "node_modules" / ".bin"
NOTES = "Meeting notes, 23 November\n- ship the token benchmark\n- review every exposure mode\n"


@dataclass(frozen=True)
class Task:
    """What the agent is asked to do (written for this benchmark, not taken from the eval queries)."""

    query: str
    expect: tuple[str, str] | None = None
    """The tool the search must rank first, when `arguments` are real ones written for it."""
    arguments: dict[str, Any] | None = None
    """Arguments to run it with; None runs the top hit with example arguments from its schema."""


@dataclass(frozen=True)
class Row:
    mode: str
    listed: int | None
    tokens: int | None
    read: int | None
    note: str = ""


def _read(result: types.CallToolResult) -> int:
    return count_tokens("\n".join(b.text for b in result.content if isinstance(b, types.TextContent)))


def _raw(result: types.CallToolResult) -> int:
    # A result without structured content (an upstream's own) has no other form: its text is the payload.
    if result.structured_content is None:
        return _read(result)
    return count_tokens(compact_json(result.structured_content))


async def _discovery_flow(client: Client, task: Task) -> tuple[int, int, dict[str, Any]]:
    """Tokens read in search → details → execute, the same payloads as raw JSON, and the tool used."""
    found = await client.call_tool("search_tools", {"query": task.query, "limit": 5})
    hit = cast(dict[str, Any], (found.structured_content or {})["results"][0])
    if task.expect is not None and (hit["server"], hit["tool"]) != task.expect:
        raise SystemExit(f"{task.query!r} found {hit['server']}/{hit['tool']} first, not {'/'.join(task.expect)}")
    details = await client.call_tool("get_tool_details", {"server": hit["server"], "tool": hit["tool"]})
    schema = cast(dict[str, Any], (details.structured_content or {})["inputSchema"])
    arguments = task.arguments if task.arguments is not None else example_arguments(schema)
    call: dict[str, Any] = {"server": hit["server"], "tool": hit["tool"], "arguments": arguments}
    executed = await client.call_tool("execute_tool", call)
    if executed.is_error and task.arguments is not None:
        raise SystemExit(f"{hit['server']}/{hit['tool']} failed with the task's arguments: {executed.content}")
    results = (found, details, executed)
    return sum(_read(r) for r in results), sum(_raw(r) for r in results), call


async def _compact_flow(client: Client, task: Task, call: dict[str, Any]) -> int:
    """Tokens read in inspect(server, tool) → exec for the tool the discovery flow found."""
    ref = {"server_name": call["server"], "tool_name": call["tool"]}
    inspected = await client.call_tool("inspect", ref)
    executed = await client.call_tool("exec", {**ref, "arguments": call["arguments"]})
    return _read(inspected) + _read(executed)


def _native(call: dict[str, Any]) -> str:
    return native_names([(call["server"], call["tool"])])[(call["server"], call["tool"])]


async def _passthrough_flow(client: Client, task: Task, call: dict[str, Any]) -> int:
    """Tokens read calling the tool directly (its schema is already in tools/list)."""
    return _read(await client.call_tool(_native(call), call["arguments"]))


async def _dynamic_flow(client: Client, task: Task, call: dict[str, Any]) -> int:
    """Tokens read in search → load_tools → the call, plus what loading adds to the client's tools/list."""
    before = tool_tokens((await client.list_tools(cache_mode="bypass")).tools)
    found = await client.call_tool("search_tools", {"query": task.query, "limit": 5})
    loaded = await client.call_tool("load_tools", {"tools": [{"server": call["server"], "tool": call["tool"]}]})
    after = tool_tokens((await client.list_tools(cache_mode="bypass")).tools)
    executed = await client.call_tool(_native(call), call["arguments"])
    return _read(found) + _read(loaded) + (after - before) + _read(executed)


Flow = Callable[[Client, Task, dict[str, Any]], Awaitable[int]]
FLOWS: dict[str, Flow] = {"compact": _compact_flow, "passthrough": _passthrough_flow, "dynamic": _dynamic_flow}


async def measure(make_gateway: Callable[[], Gateway], task: Task) -> tuple[list[Row], list[dict[str, Any]]]:
    """The table's rows for one catalog behind a gateway, and the input schemas of its tools."""
    # Imported here: answer_tokens borrows this module's catalogs and runs against older trees
    # too (`lean --compare`), which have no modes/costs.py.
    from toolscout.modes.costs import mode_tokens, server_costs

    async with make_gateway() as gateway:
        with anyio.fail_after(600):
            await gateway.settle()
        failed = [f"{up.name}: {up.error}" for up in gateway.upstreams if up.status is not Status.CONNECTED]
        if failed:
            raise SystemExit("servers did not connect: " + "; ".join(failed))
        direct = server_costs(gateway)
        costs = await mode_tokens(gateway)
        async with Client(build_server(gateway, "discovery"), mode="legacy") as client:
            read, raw, call = await _discovery_flow(client, task)
        rows = [Row("exposed directly, no gateway", sum(c.tools for c in direct), sum(c.tokens for c in direct), None)]
        for cost in costs:
            if cost.mode == "discovery":
                rows.append(Row(cost.mode, cost.tools, cost.tokens, read))
                rows.append(Row("discovery flow as raw JSON", None, None, raw, f"the text saves {1 - read / raw:.0%}"))
                continue
            flow = FLOWS.get(cost.mode)
            if flow is None:  # a mode this benchmark has no flow for yet: its tools/list still counts
                rows.append(Row(cost.mode, cost.tools, cost.tokens, None))
                continue
            async with Client(build_server(gateway, cost.mode), mode="legacy") as client:
                rows.append(Row(cost.mode, cost.tools, cost.tokens, await flow(client, task, call)))
        schemas = [entry.input_schema for entry in gateway.catalog.tools()]
    return rows, schemas


def catalog_gateway(servers: dict[str, list[types.Tool]]) -> Gateway:
    """The catalog's servers in process, behind a gateway."""
    specs = [UpstreamSpec(name, InProcessUpstream(catalog_server(name, tools))) for name, tools in servers.items()]
    return Gateway(specs, search=make_backend("hybrid", use_cache=False))


def reference_servers(sandbox: Path) -> tuple[GatewayConfig, Task]:
    """The five reference servers as real stdio servers, their files and repository in `sandbox`; a task for them."""
    files, repo = sandbox / "files", sandbox / "repo"
    files.mkdir()
    (files / "notes.txt").write_text(NOTES, encoding="utf-8")
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    # The pinned Node 22 of tools/npm; memory keeps its graph in the sandbox, not in node_modules.
    env = {
        "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MEMORY_FILE_PATH": str(sandbox / "memory.jsonl"),
    }

    def node(name: str, *args: str) -> dict[str, Any]:
        return {"command": str(NPM_BIN / name), "args": list(args), "env": env}

    config = GatewayConfig.model_validate(
        {
            "mcpServers": {
                "everything": node("mcp-server-everything", "stdio"),
                "filesystem": node("mcp-server-filesystem", str(files)),
                "memory": node("mcp-server-memory"),
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
                "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
            }
        }
    )
    task = Task("read a text file", ("filesystem", "read_text_file"), {"path": str(files / "notes.txt")})
    return config, task


def renamed(servers: dict[str, list[types.Tool]], size: int) -> dict[str, list[types.Tool]]:
    """`size` tools: the catalog's servers copied as `<name> #<k>` until there are enough."""
    out: dict[str, list[types.Tool]] = {}
    count, copy = 0, 0
    while count < size:
        for name, tools in servers.items():
            take = tools[: size - count]
            if not take:
                break
            out[name if copy == 0 else f"{name} #{copy}"] = take
            count += len(take)
        copy += 1
    return out


def _ratios(schemas: Iterable[dict[str, Any]], description_len: int) -> list[float]:
    return sorted(
        count_tokens(signature(s, max_description_len=description_len)) / max(1, count_tokens(compact_json(s)))
        for s in schemas
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    args = parser.parse_args()
    live = load_catalog_servers(args.eval_dir / "catalog_livemcpbench.jsonl")
    chat = Task("post a message to a chat channel")
    print(f"## Tokens per mode — {harness.today()}, {ENCODING}")
    print()
    print("| catalog | mode | tools listed | tools/list tokens | tokens read to run one tool |")
    print("|---|---|---|---|---|")
    names: dict[str, str] = {}
    schemas: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="toolscout-tokens-") as sandbox:
        reference, files_task = reference_servers(Path(sandbox).resolve())
        runs: tuple[tuple[str, Callable[[], Gateway], Task], ...] = (
            ("LiveMCPTool", lambda: catalog_gateway(live), chat),
            ("LiveMCPTool copied", lambda: catalog_gateway(renamed(live, 10_000)), chat),
            (
                "five reference servers",
                lambda: Gateway.from_config(reference, search=make_backend("hybrid", use_cache=False)),
                files_task,
            ),
        )
        for label, make_gateway, task in runs:
            started = time.perf_counter()
            rows, schemas[label] = anyio.run(measure, make_gateway, task)
            names[label] = f"{label}, {len(schemas[label]):,} tools"
            for row in rows:
                flow = "—" if row.read is None else str(row.read) + (f" ({row.note})" if row.note else "")
                listed = "—" if row.listed is None else str(row.listed)
                tokens = "—" if row.tokens is None else str(row.tokens)
                print(f"| {names[label]} | {row.mode} | {listed} | {tokens} | {flow} |", flush=True)
            print(f"<!-- {names[label]}: {time.perf_counter() - started:.0f} s -->")
    print()
    print("| signature / raw input schema, tokens | median | p90 | worst |")
    print("|---|---|---|---|")
    for label in ("LiveMCPTool", "five reference servers"):
        for kind, length in (("with descriptions (get_tool_details)", 60), ("types only (search_tools)", 0)):
            ratios = _ratios(schemas[label], length)
            median, p90 = ratios[len(ratios) // 2], ratios[int(len(ratios) * 0.9)]
            print(f"| {names[label]}: {kind} | {median:.2f} | {p90:.2f} | {ratios[-1]:.2f} |")
