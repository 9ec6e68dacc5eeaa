"""The operators a task computes, read from its reference's `forward` without running it.

Used to share optimization lessons across tasks: an item learnt on rmsnorm+matmul is relevant
to matmul+rmsnorm. The operators are the NumPy functions and methods `forward` calls (`exp`,
`sum`, `matmul`...) and its arithmetic operators (`@` is `matmul`, `/` is `divide`...).
"""

from __future__ import annotations

import ast

from nkibench import python_ast

__all__ = ["operators", "similarity"]

BINARY = {
    ast.MatMult: "matmul",
    ast.Mult: "multiply",
    ast.Div: "divide",
    ast.Add: "add",
    ast.Sub: "subtract",
    ast.Pow: "power",
}
ALIASES = {"dot": "matmul", "einsum": "matmul", "tensordot": "matmul", "amax": "max", "amin": "min"}
IGNORED = {
    "astype",
    "reshape",
    "transpose",
    "copy",
    "zeros",
    "ones",
    "empty",
    "zeros_like",
    "ones_like",
    "empty_like",
    "array",
    "asarray",
    "float32",
    "shape",
    "range",
    "len",
}


def _forward(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            return node
    return None


def operators(reference_source: str) -> list[str]:
    """Sorted operator names used by `forward` (empty if there is none)."""
    try:
        tree = python_ast.parse(reference_source)
    except SyntaxError:
        return []
    forward = _forward(tree)
    if forward is None:
        return []
    found: set[str] = set()
    for node in ast.walk(forward):
        if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in BINARY:
            found.add(BINARY[type(node.op)])
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            found.add("negative")
        elif isinstance(node, ast.Call):
            name = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else node.func.id
                if isinstance(node.func, ast.Name)
                else None
            )
            if name and name not in IGNORED:
                found.add(ALIASES.get(name, name))
    return sorted(found)


def similarity(a: list[str] | set[str], b: list[str] | set[str]) -> float:
    """Jaccard similarity of two operator sets (0 when both are empty)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0
