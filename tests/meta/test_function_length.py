"""Functions read as one idea: none in the listed packages is longer than :data:`MAX_LINES` lines
(decorators excluded, docstring and body included)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80
PACKAGES = ["memtrial", "service"]


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method in ``source`` longer than ``limit`` lines."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > limit:
                        found.append((name, lines))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_long_functions_finds_a_method_one_line_over_the_limit_and_passes_one_at_it():
    at_limit = "def fits():\n" + "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    over = "class A:\n    def over(self):\n" + "".join(f"        x{i} = {i}\n" for i in range(MAX_LINES))
    assert long_functions(at_limit + over) == [("A.over", MAX_LINES + 1)]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_the_limit(package: str):
    offenders = [
        f"{path.relative_to(ROOT)}::{name} ({lines} lines)"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name, lines in long_functions(path.read_text())
    ]
    assert offenders == []
