"""The shape budget of the packages (issue 11's targets, tinygrad's line-budget habit):
no module over 800 lines and no function over 150 lines in core or any plugin, kernel
source files (.cl/.cu) aside; and no hand-written kernel source in a Python string (a plain
literal holding ``__kernel`` or ``__global__`` belongs in a .cl/.cu package-data file)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = [REPO / "core" / "burn"] + sorted(p for p in (REPO / "plugins").glob("*/burn_*") if p.is_dir())
MODULE_LINES, FUNCTION_LINES = 800, 150


def _modules():
    for pkg in PACKAGES:
        yield from sorted(pkg.rglob("*.py"))


def test_no_module_over_800_lines_and_no_function_over_150():
    too_long = []
    for path in _modules():
        src = path.read_text()
        rel = path.relative_to(REPO)
        if src.count("\n") > MODULE_LINES:
            too_long.append(f"{rel}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    too_long.append(f"{rel}:{node.lineno} {node.name}(): {n} lines")
    assert not too_long, "split these by concept:\n" + "\n".join(too_long)


@pytest.mark.parametrize("marker", ["__kernel void", '__global__ void'])
def test_no_hand_written_kernel_source_in_python_strings(marker):
    """A plain string literal holding a kernel is hand-written C: it belongs in a .cl/.cu file.
    Generated kernels (f-strings rendered from layouts, dtypes and dialects) stay generated,
    and docstring examples (showing the kernel APIs) are not code."""
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        docs |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and marker in node.value \
                    and id(node) not in docs:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, f"kernel source in Python strings (move it to a .cl/.cu file): {found}"
