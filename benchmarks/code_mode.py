"""Code mode against the meta-tools and FastMCP's CodeMode: tokens, round trips and time for multi-step tasks.

    python -m benchmarks code_mode --install-fastmcp   # once: FastMCP, CodeMode's sandbox, in benchmarks/.venv-fastmcp
    python -m benchmarks code_mode [--repeat 5] [--legs meta,code,fastmcp] [--tasks NAME,...] [--discovery search]

The tasks are `benchmarks/code_mode_tasks.py`'s: 22 requests over the four bundled demo servers (notes,
units, text, files) and three npm reference servers (server-memory, server-filesystem,
server-everything), each needing 2–6 tool calls whose results feed the next. Each runs in three legs,
scripted (the script plays the model; no LLM is involved), each a real MCP client over stdio to a real
child process in front of real upstream processes:

* meta-tools: `toolscout serve --mode discovery`; for each distinct tool the task needs, `search_tools`
  (a verb and an object, limit 5) and `get_tool_details` of the hit, then one `execute_tool` per call,
  the model reading each answer before writing the next request (this process runs the task's program,
  each call in it an `execute_tool`);
* toolscout code mode: `toolscout serve --mode code`; the same discovery, then the whole program in one
  `run_code`;
* FastMCP CodeMode: FastMCP 4.1.6's `create_proxy` over the same seven servers with the `CodeMode`
  transform (its default discovery, `search` and `get_schema`, and `execute` in pydantic-monty's
  sandbox), from its own venv; for each distinct tool `search` (limit 5) and `get_schema`, then the
  program in FastMCP's dialect (`await call_tool("notes_create_note", {...})`, `return` the answer) in
  one `execute`.

With `--discovery search` every leg finds each tool with its search alone, no details call (the
signatures in toolscout's search answers are enough to write the call; FastMCP's `search` is asked
for `detail: detailed`, its parameters and result), the least discovery a model could get by with.

Each leg has its own workspace (a folder, the notes store, server-memory's graph, in a temporary
directory) made fresh for every repetition, and checks each task's answer and the state it leaves, so a
broken leg stops the run instead of reporting figures. Tokens (o200k_base, the project's count) are what
the model has in context for the task: the `tools/list` it is shown, once, plus every request it writes
(the tool's name and its arguments as compact JSON) and the text of every answer it reads; and the
input over the model's turns, one turn per call and one for the reply, each reading the whole context
so far (what a model without prompt caching is billed). Round trips are the tool calls the model
makes. Time is the wall time of a leg's whole task, discovery included, the median over the
repetitions; in each repetition the three legs run each task back to back, in a shuffled order, so
the machine's drift falls on all three alike. Prints Markdown.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks import harness
from benchmarks.code_mode_tasks import (
    QUERIES,
    ROOT,
    TASKS,
    Task,
    Workspace,
    fastmcp_program,
    identifier,
    local_program,
    toolscout_program,
)
from benchmarks.proxy_latency import FASTMCP_VENV, FASTMCP_VERSION, fastmcp_version, install_fastmcp
from toolscout.render.text import ENCODING, compact_json, count_tokens, tool_tokens

PYTHON = sys.executable
LEGS = {"meta": "meta-tools", "code": "code mode", "fastmcp": "FastMCP CodeMode"}
"""Each leg by its short name (`--legs`) and the name the tables give it."""
DIRECTORIES = {"meta": "meta", "code": "code", "fastmcp": "fmcp"}
"""Each leg's workspace under the repetition's: names of one length, as server-filesystem writes paths into answers."""
SEARCH_LIMIT = 5
DISCOVERY = {
    True: "search and details per tool",
    False: "one search per tool, no details (FastMCP's search with `detail: detailed`)",
}
TASK_TIMEOUT = 120

# Run by the FastMCP venv's Python: `-c FASTMCP_CODE_MODE <config.json>`, serving stdio.
FASTMCP_CODE_MODE = """
import json, sys
import anyio
from fastmcp import Client
from fastmcp.experimental.transforms.code_mode import CodeMode
from fastmcp.server import create_proxy

