"""Loading a kernel module with restricted builtins (the same for every backend): its imports
pass the allow-list again at run time, and the names the static check forbids are absent."""

from __future__ import annotations

import ast
import builtins
import traceback
from typing import Any

from nkibench.dialects import get_dialect
from nkibench.errors import KernelError
from nkibench.sandbox.attributes import SETATTR_NAME, checked_setattr, guard_attribute_writes
from nkibench.sandbox.policy import FORBIDDEN_NAMES, module_allowed

__all__ = ["ImportBlocked", "kernel_line", "load_kernel"]


class ImportBlocked(KernelError):
    kind = "rejected"


def _guarded_import(dialect: str) -> Any:
    def guarded(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        # numpy imports its own submodules lazily (str(dtype) loads numpy._core._dtype), from
        # whatever frame runs; a kernel's source cannot name them (the static check)
        lazy = name.startswith("numpy.") and module_allowed("numpy", dialect)
        if level or not (lazy or module_allowed(name, dialect)):
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
    module_name = f"{dialect}_kernel"
    builtins_of_kernel = _safe_builtins(dialect)
    base = get_dialect(dialect).object_base
    if base is None:
        code = compile(source, filename, "exec")
    else:  # attribute writes go through the check of nkibench.sandbox.attributes
        tree = guard_attribute_writes(ast.parse(source, filename))
        code = compile(tree, filename, "exec")
        builtins_of_kernel[SETATTR_NAME] = checked_setattr(module_name, base)
    namespace: dict[str, Any] = {"__name__": module_name, "__builtins__": builtins_of_kernel}
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
