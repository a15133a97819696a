"""The shape of the code: no import circle in src/toolscout, no module far over 800 lines unless
tests/large_modules.txt says why, a small top level, and no test module importing another (shared
helpers live in tests/helpers/ and tests/servers/).

Read from the source with `ast`, nothing imported: every import counts, inline ones and those under
`TYPE_CHECKING` too, because each is a dependency a reader must follow.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.helpers.paths import ROOT
from tests.helpers.source import statements

SRC = ROOT / "src"
PACKAGE = SRC / "toolscout"
TESTS = ROOT / "tests"

MAX_LINES = 800
"""A soft cap: modules are cut along what a reader follows, and one that needs more room than this
is listed with its reason in tests/large_modules.txt."""
LARGE_MODULES = ROOT / "tests" / "large_modules.txt"
MAX_TOP_LEVEL_MODULES = 10


def modules(package: Path) -> dict[str, Path]:
    """Every module of `package` (a folder) by dotted name; a package by its own name, not `pkg.__init__`."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path) -> Iterator[str]:
    """The dotted names an `import` or `from ... import` anywhere in the module refers to, relative
    imports resolved; for `from a import b`, `a.b` (it may be a module) and `a`."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def import_graph(known: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `known` it imports. An import of a package's own submodule, or of the
    package from its submodule, is not an edge: a package and what it holds are one room."""
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets: set[str] = set()
        for name in imported_names(module, path):
            while name and name not in known:  # `pkg.mod.Class` -> `pkg.mod`
                name = name.rpartition(".")[0]
            if name and name != module and not name.startswith(f"{module}.") and not module.startswith(f"{name}."):
                targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def one_cycle(graph: Mapping[str, set[str]], component: frozenset[str]) -> list[str]:
    """A path through `component` back to where it started, e.g. [a, b, c, a]: what to cut."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first: the shortest way round
        following: list[str] = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if target not in previous:
                    previous[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not a circle")


def describe(graph: Mapping[str, set[str]], component: frozenset[str]) -> str:
    edges = "\n".join(f"    {m} -> {', '.join(sorted(graph[m] & component))}" for m in sorted(component))
    return f"  {' -> '.join(one_cycle(graph, component))}\n{edges}"


@functools.cache
def src_import_graph() -> dict[str, set[str]]:
    """The import graph of src/toolscout, read once for the two tests that check it."""
    return import_graph(modules(PACKAGE))


def test_no_import_circle_in_src() -> None:
    graph = src_import_graph()
    found = circles(graph)
    assert not found, (
        "import circle(s) in src/toolscout (all imports count, inline and TYPE_CHECKING too):\n"
        + "\n".join(describe(graph, component) for component in sorted(found, key=sorted))
    )


def room_of(module: str) -> str:
    """`toolscout.gateway.core` -> `gateway`; a top-level module is a room of its own."""
    return module.split(".")[1] if module.count(".") else module


def test_no_circle_between_rooms() -> None:
    """The rooms (serve/, modes/, gateway/, resources/, upstream/, ... and each top-level module) form
    layers: a room never depends, through any of its modules, on a room that depends on it."""
    graph = src_import_graph()
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = room_of(module)
        rooms.setdefault(here, set()).update(room_of(t) for t in targets if room_of(t) != here)
    found = circles(rooms)
    assert not found, "rooms that depend on each other:\n" + "\n".join(
        describe(rooms, component) for component in sorted(found, key=sorted)
    )


def test_the_circle_finder_finds_a_circle_and_names_its_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set[str](), "e": {"e"}}
    assert circles(graph) == [frozenset({"a", "b", "c"})]
    assert one_cycle(graph, frozenset({"a", "b", "c"})) == ["a", "b", "c", "a"]


def test_a_package_and_its_own_modules_are_one_room(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg.sub import thing\n")
    (package / "sub" / "__init__.py").write_text("from . import thing\nimport pkg\n")
    (package / "sub" / "thing.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..other import x\n"
    )
    (package / "other.py").write_text("def f():\n    from .sub.thing import y\n")
    graph = import_graph(modules(package))
    assert graph == {"pkg": set(), "pkg.sub": set(), "pkg.sub.thing": {"pkg.other"}, "pkg.other": {"pkg.sub.thing"}}
    assert circles(graph) == [frozenset({"pkg.other", "pkg.sub.thing"})]


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def large_modules() -> dict[str, str]:
    """The modules allowed over the soft cap, each with the reason, from tests/large_modules.txt.

    Each line is `path/under/toolscout.py: why it is one module`; blank lines and `#` lines are notes.
    """
    allowed: dict[str, str] = {}
    for line in LARGE_MODULES.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition(":")
            assert reason.strip(), f"tests/large_modules.txt: {name} needs a reason after the colon"
            allowed[name.strip()] = reason.strip()
    return allowed


def test_no_module_over_the_soft_cap_without_a_reason() -> None:
    sizes = {path.relative_to(PACKAGE).as_posix(): line_count(path) for path in PACKAGE.rglob("*.py")}
    allowed = large_modules()
    over = {name for name, lines in sizes.items() if lines > MAX_LINES and name not in allowed}
    assert not over, (
        f"over {MAX_LINES} lines: {sorted(f'{n} ({sizes[n]} lines)' for n in over)}: cut it along what a "
        "reader follows, or list it in tests/large_modules.txt with the reason it is one module"
    )
    stale = sorted(name for name in allowed if sizes.get(name, 0) <= MAX_LINES)
    assert not stale, f"tests/large_modules.txt lists modules that are not over {MAX_LINES} lines: {stale}"


def test_the_top_level_keeps_only_a_handful_of_modules() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules at the top of src/toolscout: {top}; give them a room"


def test_no_test_module_imports_another() -> None:
    """Shared helpers go in tests/helpers/ or tests/servers/, fixtures in conftest.py (which pytest
    loads itself: importing it runs its fixtures' module twice)."""
    offenders: list[str] = []
    for module, path in {**modules(TESTS), **modules(ROOT / "benchmarks")}.items():
        for name in set(imported_names(module, path)):
            last = name.split(".")[-1]
            if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(sorted(offenders))