with open(sys.argv[1], encoding="utf-8") as f:
    config = json.load(f)

async def main():
    async with Client(config) as backend:
        proxy = create_proxy(backend, name="fastmcp-code-mode")
        proxy.add_transform(CodeMode())
        await proxy.run_async(transport="stdio", show_banner=False)

anyio.run(main)
"""

# What fastmcp-slim's `code-mode` extra requires (pydantic-monty), as the venv's own `packaging` reads it.
CODE_MODE_REQUIREMENTS = """
import importlib.metadata
from packaging.requirements import Requirement

for line in importlib.metadata.requires("fastmcp-slim") or []:
    req = Requirement(line)
    marker = req.marker
    if marker is not None and marker.evaluate({"extra": "code-mode"}) and not marker.evaluate({"extra": ""}):
        print(str(req).split(";")[0])
"""


class LegFailed(Exception):
    """A leg did not do its task: an error answer, a tool its search did not find, a wrong outcome."""


@dataclass
class Run:
    """One leg doing one task once: tokens in the model's context, its tool calls, the wall time."""

    listed: int
    """The `tools/list` the model is shown."""
    discovery: int = 0
    """Written and read in the discovery calls (search, details)."""
    execution: int = 0
    """Written and read in the calls that run the tools (execute_tool, run_code, execute)."""
    discovery_trips: int = 0
    execution_trips: int = 0
    seconds: float = 0.0
    by_tool: dict[str, int] = field(default_factory=dict[str, int])
    """Written and read, by the name of the tool called (search_tools, get_schema, run_code, ...)."""
    turns: int = 0
    """Input over the model's turns: one turn per call and one for the reply, each reading the whole
    context so far (what a model without prompt caching is billed)."""

    @property
    def tokens(self) -> int:
        return self.listed + self.discovery + self.execution

    @property
    def round_trips(self) -> int:
        return self.discovery_trips + self.execution_trips


def read_tokens(result: types.CallToolResult) -> int:
    """Tokens of what the model reads of an answer: its text blocks (any other block as its JSON)."""
    parts = [
        block.text
        if isinstance(block, types.TextContent)
        else compact_json(block.model_dump(by_alias=True, exclude_none=True, mode="json"))
        for block in result.content
    ]
    return count_tokens("\n".join(parts))


def answer_text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def decoded(result: types.CallToolResult) -> Any:
    """A tool's result as a program receives it: structuredContent, else its text as JSON, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    text = answer_text(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Session:
    """One leg's connection while it does a task: every call the model makes, counted."""

    client: Client
    run: Run
    details: bool = True
    """Whether discovery asks each tool's details after its search (`--discovery`)."""

    async def call(self, name: str, arguments: dict[str, Any], *, execution: bool = False) -> types.CallToolResult:
        self.run.turns += self.run.tokens  # the turn that writes this call reads everything so far
        written = count_tokens(name) + count_tokens(compact_json(arguments))
        result = await self.client.call_tool(name, arguments)
        tokens = written + read_tokens(result)
        self.run.by_tool[name] = self.run.by_tool.get(name, 0) + tokens
        if execution:
            self.run.execution += tokens
            self.run.execution_trips += 1
        else:
            self.run.discovery += tokens
            self.run.discovery_trips += 1
        if result.is_error:
            raise LegFailed(f"{name} answered an error: {answer_text(result)[:500]}")
        return result


Script = Callable[[Session, Task], Awaitable[Any]]
"""A leg's script for one task: the model's requests, returning the task's answer."""


