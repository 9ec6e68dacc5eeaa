"""Loading a task's reference.py under a shape set (constants replaced before it runs).

Runs only inside a sandboxed child: reference code is the user's, and may be slow or broken.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import Any

from nkibench.errors import TaskError

__all__ = ["load_reference"]


def _override(tree: ast.Module, overrides: dict[str, Any], path: Path) -> None:
    remaining = dict(overrides)
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target = statement.target
        else:
            continue
        if isinstance(target, ast.Name) and target.id in remaining:
            value = ast.Constant(remaining.pop(target.id))
            statement.value = ast.copy_location(value, statement)
    if remaining:
        raise TaskError(f"{path}: no module-level assignment of {', '.join(sorted(remaining))}")


def load_reference(path: Path, overrides: dict[str, Any]) -> ModuleType:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    _override(tree, overrides, path)
    module = ModuleType("reference")
    module.__file__ = str(path)
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module
