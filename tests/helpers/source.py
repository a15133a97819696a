"""Reading Python source in tests: every statement of a parsed module, nested ones included."""

from __future__ import annotations

import ast
from collections.abc import Iterator

_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields that hold a block of statements (or of `except` and `case` clauses that hold one)."""


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """Yield every statement in `tree`, those in functions, classes, branches and handlers too.

    An import is a statement, never part of an expression, so looking only at blocks finds every
    import (inline ones included) without visiting the expressions, which are most of a module's
    nodes: the tests that read all of src/ for their imports take a fraction of `ast.walk`'s time.
    """
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for field in _BODIES:
            block: object = getattr(node, field, None)
            if not isinstance(block, list):
                continue  # an `IfExp`'s orelse is an expression, not a block
            for child in block:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(child, ast.stmt):
                    yield child
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    stack.append(child)
