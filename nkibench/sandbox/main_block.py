"""`if __name__ == "__main__":` blocks: a kernel's self-test, never run and never checked.

A kernel module is executed under a name of its own (nkibench.sandbox.loader: `<dialect>_kernel`),
never as `__main__`, so the body of a top-level `if __name__ == "__main__":` never runs. The
static checks skip exactly such bodies (a self-test may import what a kernel may not: `sys`,
`time`, numpy), and the loader compiles the module with those bodies emptied, so that they
cannot run even where `__name__` were made "__main__" (which the static check refuses besides:
no kernel binds `__name__`). The test itself and any `else:` branch are checked and run as
usual: an `else:` runs on import.
"""

from __future__ import annotations

import ast

__all__ = ["MAIN_NAME", "is_main_guard", "without_main_blocks"]

MAIN_NAME = "__name__"


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (or `"__main__" == __name__`) exactly."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
    ):
        return False
    sides = (test.left, test.comparators[0])
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == MAIN_NAME]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


def without_main_blocks(tree: ast.Module) -> ast.Module:
    """`tree` with the body of every top-level main guard replaced by `pass` (in place; the
    other statements keep their lines, so tracebacks and Triton's source lookups still
    match the file)."""
    for node in tree.body:
        if is_main_guard(node):
            assert isinstance(node, ast.If)
            first = node.body[0]
            node.body = [ast.copy_location(ast.Pass(), first)]
    return tree