async def toolscout_discovery(session: Session, task: Task) -> dict[tuple[str, str], str]:
    """search_tools then get_tool_details for each distinct tool of the task; each tool's name as listed."""
    names: dict[tuple[str, str], str] = {}
    for server, function in task.tools:
        found = await session.call("search_tools", {"query": QUERIES[server, function], "limit": SEARCH_LIMIT})
        content = cast(dict[str, Any], found.structured_content or {})
        hits = cast(list[dict[str, Any]], content.get("results", []))
        hit = next((h for h in hits if h["server"] == server and identifier(h["tool"]) == function), None)
        if hit is None:
            raise LegFailed(f"search_tools({QUERIES[server, function]!r}) did not find {server}/{function}")
        names[server, function] = hit["tool"]
        if session.details:
            await session.call("get_tool_details", {"server": server, "tool": hit["tool"]})
    return names


class _Server:
    """A server as the meta-tools leg's program sees it: each attribute a tool, run with execute_tool."""

    def __init__(self, session: Session, server: str, names: dict[tuple[str, str], str]) -> None:
        self._session, self._server, self._names = session, server, names

    def __getattr__(self, function: str) -> Callable[..., Awaitable[Any]]:
        tool = self._names[self._server, function]

        async def call(**arguments: Any) -> Any:
            executed = await self._session.call(
                "execute_tool", {"server": self._server, "tool": tool, "arguments": arguments}, execution=True
            )
            return decoded(executed)

        return call


async def meta_tools(session: Session, task: Task) -> Any:
    names = await toolscout_discovery(session, task)
    namespace: dict[str, Any] = {server: _Server(session, server, names) for server, _ in task.tools}
    code = compile(local_program(task), f"<{task.name}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    pending = eval(code, namespace)  # the model's own steps between calls, run here
    if pending is not None:
        await pending
    return namespace["answer"]


async def toolscout_code(session: Session, task: Task) -> Any:
    await toolscout_discovery(session, task)
    ran = await session.call("run_code", {"code": toolscout_program(task)}, execution=True)
    # structuredContent is {"output": printed text, "result": the last expression's value, "toolCalls": n}.
    return cast(dict[str, Any], ran.structured_content or {}).get("result")


async def fastmcp_code(session: Session, task: Task) -> Any:
    names: dict[tuple[str, str], str] = {}
    for server, function in task.tools:
        query: dict[str, Any] = {"query": QUERIES[server, function], "limit": SEARCH_LIMIT}
        if not session.details:  # the search answers with each hit's parameters and result, get_schema's "detailed"
            query["detail"] = "detailed"
        found = answer_text(await session.call("search", query))
        heading = "- " if session.details else "### "
        listed = [line[len(heading) :].split(":", 1)[0] for line in found.splitlines() if line.startswith(heading)]
        name = next(
            (n for n in listed if n.startswith(f"{server}_") and identifier(n[len(server) + 1 :]) == function), None
        )
        if name is None:
            raise LegFailed(f"search({QUERIES[server, function]!r}) did not find {server}/{function}: {listed}")
        names[server, function] = name
        if session.details:
            await session.call("get_schema", {"tools": [name]})
    ran = await session.call("execute", {"code": fastmcp_program(task, names)}, execution=True)
    return json.loads(answer_text(ran))


SCRIPTS: dict[str, Script] = {"meta": meta_tools, "code": toolscout_code, "fastmcp": fastmcp_code}
WARM_UP: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "meta": [("search_tools", {"query": "read a file"})],
    "code": [("search_tools", {"query": "read a file"}), ("run_code", {"code": "1 + 1"})],
    "fastmcp": [("search", {"query": "read a file"}), ("execute", {"code": "return 1 + 1"})],
}
"""The calls each leg makes once before it is measured: its search index built, its sandbox loaded."""


@dataclass
class Leg:
    """One leg's running front process, its client and its workspace."""

    name: str
    client: Client
    workspace: Workspace
    listed: int
    details: bool = True


