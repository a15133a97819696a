"""Private modules of the MCP SDK are imported in one place (upstream/_sdk.py), and each import there resolves.

When an SDK upgrade moves or renames one of them, these tests say which line of _sdk.py to change,
instead of every module that uses the name failing to import with the SDK's own path in the message.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.helpers.source import statements

SRC = Path(__file__).resolve().parent.parent / "src" / "toolscout"
SDK_SHIM = SRC / "upstream" / "_sdk.py"


def _private(module: str) -> bool:
    return module.split(".")[0] in {"mcp", "mcp_types"} and any(part.startswith("_") for part in module.split("."))


def _private_imports(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, module, name, alias) of every `from <private SDK module> import name [as alias]` in `path`,
    and (line, module, "", "") for a plain `import` of one."""
    found: list[tuple[int, str, str, str]] = []
    for node in statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and _private(node.module):
            found.extend((node.lineno, node.module, a.name, a.asname or a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, "", "") for a in node.names if _private(a.name))
    return sorted(found)


SHIM_IMPORTS = _private_imports(SDK_SHIM)


def test_the_shim_takes_something_from_the_sdk() -> None:
    assert SHIM_IMPORTS, f"{SDK_SHIM} imports no private SDK module: delete it, or fix this test's parser"


@pytest.mark.parametrize(("line", "module", "name", "alias"), SHIM_IMPORTS, ids=[i[3] for i in SHIM_IMPORTS])
def test_each_private_sdk_name_still_resolves(line: int, module: str, name: str, alias: str) -> None:
    where = f"src/toolscout/upstream/_sdk.py line {line} (`from {module} import {name} as {alias}`)"
    try:
        found = importlib.import_module(module)
    except ImportError:
        pytest.fail(
            f"The MCP SDK has no module {module!r} any more. Find where `{name}` went in the installed SDK "
            f"(.venv/lib/python3.*/site-packages/mcp) and change {where}; toolscout uses it as `{alias}`."
        )
    if not hasattr(found, name):
        pytest.fail(
            f"The MCP SDK's {module} has no {name!r} any more. Find where it went (or what replaced it) and "
            f"change {where}; toolscout uses it as `{alias}`."
        )


def test_no_other_module_imports_a_private_sdk_module() -> None:
    elsewhere = [
        f"{path.relative_to(SRC.parent.parent)}:{line}: {module}"
        for path in sorted(SRC.rglob("*.py"))
        if path != SDK_SHIM
        for line, module, _, _ in _private_imports(path)
    ]
    assert not elsewhere, (
        "Import these through toolscout.upstream._sdk (add a line there, under a name of ours): " + "; ".join(elsewhere)
    )


def test_the_shim_exports_what_it_imports() -> None:
    from toolscout.upstream import _sdk

    assert sorted(_sdk.__all__) == sorted(alias for _, _, _, alias in SHIM_IMPORTS)
