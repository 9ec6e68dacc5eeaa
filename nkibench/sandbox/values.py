"""Inputs and outputs by name, inside the sandboxed children (FlashInfer-Bench's convention).

A reference's get_inputs() returns its inputs as a list (positional) or as a dict of name ->
value (named, in order); forward() and the kernel's run() are then called by keyword when their
signature takes those names (`run(q, k, v)`, `run(*args, **kwargs)`), else positionally in the
dict's order (AccelOpt's `run(*inputs)`). forward() and run() return one value, a tuple or list
(positional), or a dict of name -> value; a kernel's dict is put in the reference's order by
name. The phases exchange values as lists (files `input_<i>.npy`, `output_<i>.npy`) with the
names beside them in the manifest, which the parent checks (nkibench.sandbox.results: this
module imports neither NumPy nor ml_dtypes, so the parent may import it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from nkibench.task.files import VALUE_NAME

__all__ = ["NAME", "call", "listed", "named", "ordered", "takes_names"]

NAME = VALUE_NAME


def listed(value: Any) -> list[Any]:
    """A function's result as a list of values (one value, or a tuple or list of them)."""
    return list(value) if isinstance(value, tuple | list) else [value]


def named(value: Any, what: str) -> tuple[list[Any], list[str] | None]:
    """A function's result as values and their names: a dict by its keys in order (names
    checked), else positional (one value, a tuple or a list) with no names."""
    if isinstance(value, dict):
        if type(value) is not dict:
            raise TypeError(f"{what} is a {type(value).__name__}, not a plain dict")
        names = list(value)
        for name in names:
            if not isinstance(name, str) or NAME.fullmatch(name) is None:
                raise TypeError(f"{what}: the key {name!r} is not a name (a Python identifier)")
        return list(value.values()), names
    return listed(value), None


def ordered(value: Any, names: Sequence[str] | None, what: str) -> list[Any]:
    """A kernel's outputs in the reference's order: a dict by the reference's output names,
    anything else positionally."""
    if not isinstance(value, dict):
        return listed(value)
    if type(value) is not dict:
        raise TypeError(f"{what} is a {type(value).__name__}, not a plain dict")
    if names is None:
        raise TypeError(
            f"{what} is a dict, but the reference's outputs have no names (its forward() "
            "returns them positionally): return a tuple"
        )
    missing = [n for n in names if n not in value]
    extra = [repr(k)[:40] for k in value if k not in names]
    if missing or extra:
        problems = [f"no output {', '.join(missing)}"] if missing else []
        problems += [f"unknown output(s) {', '.join(extra)}"] if extra else []
        raise TypeError(f"{what}: {'; '.join(problems)} (the reference's: {', '.join(names)})")
    return [value[n] for n in names]


def takes_names(function: Callable[..., Any], names: Sequence[str] | None) -> bool:
    """Whether `function` is called by keyword with `names`: they are names, and its signature
    binds them so (named parameters, or **kwargs)."""
    if names is None:
        return False
    try:
        inspect.signature(function).bind(**dict.fromkeys(names))
    except (TypeError, ValueError):
        return False
    return True


def call(
    function: Callable[..., Any],
    values: Sequence[Any],
    names: Sequence[str] | None,
    by_name: bool | None = None,
) -> Any:
    """`function` on `values`: by keyword where it takes their names (`by_name`, when the caller
    decided it once: takes_names), else positionally."""
    if by_name is None:
        by_name = takes_names(function, names)
    if by_name and names is not None:
        return function(**dict(zip(names, values, strict=True)))
    return function(*values)