@asynccontextmanager
async def open_leg(name: str, root: Path, fastmcp_python: Path, errlog: TextIO) -> AsyncGenerator[Leg]:
    """Start the leg's front process over fresh upstreams in `root`, connect to it, and warm it up."""
    workspace = Workspace(root)
    workspace.seed()
    servers = workspace.servers()
    env = {"PYTHONPATH": str(ROOT / "src")}
    if name == "fastmcp":
        config = root / "fastmcp.json"
        config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        params = StdioServerParameters(command=str(fastmcp_python), args=["-c", FASTMCP_CODE_MODE, str(config)])
    else:
        config = root / "toolscout.json"
        document = {
            "mcpServers": servers,
            "audit": {"path": str(root / "audit.jsonl")},
            "catalogCache": {"path": str(root / "catalog.sqlite3")},
            # execute_tool and FastMCP's call_tool run destructive tools without asking; so does run_code here.
            "code": {"allowDestructive": True},
        }
        config.write_text(json.dumps(document), encoding="utf-8")
        mode = "discovery" if name == "meta" else "code"
        params = StdioServerParameters(
            command=PYTHON,
            args=["-m", "toolscout", "serve", "--config", str(config), "--mode", mode],
            cwd=str(ROOT),
            env=env,
        )
    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        with anyio.fail_after(120):
            tools = (await client.list_tools()).tools
            for warm_tool, warm_arguments in WARM_UP[name]:
                warmed = await client.call_tool(warm_tool, warm_arguments)
                if warmed.is_error:
                    raise LegFailed(f"{LEGS[name]}: the warm-up call {warm_tool} failed: {answer_text(warmed)[:500]}")
        yield Leg(name, client, workspace, tool_tokens(tools))


async def run_task(leg: Leg, task: Task) -> Run:
    run = Run(leg.listed)
    session = Session(leg.client, run, leg.details)
    started = time.perf_counter()
    try:
        with anyio.fail_after(TASK_TIMEOUT):
            answer = await SCRIPTS[leg.name](session, task)
    except LegFailed as failed:
        raise LegFailed(f"{LEGS[leg.name]}, task {task.name}: {failed}") from failed
    run.seconds = time.perf_counter() - started
    run.turns += run.tokens  # the turn that writes the reply
    problem = task.check(answer, leg.workspace)
    if problem is not None:
        raise LegFailed(f"{LEGS[leg.name]}, task {task.name}: {problem}")
    return run


@dataclass(frozen=True)
class Settings:
    """What one run measures: the tasks, the legs in the tables' order, and how."""

    tasks: list[Task]
    legs: list[str]
    repeat: int
    seed: int
    fastmcp_python: Path
    details: bool
    """Discovery asks each tool's details after its search; else the search alone (`--discovery search`)."""


