"""`ast.parse` for a process with threads.

CPython 3.11's AST constructor keeps its recursion depth in state that the interpreter's
threads share. A thread switch in the middle of a parse (a garbage collection that runs a
finaliser, say) lets another thread's parse move it, and one of the two fails with `SystemError:
AST constructor recursion depth mismatch` (python/cpython#106905). The daemon loads task files
in its search threads while its clock, watcher and workers parse too: a soak under load saw a
search fail so, and retried an hour later. Every parse in code that may run in a process with
threads goes through one lock here; a parse takes milliseconds, and the sources are bounded.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

__all__ = ["parse"]

_LOCK = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...
@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...
def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename, mode)
