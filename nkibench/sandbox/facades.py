"""What a kernel's restricted builtins and imports hand out in place of the real thing, in the
kernel's child (nkibench.sandbox.loader).

- `getattr`: allowed only as `getattr(<module>, "name"[, default])` on a module of the dialect's
  by-name packages (Triton's: `getattr(tl, "fast_exp", tl.exp)`). The static check holds the
  name to a literal and checks it as `<module>.name`; here, the same rules hold at run time:
  the object must be such a module, the name passes the checks of `.name`, the path is not
  one the dialect forbids, and the value is not a module (held as a value, a module's
  attributes are out of the check's sight).
- `inspect`: a module of the names the dialect allows (nkibench.policy.triton_code's
  MODULE_SUBSETS), whose `signature` answers for the kernel's own functions only (a function
  defined in its file, reached through Triton's @jit, @autotune and @heuristics wrappers,
  bound methods, functools.partial and `__wrapped__`) and takes no `eval_str`: a signature
  hands out the defaults of a function (`torch.save`'s is the pickle module), objects the
  check never saw.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from nkibench.dialects import get_dialect
from nkibench.errors import KernelError
from nkibench.sandbox.policy import forbidden_path, global_setter, subset_problem
from nkibench.sandbox.static_check import attribute_problem, by_name_module

__all__ = ["FACADES", "FacadeRefused", "inspect_facade", "module_getattr"]


class FacadeRefused(KernelError):
    kind = "rejected"


_MISSING = object()


def module_getattr(dialect: str) -> Callable[..., Any]:
    """The kernel's `getattr`: `getattr(<module>, "name"[, default])` on the dialect's by-name
    packages' modules only."""

    def getattr(obj: Any, name: Any, default: Any = _MISSING, /) -> Any:
        if not (
            isinstance(obj, types.ModuleType)
            and by_name_module(obj.__name__, dialect) is not None
            and isinstance(name, str)
        ):
            roots = ", ".join(get_dialect(dialect).by_name_modules) or "none"
            raise FacadeRefused(
                "`getattr` is allowed only on a module of the packages "
                f"{roots} with the name as a string literal"
            )
        path = f"{obj.__name__}.{name}"
        problem = attribute_problem(name, dialect) or subset_problem(path, dialect)
        if problem is None and (forbidden_path(path, dialect) or global_setter(path, dialect)):
            problem = f"`{path}` is not allowed in a kernel"
        if problem is not None:
            raise FacadeRefused(f"{problem} (read by getattr)")
        value = (
            builtins.getattr(obj, name)
            if default is _MISSING
            else builtins.getattr(obj, name, default)
        )
        if isinstance(value, types.ModuleType):
            raise FacadeRefused(
                f"getattr(..., {name!r}) is the module {value.__name__}: a kernel may use it "
                "only as <module>.<name> (held as a value, its attributes are out of the "
                "check's sight)"
            )
        return value

    return getattr


_MAX_UNWRAP = 64


def _own_target(obj: Any, filename: str) -> Any:
    """The object to ask inspect about, if `obj` is one of the kernel's own functions
    (None: it is not)."""
    target = None
    for _ in range(_MAX_UNWRAP):
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, types.MethodType):
            obj = obj.__func__
        elif isinstance(obj, types.FunctionType):
            if obj.__code__.co_filename != filename:
                return None
            target = target if target is not None else obj
            wrapped = obj.__dict__.get("__wrapped__", _MISSING)
            if wrapped is _MISSING:
                return target
            obj = wrapped
        elif type(obj).__module__.startswith("triton.") and hasattr(obj, "fn"):
            obj = obj.fn  # @jit, @autotune, @heuristics: the kernel's own function inside
            target = None  # inspect reads the function, not Triton's wrapper
        else:
            return None
    return None


def inspect_facade(dialect: str, filename: str) -> types.ModuleType:
    """The kernel's `inspect`: the names the dialect allows of it, with `signature` answering
    for the kernel's own functions only."""
    names = get_dialect(dialect).module_subsets.get("inspect", frozenset())
    facade = types.ModuleType("inspect", "inspect, as a kernel may use it")

    def signature(obj: Any, *, follow_wrapped: bool = True) -> inspect.Signature:
        target = _own_target(obj, filename)
        if target is None:
            raise FacadeRefused(
                "inspect.signature answers for the kernel's own functions only: the defaults "
                "of another library's function are objects the check never saw"
            )
        chosen = obj if isinstance(obj, functools.partial | types.MethodType) else target
        return inspect.signature(chosen, follow_wrapped=follow_wrapped)

    for name in sorted(names):
        setattr(facade, name, signature if name == "signature" else getattr(inspect, name))
    return facade


FACADES: dict[str, Callable[[str, str], types.ModuleType]] = {"inspect": inspect_facade}
"""Modules a kernel gets a facade of when it imports them: (dialect, kernel file) → module."""