async def measure(settings: Settings, scratch: Path, errlog: TextIO) -> None:
    tasks, legs = settings.tasks, settings.legs
    runs: dict[tuple[str, str], list[Run]] = {(t.name, leg): [] for t in tasks for leg in legs}
    rng = random.Random(settings.seed)
    loads: list[float] = []
    started = time.perf_counter()
    for rep in range(settings.repeat):
        async with AsyncExitStack() as stack:
            opened: dict[str, Leg] = {}
            for leg in legs:
                root = scratch / f"r{rep}" / DIRECTORIES[leg]
                opened[leg] = await stack.enter_async_context(open_leg(leg, root, settings.fastmcp_python, errlog))
                opened[leg].details = settings.details
            loads.append(harness.load())
            for task in tasks:
                order = legs[:]
                rng.shuffle(order)
                for leg in order:
                    runs[task.name, leg].append(await run_task(opened[leg], task))
        print(f"<!-- repetition {rep + 1} of {settings.repeat} done, load {harness.load():.2f} -->", flush=True)
    took = time.perf_counter() - started
    report(settings, runs, loads, took)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def report(settings: Settings, runs: dict[tuple[str, str], list[Run]], loads: list[float], took: float) -> None:
    tasks, legs, fastmcp_python = settings.tasks, settings.legs, settings.fastmcp_python
    peer = fastmcp_version(fastmcp_python) if "fastmcp" in legs else "not run"
    monty = ", pydantic-monty " + _monty_version(fastmcp_python) if "fastmcp" in legs else ""

    def tokens(task: Task, leg: str, part: Callable[[Run], int] = lambda r: r.tokens) -> int:
        return round(_median([part(r) for r in runs[task.name, leg]]))

    def trips(task: Task, leg: str) -> int:
        return runs[task.name, leg][0].round_trips

    def ms(task: Task, leg: str) -> float:
        return _median([r.seconds for r in runs[task.name, leg]]) * 1000

    print(f"## Code mode — {harness.today()}")
    print()
    print(
        f"{harness.machine_line()}; load {min(loads):.2f}–{max(loads):.2f} at the repetitions' starts; "
        f"peer: {peer}{monty}; tokens: {ENCODING}; discovery: {DISCOVERY[settings.details]}; {len(tasks)} tasks × "
        f"{len(legs)} legs × {settings.repeat} repetitions, interleaved ({took:.0f} s); "
        f"`{' '.join(sys.argv)}` at {harness.commit()}."
    )
    print()
    names = " / ".join(LEGS[leg] for leg in legs)
    print(f"| task | tools (calls) | tokens (of them running the tools): {names} | round trips | ms, median |")
    print("|---|---|---|---|---|")
    for task in tasks:
        cells = [
            task.name,
            f"{len(task.tools)} ({_program_calls(task, runs)})",
            " / ".join(f"{tokens(task, leg)} ({tokens(task, leg, lambda r: r.execution)})" for leg in legs),
            " / ".join(str(trips(task, leg)) for leg in legs),
            " / ".join(f"{ms(task, leg):.0f}" for leg in legs),
        ]
        print("| " + " | ".join(cells) + " |")
        for leg in legs:
            harness.record(f"{task.name}/{leg}/tokens", tokens(task, leg))
            harness.record(f"{task.name}/{leg}/execution tokens", tokens(task, leg, lambda r: r.execution))
            harness.record(f"{task.name}/{leg}/round trips", trips(task, leg))
            harness.record(f"{task.name}/{leg}/ms", round(ms(task, leg), 1))
    print()
    base = legs[0]

    def total(leg: str, part: Callable[[Run], int]) -> int:
        return sum(tokens(t, leg, part) for t in tasks)

    print(
        f"| leg | tools/list tokens | tokens in context, {len(tasks)} tasks | of them discovery "
        "| of them running the tools | input over the turns | round trips | time, sum of the tasks' medians (s) "
        "| median task (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")

    def cell(leg: str, value: Callable[[str], float], form: str) -> str:
        return f"{value(leg):{form}} ({value(leg) / value(base):.2f}×)" if leg != base else f"{value(leg):{form}}"

    def whole(leg: str) -> float:
        return total(leg, lambda r: r.tokens)

    def discovery(leg: str) -> float:
        return total(leg, lambda r: r.discovery)

    def running(leg: str) -> float:
        return total(leg, lambda r: r.execution)

    def turns(leg: str) -> float:
        return total(leg, lambda r: r.turns)

    def trip(leg: str) -> float:
        return sum(trips(t, leg) for t in tasks)

    def spent(leg: str) -> float:
        return sum(ms(t, leg) for t in tasks) / 1000

    for leg in legs:
        cells = [
            LEGS[leg],
            str(runs[tasks[0].name, leg][0].listed),
            cell(leg, whole, ","),
            cell(leg, discovery, ","),
            cell(leg, running, ","),
            cell(leg, turns, ","),
            cell(leg, trip, ".0f"),
            cell(leg, spent, ".2f"),
            f"{_median([ms(t, leg) for t in tasks]):.0f}",
        ]
        print("| " + " | ".join(cells) + " |")
        harness.record(f"total/{leg}/tokens", whole(leg))
        harness.record(f"total/{leg}/discovery tokens", discovery(leg))
        harness.record(f"total/{leg}/execution tokens", running(leg))
        harness.record(f"total/{leg}/input over the turns", turns(leg))
        harness.record(f"total/{leg}/round trips", trip(leg))
        harness.record(f"total/{leg}/seconds", round(spent(leg), 3))
    print()
    for leg in legs:
        called = sorted({name for t in tasks for name in runs[t.name, leg][0].by_tool})
        parts = {name: total(leg, lambda r, name=name: r.by_tool.get(name, 0)) for name in called}
        print(f"- {LEGS[leg]}, tokens by the tool called: " + ", ".join(f"`{n}` {v:,}" for n, v in parts.items()))
        for name, value in parts.items():
            harness.record(f"total/{leg}/tokens of {name}", value)


