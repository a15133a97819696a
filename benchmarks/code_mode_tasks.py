"""The multi-step tasks of the `code_mode` benchmark, the workspace they run in, and their programs in each dialect.

Each task is one program in toolscout's code-mode dialect (`await notes.create_note(title=...)`, the last
expression being the answer), written as a model would write it. The same program is the script of every
leg: the meta-tools leg runs it here, each tool call becoming an `execute_tool` request whose answer the
model reads; toolscout's code mode receives it in one `run_code`; FastMCP's CodeMode receives it rewritten
into its own dialect (`await call_tool("notes_create_note", {...})`, `return` for the answer). The tools a
program calls are found from its syntax tree, so the legs' discovery looks up exactly those.

Every leg runs in a workspace of its own (`Workspace`): a folder the demo `files` server reads and
server-filesystem writes, the notes store's file and server-memory's graph. A task's check reads the
answer and that state, so a leg that did not do the task cannot report figures.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / "tools" / "npm" / "node_modules" / ".bin"
SAMPLE = ROOT / "src" / "toolscout" / "demo" / "sample"
PYTHON = sys.executable

SERVERS = ("notes", "units", "text", "files", "memory", "filesystem", "everything")
"""The upstream servers behind every leg: the four bundled demo servers and three npm reference servers."""

SEED_FILES = {
    "docs/meeting.txt": (
        "Planning meeting, 27 November\n\nAttendees: Ana, Bo, Chen.\n\n"
        "TODO: Ana drafts the release notes by Friday.\nTODO: Bo books the demo room for Tuesday.\n"
        "Decision: ship code mode behind a flag.\n"
    ),
    "docs/retro.txt": (
        "Retro notes\n\nWhat went well: the benchmark ran every night.\n"
        "What to change: fewer flaky tests, shorter reviews.\n"
    ),
    "docs/glossary.txt": (
        "Glossary\n\ngateway: one server in front of many\nmeta-tool: a tool that finds or runs other tools\n"
        "sandbox: where a program runs without reaching the host\n"
    ),
    "lists/todo.txt": "- [ ] ship the benchmark\n- [ ] review code mode\n- [ ] update the docs\n",
    "logs/app.log": (
        "2026-11-27 09:00:01 INFO server: started on port 8080\n"
        "2026-11-27 09:02:13 ERROR database: connection refused\n"
        "2026-11-27 09:02:14 WARN cache: falling back to memory\n"
        "2026-11-27 09:05:40 ERROR auth: token expired for user 42\n"
        "2026-11-27 09:07:02 INFO server: 120 requests served\n"
        "2026-11-27 09:09:55 ERROR database: query timed out after 30 s\n"
    ),
    "drafts/old-plan.txt": "An old plan, kept for the record.\n",
}
"""Files beside the demo's sample files in every workspace; no task writes where another reads."""


