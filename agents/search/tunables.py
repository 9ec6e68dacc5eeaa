"""Sweeping a task's declared tunables without the LLM.

A tunable is a module-level constant of the kernel (`TILE = 512`) with its choices in
task.toml (`[tunables] TILE = [256, 512, 1024]`). Each variant changes one constant of the
given kernel to one other choice; the duplicate check drops variants seen before.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["variants"]


def _assignments(source: str) -> dict[str, ast.Assign]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, MemoryError, RecursionError):
        # an LLM's kernel may nest past the parser's limits: CPython 3.11 says so with
        # MemoryError (200,000 unary minuses) or RecursionError (200,000 `+` terms)
        return {}
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
        ):
            found[node.targets[0].id] = node
    return found


def variants(source: str, tunables: dict[str, list[Any]]) -> list[tuple[str, Any, str]]:
    """(name, value, new source) for every other choice of every tunable the kernel defines."""
    assignments = _assignments(source)
    lines = source.splitlines(keepends=True)
    out = []
    for name in sorted(tunables):
        node = assignments.get(name)
        if node is None or node.lineno != node.end_lineno:
            continue
        current = node.value.value  # type: ignore[attr-defined]
        for value in tunables[name]:
            if value == current:
                continue
            line = lines[node.lineno - 1]
            indent = line[: len(line) - len(line.lstrip())]
            changed = [*lines]
            changed[node.lineno - 1] = f"{indent}{name} = {value!r}\n"
            out.append((name, value, "".join(changed)))
    return out