def _program_calls(task: Task, runs: dict[tuple[str, str], list[Run]]) -> str:
    """How many tool calls the task's program makes: the meta-tools leg's execute_tool calls."""
    meta = runs.get((task.name, "meta"))
    return str(meta[0].execution_trips) if meta else "?"


def _monty_version(python: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('pydantic-monty'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"no pydantic-monty at {python}: run `python -m benchmarks code_mode --install-fastmcp` first")
    return done.stdout.strip()


def install(venv: Path) -> None:
    """FastMCP in `venv` as proxy_latency installs it, then what CodeMode needs (fastmcp-slim's `code-mode` extra)."""
    python = venv / "bin" / "python"
    try:
        fastmcp_version(python)
    except (SystemExit, OSError):  # no FastMCP in it, or no venv at all
        install_fastmcp(venv, FASTMCP_VERSION)
    listed = subprocess.run([str(python), "-c", CODE_MODE_REQUIREMENTS], check=True, capture_output=True, text=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *listed.stdout.split()], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions, each over fresh processes and state")
    parser.add_argument("--legs", default="meta,code,fastmcp", help="which legs, in the tables' order")
    parser.add_argument("--tasks", default="", help="only these tasks (comma-separated names)")
    parser.add_argument("--seed", type=int, default=40, help="seed of the legs' shuffled order")
    parser.add_argument(
        "--discovery",
        choices=["details", "search"],
        default="details",
        help="each tool's search then its details (default), or the search alone",
    )
    parser.add_argument("--fastmcp-python", type=Path, default=FASTMCP_VENV / "bin" / "python")
    parser.add_argument(
        "--install-fastmcp",
        action="store_true",
        help=f"install fastmcp {FASTMCP_VERSION} and its CodeMode sandbox in {FASTMCP_VENV.relative_to(ROOT)} and stop",
    )
    args = parser.parse_args()
    if args.install_fastmcp:
        install(FASTMCP_VENV)
        print(
            fastmcp_version(FASTMCP_VENV / "bin" / "python"),
            "pydantic-monty",
            _monty_version(FASTMCP_VENV / "bin" / "python"),
        )
        return
    legs = [leg.strip() for leg in str(args.legs).split(",") if leg.strip()]
    unknown = [leg for leg in legs if leg not in LEGS]
    if unknown or not legs:
        raise SystemExit(f"--legs takes some of {', '.join(LEGS)}")
    wanted = {name.strip() for name in str(args.tasks).split(",") if name.strip()}
    tasks = [t for t in TASKS if not wanted or t.name in wanted]
    if wanted - {t.name for t in tasks}:
        raise SystemExit(f"no task named {', '.join(sorted(wanted - {t.name for t in tasks}))}")
    if "fastmcp" in legs:
        _monty_version(args.fastmcp_python)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="toolscout-code-mode-") as scratch,
            (Path(scratch) / "children.log").open("w", encoding="utf-8") as errlog,
        ):
            settings = Settings(
                tasks, legs, args.repeat, args.seed, args.fastmcp_python, details=args.discovery == "details"
            )
            anyio.run(measure, settings, Path(scratch).resolve(), errlog)
    except* LegFailed as failed:
        raise SystemExit("; ".join(str(e) for e in failed.exceptions)) from None