@dataclass(frozen=True)
class Workspace:
    """One leg's fresh server state: the shared folder, the notes store and the memory graph."""

    root: Path

    @property
    def folder(self) -> Path:
        """What `files` serves (read-only) and server-filesystem may write: the tasks' paths are relative to it."""
        return self.root / "ws"

    @property
    def notes_file(self) -> Path:
        return self.root / "notes.json"

    @property
    def memory_file(self) -> Path:
        return self.root / "memory.jsonl"

    def seed(self) -> None:
        """Copy the demo's sample files and the tasks' own into a new folder, with `out/` to write in."""
        self.root.mkdir(parents=True)
        shutil.copytree(SAMPLE, self.folder)
        for relative, text in SEED_FILES.items():
            path = self.folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (self.folder / "out").mkdir()

    def read(self, relative: str) -> str | None:
        path = self.folder / relative
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def notes(self) -> list[dict[str, Any]]:
        """The notes store as its server saved it (nothing before the first change: the seed notes only)."""
        if not self.notes_file.exists():
            return []
        return cast(list[dict[str, Any]], json.loads(self.notes_file.read_text(encoding="utf-8"))["notes"])

    def memory(self) -> tuple[dict[str, list[str]], set[tuple[str, str, str]]]:
        """server-memory's graph as saved: each entity's observations, and the relations (from, type, to)."""
        entities: dict[str, list[str]] = {}
        relations: set[tuple[str, str, str]] = set()
        if not self.memory_file.exists():
            return entities, relations
        for line in self.memory_file.read_text(encoding="utf-8").splitlines():
            item = cast(dict[str, Any], json.loads(line))
            if item["type"] == "entity":
                entities[item["name"]] = list(item["observations"])
            elif item["type"] == "relation":
                relations.add((item["from"], item["relationType"], item["to"]))
        return entities, relations

    def servers(self) -> dict[str, dict[str, Any]]:
        """The upstream servers' stdio entries, in the form both toolscout's config and FastMCP's MCPConfig read."""
        python_env = {"PYTHONPATH": str(ROOT / "src")}
        node_env = {"PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

        def demo(name: str, *args: str) -> dict[str, Any]:
            return {"command": PYTHON, "args": ["-m", f"toolscout.demo.{name}", *args], "env": python_env}

        def node(name: str, *args: str, **env: str) -> dict[str, Any]:
            return {"command": str(NPM_BIN / name), "args": list(args), "env": {**node_env, **env}}

        return {
            "notes": demo("notes", "--store", str(self.notes_file)),
            "units": demo("units"),
            "text": demo("text"),
            "files": demo("files", "--root", str(self.folder)),
            "memory": node("mcp-server-memory", MEMORY_FILE_PATH=str(self.memory_file)),
            # Relative paths resolve against the first allowed directory: the programs name files as `files` does.
            "filesystem": {**node("mcp-server-filesystem", str(self.folder)), "cwd": str(self.folder)},
            "everything": node("mcp-server-everything", "stdio"),
        }


Check = Callable[[Any, Workspace], str | None]
"""A task's check: the answer and the leg's workspace after the task, to a problem found (None: done)."""


@dataclass(frozen=True)
class Task:
    """A multi-step request and the program that does it, with what must be true once it is done."""

    name: str
    about: str
    program: str
    check: Check
    tools: tuple[tuple[str, str], ...] = field(init=False)
    """(server, function) of each distinct tool the program calls, in the order it first calls them."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(dict.fromkeys(_calls(ast.parse(self.program)))))


def identifier(tool: str) -> str:
    """A tool's name as a Python function name: every character that cannot be in one becomes `_`."""
    return re.sub(r"\W", "_", tool)


def _server_call(node: ast.AST) -> tuple[str, str] | None:
    """(server, function) when `node` is a call `server.function(...)` of one of the upstream servers."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in SERVERS:
            return func.value.id, func.attr
    return None


def _calls(tree: ast.AST) -> list[tuple[str, str]]:
    """The upstream calls in `tree`, in the order of the source (ast.walk goes breadth first)."""
    found: list[tuple[int, int, tuple[str, str]]] = []
    for node in ast.walk(tree):
        call = _server_call(node)
        if call is not None and isinstance(node, ast.expr):
            found.append((node.lineno, node.col_offset, call))
    return [call for _, _, call in sorted(found)]


def _answer_last(tree: ast.Module, make: Callable[[ast.expr], ast.stmt]) -> ast.Module:
    """The program with its last statement, an expression, turned by `make` into the answer's statement."""
    last = tree.body[-1]
    if not isinstance(last, ast.Expr):
        raise ValueError("a task's program ends with the expression that is its answer")
    tree.body[-1] = ast.copy_location(make(last.value), last)
    return tree


def toolscout_program(task: Task) -> str:
    """The program as toolscout's `run_code` takes it (`await server.tool(...)`, the answer the value of
    the last expression), written out as the other dialects are, so that only the dialect differs."""
    return ast.unparse(ast.parse(task.program))


def fastmcp_program(task: Task, names: dict[tuple[str, str], str]) -> str:
    """The program in FastMCP CodeMode's dialect: `await call_tool("<its tool name>", {...})`, `return` the answer.

    `names` maps each (server, function) to the name FastMCP's proxy lists the tool under.
    """

    class ToCallTool(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            call = _server_call(node)
            if call is None:
                return node
            params = ast.Dict(
                keys=[ast.Constant(k.arg) for k in node.keywords],
                values=[k.value for k in node.keywords],
            )
            return ast.copy_location(
                ast.Call(ast.Name("call_tool", ast.Load()), [ast.Constant(names[call]), params], []), node
            )

    tree = _answer_last(ast.parse(task.program), lambda value: ast.Return(value))
    return ast.unparse(ast.fix_missing_locations(ToCallTool().visit(tree)))


def local_program(task: Task) -> ast.Module:
    """The program as this process runs it for the meta-tools leg: the answer assigned to `answer`."""
    return ast.fix_missing_locations(
        _answer_last(
            ast.parse(task.program), lambda value: ast.Assign([ast.Name("answer", ast.Store())], value, lineno=0)
        )
    )


def _expect(expected: Any, state: Callable[[Workspace], str | None] | None = None) -> Check:
    """A check that the answer is `expected` (as JSON: a tuple reads as a list) and, when given, `state`."""
    wanted = json.loads(json.dumps(expected))

    def check(answer: Any, workspace: Workspace) -> str | None:
        got = json.loads(json.dumps(answer))
        if got != wanted:
            return f"answered {got!r}, not {wanted!r}"
        return state(workspace) if state is not None else None

    return check


def _file(relative: str, text: str) -> Callable[[Workspace], str | None]:
    def state(workspace: Workspace) -> str | None:
        found = workspace.read(relative)
        return None if found == text else f"{relative} holds {found!r}, not {text!r}"

    return state


def _notes(tag: str, titles: list[str]) -> Callable[[Workspace], str | None]:
    def state(workspace: Workspace) -> str | None:
        found = sorted(n["title"] for n in workspace.notes() if tag in n["tags"])
        return None if found == sorted(titles) else f"notes tagged {tag}: {found!r}, not {sorted(titles)!r}"

    return state


def _entities(
    observations: dict[str, list[str]], relations: set[tuple[str, str, str]] | None = None
) -> Callable[[Workspace], str | None]:
    def state(workspace: Workspace) -> str | None:
        entities, saved = workspace.memory()
        for name, wanted in observations.items():
            if entities.get(name) != wanted:
                return f"memory entity {name!r}: {entities.get(name)!r}, not {wanted!r}"
        if relations is not None and not relations <= saved:
            return f"memory relations missing: {sorted(relations - saved)!r}"
        return None

    return state


MARATHON = "26.2 mi = 42.1648128 km; 180 lb = 81.6466266 kg"

TASKS: tuple[Task, ...] = (
    Task(
        "notes_trip",
        "create three notes for a trip, then list the notes tagged trip",
        """
for title, body in [
    ("Book the ferry", "Ferry to the island on Friday"),
    ("Pack the tent", "Tent, stove and two sleeping bags"),
    ("Buy trail snacks", "Nuts, dried apricots and chocolate"),
]:
    await notes.create_note(title=title, body=body, tags=["trip"])
listed = await notes.list_notes(tag="trip")
{"count": listed["count"], "titles": sorted(n["title"] for n in listed["notes"])}
""",
        _expect(
            {"count": 3, "titles": ["Book the ferry", "Buy trail snacks", "Pack the tent"]},
            _notes("trip", ["Book the ferry", "Buy trail snacks", "Pack the tent"]),
        ),
    ),
    Task(
        "notes_tag_pancakes",
        "find the note that mentions pancakes and add the tag breakfast to it",
        """
found = await notes.search_notes(text="pancakes")
note_id = found["notes"][0]["id"]
current = await notes.get_note(id=note_id)
updated = await notes.update_note(id=note_id, tags=current["tags"] + ["breakfast"])
{"id": note_id, "tags": updated["tags"]}
""",
        _expect(
            {"id": "1", "tags": ["shopping", "home", "breakfast"]}, _notes("breakfast", ["Groceries for the weekend"])
        ),
    ),
    Task(
        "marathon_file",
        "convert 26.2 mi to km and 180 lb to kg, and write both to out/marathon.txt",
        """
km = await units.convert_units(value=26.2, from_unit="mi", to_unit="km")
kg = await units.convert_units(value=180, from_unit="lb", to_unit="kg")
line = f"{km['text']}; {kg['text']}"
await filesystem.write_file(path="out/marathon.txt", content=line)
{"written": line}
""",
        _expect({"written": MARATHON}, _file("out/marathon.txt", MARATHON)),
    ),
    Task(
        "memory_engine",
        "record Ada Lovelace, Charles Babbage and the Analytical Engine in memory, related, then open the engine",
        """
await memory.create_entities(entities=[
    {"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first published program"]},
    {"name": "Charles Babbage", "entityType": "person", "observations": ["designed the engine"]},
    {"name": "Analytical Engine", "entityType": "machine", "observations": ["never completed"]},
])
await memory.create_relations(relations=[
    {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"},
    {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
])
graph = await memory.open_nodes(names=["Analytical Engine"])
relations = sorted(f"{r['from']} {r['relationType']} {r['to']}" for r in graph["relations"])
{"entity": graph["entities"][0]["name"], "relations": relations}
""",
        _expect(
            {
                "entity": "Analytical Engine",
                "relations": [
                    "Ada Lovelace programmed Analytical Engine",
                    "Charles Babbage designed Analytical Engine",
                ],
            },
            _entities(
                {"Analytical Engine": ["never completed"]},
                {
                    ("Ada Lovelace", "programmed", "Analytical Engine"),
                    ("Charles Babbage", "designed", "Analytical Engine"),
                },
            ),
        ),
    ),
    Task(
        "word_counts_file",
        "read the recipe and the README, count their words, and write the counts to out/word_counts.txt",
        """
counts = {}
for path in ["recipes/pancakes.md", "README.md"]:
    page = await files.read_file(path=path)
    stats = await text.word_count(text=page["content"])
    counts[path] = stats["words"]
summary = "\\n".join(f"{p}: {n} words" for p, n in counts.items())
await filesystem.write_file(path="out/word_counts.txt", content=summary)
counts
""",
        _expect(
            {"recipes/pancakes.md": 127, "README.md": 94},
            _file("out/word_counts.txt", "recipes/pancakes.md: 127 words\nREADME.md: 94 words"),
        ),
    ),
    Task(
        "city_population",
        "read data/cities.csv and add up the populations of the three largest cities with the calculator",
        """
table = await files.read_file(path="data/cities.csv")
rows = [line.split(",") for line in table["content"].strip().splitlines()[1:]]
top = sorted(rows, key=lambda r: -int(r[2]))[:3]
total = await units.calculate(expression=" + ".join(r[2] for r in top))
{"cities": [r[0] for r in top], "total": total["result"]}
""",
        _expect({"cities": ["Tokyo", "Delhi", "Shanghai"], "total": 100790000}),
    ),
    Task(
        "budget_slug",
        "create a budget note, make a slug of its title, and save the note as out/<slug>.md",
        """
body = "Compare spend with plan; flag overruns above 10%."
note = await notes.create_note(title="Quarterly Budget Review", body=body, tags=["finance"])
slug = await text.slugify(text=note["title"])
path = f"out/{slug['result']}.md"
await filesystem.write_file(path=path, content=f"# {note['title']}\\n\\n{note['body']}\\n")
{"file": path}
""",
        _expect(
            {"file": "out/quarterly-budget-review.md"},
            _file(
                "out/quarterly-budget-review.md",
                "# Quarterly Budget Review\n\nCompare spend with plan; flag overruns above 10%.\n",
            ),
        ),
    ),
    Task(
        "fever_note",
        "convert three temperatures from °F to °C and save them in a note",
        """
lines = []
for f in [98.6, 100.4, 102.2]:
    c = await units.convert_units(value=f, from_unit="F", to_unit="C")
    lines.append(c["text"])
note = await notes.create_note(title="Temperature log", body="\\n".join(lines), tags=["health"])
{"note": note["title"], "lines": lines}
""",
        _expect(
            {"note": "Temperature log", "lines": ["98.6 F = 37 C", "100.4 F = 38 C", "102.2 F = 39 C"]},
            _notes("health", ["Temperature log"]),
        ),
    ),
    Task(
        "log_errors_memory",
        "read logs/app.log, find its ERROR lines, and record them in memory as one incident",
        """
log = await filesystem.read_text_file(path="logs/app.log")
found = await text.find_matches(text=log["content"], pattern="ERROR (\\\\w+): (.+)")
errors = [f"{m['groups'][0]}: {m['groups'][1]}" for m in found["matches"]]
await memory.create_entities(entities=[{"name": "app.log errors", "entityType": "incident", "observations": errors}])
{"errors": len(errors), "components": sorted(set(m["groups"][0] for m in found["matches"]))}
""",
        _expect(
            {"errors": 3, "components": ["auth", "database"]},
            _entities(
                {
                    "app.log errors": [
                        "database: connection refused",
                        "auth: token expired for user 42",
                        "database: query timed out after 30 s",
                    ]
                }
            ),
        ),
    ),
    Task(
        "todo_done_diff",
        "tick 'review code mode' in lists/todo.txt and diff the list before and after",
        """
before = await filesystem.read_text_file(path="lists/todo.txt")
tick = {"oldText": "- [ ] review code mode", "newText": "- [x] review code mode"}
await filesystem.edit_file(path="lists/todo.txt", edits=[tick])
after = await filesystem.read_text_file(path="lists/todo.txt")
change = await text.diff_text(before=before["content"], after=after["content"])
done = [line[6:] for line in after["content"].splitlines() if line.startswith("- [x]")]
{"added": change["lines_added"], "removed": change["lines_removed"], "done": done}
""",
        _expect(
            {"added": 1, "removed": 1, "done": ["review code mode"]},
            _file("lists/todo.txt", "- [ ] ship the benchmark\n- [x] review code mode\n- [ ] update the docs\n"),
        ),
    ),
    Task(
        "project_deadlines",
        "record two projects in memory, add their deadlines, then search memory for deadlines",
        """
await memory.create_entities(entities=[
    {"name": "Project Falcon", "entityType": "project", "observations": ["owner: Ana"]},
    {"name": "Project Heron", "entityType": "project", "observations": ["owner: Bo"]},
])
await memory.add_observations(observations=[
    {"entityName": "Project Falcon", "contents": ["deadline: 2026-12-15"]},
    {"entityName": "Project Heron", "contents": ["deadline: 2027-01-31", "budget approved"]},
])
due = await memory.search_nodes(query="deadline")
deadlines = sorted(o for e in due["entities"] for o in e["observations"] if o.startswith("deadline"))
{"projects": sorted(e["name"] for e in due["entities"]), "deadlines": deadlines}
""",
        _expect(
            {
                "projects": ["Project Falcon", "Project Heron"],
                "deadlines": ["deadline: 2026-12-15", "deadline: 2027-01-31"],
            },
            _entities({"Project Heron": ["owner: Bo", "deadline: 2027-01-31", "budget approved"]}),
        ),
    ),
    Task(
        "everything_sums",
        "add 17 and 25 with server-everything, add 0.5 to the sum, and echo the total",
        """
first = await everything.get_sum(a=17, b=25)
subtotal = float(first.rsplit(" ", 1)[1].rstrip("."))
second = await everything.get_sum(a=subtotal, b=0.5)
total = float(second.rsplit(" ", 1)[1].rstrip("."))
echoed = await everything.echo(message=f"total {total}")
{"total": total, "echo": echoed}
""",
        _expect({"total": 42.5, "echo": "Echo: total 42.5"}),
    ),
    Task(
        "warmest_city_note",
        "read the weather of three cities, convert the warmest one's °C to °F, and note it",
        """
readings = {}
for city in ["New York", "Chicago", "Los Angeles"]:
    weather = await everything.get_structured_content(location=city)
    readings[city] = weather["temperature"]
warmest = max(readings, key=lambda c: readings[c])
fahrenheit = await units.convert_units(value=readings[warmest], from_unit="C", to_unit="F")
note = await notes.create_note(title=f"Warmest: {warmest}", body=fahrenheit["text"], tags=["weather"])
{"city": warmest, "fahrenheit": fahrenheit["result"], "note": note["title"]}
""",
        _expect(
            {"city": "Los Angeles", "fahrenheit": 163.4, "note": "Warmest: Los Angeles"},
            _notes("weather", ["Warmest: Los Angeles"]),
        ),
    ),
    Task(
        "settings_file",
        "turn three setting names into snake_case and write them to out/config/settings.env",
        """
names = []
for phrase in ["Max Retry Count", "Request Timeout Seconds", "Cache Dir Path"]:
    cased = await text.change_case(text=phrase, style="snake")
    names.append(cased["result"])
await filesystem.create_directory(path="out/config")
await filesystem.write_file(path="out/config/settings.env", content="".join(f"{n.upper()}=\\n" for n in names))
{"names": names}
""",
        _expect(
            {"names": ["max_retry_count", "request_timeout_seconds", "cache_dir_path"]},
            _file("out/config/settings.env", "MAX_RETRY_COUNT=\nREQUEST_TIMEOUT_SECONDS=\nCACHE_DIR_PATH=\n"),
        ),
    ),
    Task(
        "docs_word_total",
        "list the docs folder, read its files in one call, and count their words together",
        """
listing = await filesystem.list_directory(path="docs")
paths = ["docs/" + line[7:] for line in listing["content"].splitlines() if line.startswith("[FILE] ")]
contents = await filesystem.read_multiple_files(paths=paths)
body = "\\n".join(line for line in contents["content"].splitlines() if not line.endswith(".txt:"))
stats = await text.word_count(text=body)
{"files": len(paths), "words": stats["words"]}
""",
        _expect({"files": 3, "words": 76}),
    ),
    Task(
        "work_notes_memory",
        "copy every note tagged mcp into memory, title as the entity and body as its observation",
        """
listed = await notes.list_notes(tag="mcp")
entities = []
for summary in listed["notes"]:
    note = await notes.get_note(id=summary["id"])
    entities.append({"name": note["title"], "entityType": "note", "observations": [note["body"]]})
await memory.create_entities(entities=entities)
{"saved": [e["name"] for e in entities]}
""",
        _expect(
            {"saved": ["Gateway rollout plan"]},
            _entities(
                {
                    "Gateway rollout plan": [
                        "Put toolscout in front of the team's MCP servers, keep delete tools disabled, "
                        "and compare token use before and after."
                    ]
                }
            ),
        ),
    ),
    Task(
        "data_sizes",
        "list the data-size units, then convert 1.5 GiB to MB and 700 MB to GiB",
        """
listing = await units.list_units(dimension="data")
symbols = [u["symbol"] for d in listing["dimensions"] for u in d["units"]]
mb = await units.convert_units(value=1.5, from_unit="GiB", to_unit="MB")
gib = await units.convert_units(value=700, from_unit="MB", to_unit="GiB")
{"symbols": symbols, "mb": mb["result"], "gib": gib["result"]}
""",
        _expect(
            {
                "symbols": ["B", "KB", "MB", "GB", "KiB", "MiB", "GiB"],
                "mb": 1610.612736,
                "gib": 0.651925802231,
            }
        ),
    ),
    Task(
        "glossary_line",
        "find the docs file that defines 'sandbox' and quote that line",
        """
found = await files.search_files(pattern="docs/*.txt")
quote = None
for entry in found["matches"]:
    page = await files.read_file(path=entry["path"])
    for line in page["content"].splitlines():
        if line.startswith("sandbox:"):
            quote = {"file": entry["path"], "line": line}
quote
""",
        _expect({"file": "docs/glossary.txt", "line": "sandbox: where a program runs without reaching the host"}),
    ),
    Task(
        "archive_draft",
        "create archive/, move drafts/old-plan.txt into it, and list archive/",
        """
await filesystem.create_directory(path="archive")
await filesystem.move_file(source="drafts/old-plan.txt", destination="archive/old-plan.txt")
listing = await filesystem.list_directory(path="archive")
{"archive": listing["content"].splitlines()}
""",
        _expect(
            {"archive": ["[FILE] old-plan.txt"]}, _file("archive/old-plan.txt", "An old plan, kept for the record.\n")
        ),
    ),
    Task(
        "timesheet_note",
        "add up the week's hours, convert them to minutes, and note both",
        """
hours = await units.calculate(expression="7.5 * 4 + 6.25")
minutes = await units.convert_units(value=hours["result"], from_unit="h", to_unit="min")
body = f"{hours['result']} h = {minutes['result']} min"
note = await notes.create_note(title="Week's hours", body=body, tags=["timesheet"])
{"hours": hours["result"], "minutes": minutes["result"], "body": note["body"]}
""",
        _expect(
            {"hours": 36.25, "minutes": 2175, "body": "36.25 h = 2175.0 min"}, _notes("timesheet", ["Week's hours"])
        ),
    ),
    Task(
        "meeting_actions",
        "read docs/meeting.txt and create a note for each TODO in it",
        """
page = await files.read_file(path="docs/meeting.txt")
found = await text.find_matches(text=page["content"], pattern="TODO: (\\\\w+) (.+)")
titles = []
for m in found["matches"]:
    note = await notes.create_note(title=f"Action for {m['groups'][0]}", body=m["groups"][1], tags=["action"])
    titles.append(note["title"])
{"actions": titles}
""",
        _expect(
            {"actions": ["Action for Ana", "Action for Bo"]}, _notes("action", ["Action for Ana", "Action for Bo"])
        ),
    ),
    Task(
        "city_graph",
        "put the Asian cities of data/cities.csv in memory, each larger than the next, then search for India",
        """
table = await files.read_file(path="data/cities.csv")
rows = [line.split(",") for line in table["content"].strip().splitlines()[1:]]
asia = [r for r in rows if r[1] in ("Japan", "India", "China")]
await memory.create_entities(entities=[
    {"name": r[0], "entityType": "city", "observations": [f"in {r[1]}", f"population {r[2]}"]} for r in asia
])
await memory.create_relations(relations=[
    {"from": a[0], "to": b[0], "relationType": "larger than"} for a, b in zip(asia, asia[1:])
])
found = await memory.search_nodes(query="India")
relations = sorted(f"{r['from']} {r['relationType']} {r['to']}" for r in found["relations"])
{"cities": [e["name"] for e in found["entities"]], "relations": relations}
""",
        _expect(
            {"cities": ["Delhi"], "relations": ["Delhi larger than Shanghai", "Tokyo larger than Delhi"]},
            _entities(
                {"Tokyo": ["in Japan", "population 37115000"]},
                {("Tokyo", "larger than", "Delhi"), ("Delhi", "larger than", "Shanghai")},
            ),
        ),
    ),
)
"""The tasks, in the order every leg runs them (no task reads what another writes)."""

QUERIES: dict[tuple[str, str], str] = {
    ("notes", "create_note"): "create a note",
    ("notes", "list_notes"): "list notes by tag",
    ("notes", "search_notes"): "search notes for text",
    ("notes", "get_note"): "get a note by id",
    ("notes", "update_note"): "update a note's tags",
    ("units", "convert_units"): "convert units",
    ("units", "calculate"): "calculate an arithmetic expression",
    ("units", "list_units"): "list supported units",
    ("text", "word_count"): "count words in text",
    ("text", "slugify"): "make a URL slug",
    ("text", "find_matches"): "find regex matches in text",
    ("text", "diff_text"): "diff two texts",
    ("text", "change_case"): "change text to snake case",
    ("files", "read_file"): "read a sample file",
    ("files", "search_files"): "search sample files by glob",
    ("memory", "create_entities"): "create entities in the knowledge graph",
    ("memory", "create_relations"): "create relations between entities",
    ("memory", "open_nodes"): "open knowledge graph nodes by name",
    ("memory", "add_observations"): "add observations to entities",
    ("memory", "search_nodes"): "search the knowledge graph",
    ("filesystem", "write_file"): "write a file",
    ("filesystem", "read_text_file"): "read a text file",
    ("filesystem", "edit_file"): "edit a file by replacing text",
    ("filesystem", "list_directory"): "list a directory",
    ("filesystem", "read_multiple_files"): "read multiple files at once",
    ("filesystem", "create_directory"): "create a directory",
    ("filesystem", "move_file"): "move a file",
    ("everything", "get_sum"): "add two numbers",
    ("everything", "echo"): "echo a message",
    ("everything", "get_structured_content"): "get the weather of a city",
}
"""What the scripted model searches for each tool it needs: a verb and an object, as the meta-tools ask."""
