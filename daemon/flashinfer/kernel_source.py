"""kernel.py of a task made from a solution: the solution's entry file verbatim, and where
FlashInfer-Bench's calling convention differs from accelopt's, a function that bridges them.

accelopt calls the task's kernel function with the inputs and takes the outputs it returns.
A FlashInfer-Bench solution in destination-passing style (its default) takes the outputs as
its last arguments instead: the bridge allocates them (torch.empty: allocation, which a
Triton task's run() may do), calls the entry, and returns them in the definition's order.
A value-returning entry not named `run` is named by task.toml's kernel_function.
A solution that does not say which style it is in (no `destination_passing_style` in its
JSON: the schema's default is destination passing, which solutions written before that
default did not follow) is read by its entry: a signature that fits the inputs alone makes it
value-returning, one that fits the inputs and the outputs only destination-passing; where both
fit (`*args`, defaults) it is value-returning if it returns a value; provenance.json says which
and why.
A solution is one kernel.py: a solution with more than one Python file is not imported (its
files import each other, which a task's single module cannot), and files that are not Python
(notes, build files) are left out and listed in provenance.json.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from daemon.flashinfer.shapes import Unconvertible
from nkibench import python_ast

__all__ = ["Kernel", "kernel_source"]

BRIDGE = "run_returning_outputs"
"""The bridge's name (the task's kernel_function), unless the solution binds it itself."""


@dataclass(frozen=True)
class Kernel:
    source: str
    function: str
    """The function accelopt calls (task.toml's kernel_function where not `run`)."""
    left_out: list[str] = field(default_factory=list)
    """The solution's files that are not in kernel.py."""
    convention: str = ""
    """How the entry is called, and who said so (the solution, or its signature)."""


def _entry(solution: Any) -> tuple[str, str, list[str]]:
    if str(solution.spec.language.value) != "triton":
        raise Unconvertible(
            f"solution {solution.name} is {solution.spec.language.value}, not Triton"
        )
    path, symbol = solution.spec.entry_point.split("::")
    python = [s.path for s in solution.sources if s.path.endswith(".py")]
    if not path.endswith(".py"):
        raise Unconvertible(f"solution {solution.name}'s entry file {path} is not Python")
    if len(python) > 1:
        raise Unconvertible(
            f"solution {solution.name} has {len(python)} Python files ({', '.join(python)}); "
            "a task holds one kernel.py"
        )
    source = next(s.content for s in solution.sources if s.path == path)
    return source, symbol, [s.path for s in solution.sources if s.path != path]


def _dimension(definition: Any, axis: str) -> str:
    """An output's dimension as the bridge computes it: a constant, or read from the input
    that FlashInfer-Bench binds the variable axis to."""
    if axis in definition.const_axes:
        return str(definition.const_axes[axis])
    bound = definition.var_axes_bindings.get(axis)
    if bound is None:
        raise Unconvertible(f"variable axis {axis} of an output is the shape of no input")
    name, index = bound
    return f"{name}.shape[{index}]"


def _bridge(definition: Any, solution: Any, symbol: str, name: str) -> str:
    tensors = [n for n, spec in definition.inputs.items() if spec.shape is not None]
    if not tensors:
        raise Unconvertible("no input tensor to take the outputs' device from")
    inputs = ", ".join(definition.inputs)
    lines = [
        "",
        "",
        "# --- added by accelopt import-flashinfer ---",
        "import torch  # noqa: E402",
        "",
        "",
        f"def {name}({inputs}):",
        f'    """accelopt takes the outputs run() returns; {solution.name} writes them into its',
        '    last arguments (FlashInfer-Bench\'s destination-passing style)."""',
    ]
    for output, spec in definition.outputs.items():
        dims = [_dimension(definition, axis) for axis in spec.shape or []]
        shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
        lines.append(
            f"    {output} = torch.empty({shape}, dtype=torch.{spec.dtype.value}, "
            f"device={tensors[0]}.device)"
        )
    outputs = ", ".join(definition.outputs)
    lines.append(f"    {symbol}({inputs}, {outputs})")
    lines.append(f"    return {outputs}")  # a tuple in the definition's order, or the one output
    return "\n".join(lines) + "\n"


def _destination_passing(definition: Any, solution: Any, tree: ast.Module, symbol: str) -> str:
    """How the entry takes its outputs: "destination-passing" or "value-returning", with why."""
    if "destination_passing_style" in solution.spec.model_fields_set:
        style = solution.spec.destination_passing_style
        return f"{'destination-passing' if style else 'value-returning'} (the solution says so)"
    entry = next(
        (f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == symbol), None
    )
    if entry is None:
        return "destination-passing (the schema's default)"
    positional = len(entry.args.posonlyargs) + len(entry.args.args)
    required = positional - len(entry.args.defaults)
    most = float("inf") if entry.args.vararg is not None else positional
    inputs, outputs = len(definition.inputs), len(definition.outputs)
    takes_inputs = required <= inputs <= most
    takes_outputs = required <= inputs + outputs <= most
    why = "the solution does not say"
    if takes_inputs and not takes_outputs:
        return f"value-returning ({why}; its entry takes the inputs only)"
    if takes_outputs and not takes_inputs:
        return f"destination-passing ({why}; its entry takes the inputs and the outputs)"
    if takes_inputs and _returns_a_value(entry):  # either call fits: what it returns decides
        return f"value-returning ({why}; its entry returns a value)"
    return "destination-passing (the schema's default)"


def _returns_a_value(function: ast.FunctionDef) -> bool:
    """Whether the function's own body (not a function nested in it) returns something other
    than None: a destination-passing entry writes its outputs and returns nothing."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        returned = node.value if isinstance(node, ast.Return) else None
        if returned is not None and not (
            isinstance(returned, ast.Constant) and returned.value is None
        ):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def kernel_source(definition: Any, solution: Any) -> Kernel:
    source, symbol, left_out = _entry(solution)
    header = f"# FlashInfer-Bench solution {solution.name} by {solution.author} (provenance.json)\n"
    tree = python_ast.parse(source)
    convention = _destination_passing(definition, solution, tree, symbol)
    if convention.startswith("value-returning"):
        return Kernel(header + source, symbol, left_out, convention)
    bound = {
        s.name
        for s in tree.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    name = BRIDGE
    while name in bound:
        name += "_"
    bridge = _bridge(definition, solution, symbol, name)
    return Kernel(header + source.rstrip() + "\n" + bridge, name, left_out, convention)
