"""What a definition's tensors are, as accelopt's task files say it: each dtype's torch name and
width, the names a generated module binds, and why a definition cannot become a task."""

from __future__ import annotations

import ast
import keyword
from typing import Any

from nkibench import python_ast
from nkibench.policy.tolerance import OUTPUT_DTYPES
from nkibench.task.files import VALUE_NAME
from nkibench.task.safe_eval import module_bindings

__all__ = ["BYTES", "Unconvertible", "axis_values", "bytes_formula", "check_names", "shape_of"]

BYTES = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "bool": 1,
}
"""The dtypes both FlashInfer-Bench and accelopt's task format have (float4_e2m1 has no NumPy
dtype for the sandbox's values to cross in), with their width in bytes."""

GENERATED = frozenset(
    {"torch", "run", "forward", "get_inputs", "OUTPUT_NAMES", "FIXED_INPUTS", "result", "values"}
)
"""Names the generated reference.py binds or uses beside the definition's code."""


class Unconvertible(Exception):
    """The definition (or solution) cannot become an accelopt task: the reason, for the summary."""


def _dtype(spec: Any) -> str:
    return str(spec.dtype.value)


def check_names(definition: Any) -> None:
    """Axes become module constants and inputs parameters: each must be a name the generated
    module can bind without hiding the definition's code or its own."""
    tree = python_ast.parse(definition.reference)
    bound = {name for statement in tree.body for name in module_bindings(statement)}
    bound |= {
        s.name
        for s in tree.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    clash = sorted((bound - {"run"}) & (GENERATED - {"torch"}))
    if clash:
        raise Unconvertible(
            f"its reference binds {', '.join(clash)}, which the task's reference.py defines"
        )
    for kind, names in (
        ("axis", definition.axes),
        ("input", definition.inputs),
        ("output", definition.outputs),
    ):
        for name in names:
            if not VALUE_NAME.fullmatch(name) or keyword.iskeyword(name) or name in GENERATED:
                raise Unconvertible(f"{kind} {name!r} is not a name a Python module can bind")
    for name in definition.axes:
        if name in bound:
            raise Unconvertible(f"axis {name!r} is also bound at module level by its reference")
    for name, spec in {**definition.inputs, **definition.outputs}.items():
        if _dtype(spec) not in BYTES or _dtype(spec) not in OUTPUT_DTYPES:
            raise Unconvertible(f"{name} is {_dtype(spec)}, which accelopt's tasks do not carry")


def axis_values(definition: Any, workload: Any | None) -> dict[str, int]:
    """Every axis's value: the constants', and the variables' from the workload."""
    values = dict(definition.const_axes)
    if workload is None:
        if definition.var_axes:
            raise Unconvertible(
                f"no workload gives its variable axes {', '.join(definition.var_axes)}"
            )
        return values
    missing = [a for a in definition.var_axes if a not in workload.axes]
    if missing:
        raise Unconvertible(f"workload {workload.uuid} gives no value of {', '.join(missing)}")
    for axis in definition.var_axes:
        values[axis] = int(workload.axes[axis])
    return values


def shape_of(spec: Any) -> str:
    """A tensor's shape as a tuple of the axes' names (constants of the generated module)."""
    names = list(spec.shape or [])
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def bytes_formula(definition: Any) -> str:
    """Compulsory traffic: every input read once and every output written once."""
    terms = []
    for spec in (*definition.inputs.values(), *definition.outputs.values()):
        terms.append(" * ".join([str(BYTES[_dtype(spec)]), *(spec.shape or [])]))
    return " + ".join(terms)
