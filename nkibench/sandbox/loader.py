"""Loading a kernel module with restricted builtins (the same for every backend): its imports
pass the allow-list again at run time, and the names the static check forbids are absent."""

from __future__ import annotations

import builtins
import traceback
from typing import Any

from nkibench.errors import KernelError
from nkibench.sandbox.static_check import FORBIDDEN_NAMES, module_allowed

__all__ = ["ImportBlocked", "kernel_line", "load_kernel"]


class ImportBlocked(KernelError):
    kind = "rejected"


def _guarded_import(dialect: str) -> Any:
    def guarded(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level or not module_allowed(name, dialect):
            raise ImportBlocked(f"import of {name!r} is not allowed in a kernel")
        return builtins.__import__(name, globals, locals, fromlist, level)

    return guarded


def _safe_builtins(dialect: str) -> dict[str, Any]:
    allowed = {
        name: getattr(builtins, name)
        for name in dir(builtins)
        if not name.startswith("_") and name not in FORBIDDEN_NAMES
    }
    allowed["__import__"] = _guarded_import(dialect)
    allowed["__build_class__"] = builtins.__build_class__
    return allowed


def load_kernel(source: str, filename: str, function: str, dialect: str) -> Any:
    """Execute the kernel module with restricted builtins and return its kernel function."""
    code = compile(source, filename, "exec")
    namespace: dict[str, Any] = {
        "__name__": f"{dialect}_kernel",
        "__builtins__": _safe_builtins(dialect),
    }
    exec(code, namespace)
    if function not in namespace:
        raise NameError(f"the kernel module defines no `{function}`")
    return namespace[function]


def kernel_line(error: BaseException, filename: str) -> int:
    """The innermost line of the kernel file in an exception's traceback (0 if none)."""
    line = 0
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno or 0
    return line
