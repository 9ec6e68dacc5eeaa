"""Loading a kernel module with restricted builtins (the same for every backend): its imports
pass the allow-list again at run time, the names the static check forbids are absent (but a
restricted `getattr` where the dialect reads modules by name, nkibench.sandbox.facades), a
module with a facade (`inspect`) is imported as its facade, and the bodies of top-level
`if __name__ == "__main__":` blocks are emptied before the module is compiled
(nkibench.sandbox.main_block): the module runs as `<dialect>_kernel`, never as `__main__`."""

from __future__ import annotations

import builtins
import sys
import traceback
import types
from typing import Any

from nkibench import python_ast
from nkibench.dialects import get_dialect
from nkibench.errors import KernelError
from nkibench.sandbox.attributes import SETATTR_NAME, checked_setattr, guard_attribute_writes
from nkibench.sandbox.facades import FACADES, module_getattr
from nkibench.sandbox.main_block import without_main_blocks
from nkibench.sandbox.policy import FORBIDDEN_NAMES, module_allowed

__all__ = ["ImportBlocked", "kernel_line", "load_kernel"]


class ImportBlocked(KernelError):
    kind = "rejected"


def _guarded_import(dialect: str, filename: str) -> Any:
    facades: dict[str, Any] = {}

    def guarded(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        # numpy imports its own submodules lazily (str(dtype) loads numpy._core._dtype), from
        # whatever frame runs; a kernel's source cannot name them (the static check)
        lazy = name.startswith("numpy.") and module_allowed("numpy", dialect)
        if level or not (lazy or module_allowed(name, dialect)):
            raise ImportBlocked(f"import of {name!r} is not allowed in a kernel")
        if name in FACADES:
            if name not in facades:
                facades[name] = FACADES[name](dialect, filename)
            return facades[name]
        return builtins.__import__(name, globals, locals, fromlist, level)

    return guarded


def _safe_builtins(dialect: str, filename: str) -> dict[str, Any]:
    allowed = {
        name: getattr(builtins, name)
        for name in dir(builtins)
        if not name.startswith("_") and name not in FORBIDDEN_NAMES
    }
    allowed["__import__"] = _guarded_import(dialect, filename)
    allowed["__build_class__"] = builtins.__build_class__
    if get_dialect(dialect).by_name_modules:
        allowed["getattr"] = module_getattr(dialect)
    return allowed


def load_kernel(source: str, filename: str, function: str, dialect: str) -> Any:
    """Execute the kernel module with restricted builtins and return its kernel function."""
    module_name = f"{dialect}_kernel"
    builtins_of_kernel = _safe_builtins(dialect, filename)
    base = get_dialect(dialect).object_base
    tree = without_main_blocks(python_ast.parse(source, filename))
    if base is not None:  # attribute writes go through the check of nkibench.sandbox.attributes
        tree = guard_attribute_writes(tree)
        builtins_of_kernel[SETATTR_NAME] = checked_setattr(module_name, base)
    code = compile(tree, filename, "exec")
    # a module of its own, found where the standard library looks a class's module up
    # (dataclasses resolves string annotations in sys.modules[cls.__module__])
    module = types.ModuleType(module_name)
    namespace: dict[str, Any] = module.__dict__
    namespace["__builtins__"] = builtins_of_kernel
    sys.modules[module_name] = module
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
