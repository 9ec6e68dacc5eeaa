"""reference.py of a task made from a definition: the definition's reference code verbatim
(its `run` is the task's forward()), the axes as module constants, and a get_inputs() that
draws each input as FlashInfer-Bench's benchmark draws a random input (its bench/utils.py
`_rand_tensor`, rule for rule), so that a latency here and one in its traces are taken on
data of the same kind."""

from __future__ import annotations

import math
from typing import Any

from daemon.flashinfer.shapes import axis_values, shape_of

__all__ = ["reference_source"]

INTEGER_RANGES = {
    "int8": (-128, 128),
    "int16": (-1024, 1024),
    "int32": (-1024, 1024),
    "int64": (-1024, 1024),
}
"""FlashInfer-Bench's ranges for random integers (high excluded)."""


def _draw(dtype: str, shape: str) -> str:
    """The expression that draws one random input of `dtype` and `shape` as FlashInfer-Bench
    does: normal floats, float8 from normal float32 clamped to [-2, 2], fair booleans,
    integers uniform in their range."""
    if dtype in ("float32", "float16", "bfloat16"):
        return f"torch.randn({shape}, dtype=torch.{dtype})"
    if dtype in ("float8_e4m3fn", "float8_e5m2"):
        return f"torch.randn({shape}, dtype=torch.float32).clamp(-2.0, 2.0).to(torch.{dtype})"
    if dtype == "bool":
        return f"torch.randint(0, 2, {shape}, dtype=torch.bool)"
    low, high = INTEGER_RANGES[dtype]
    return f"torch.randint({low}, {high}, {shape}, dtype=torch.{dtype})"


def _literal(value: bool | int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def _input(definition: Any, name: str, spec: Any, workload: Any | None) -> str:
    given = workload.inputs.get(name) if workload is not None else None
    if given is not None and given.type == "scalar":
        return _literal(given.value)
    dtype = str(spec.dtype.value)
    if spec.shape is None:  # a scalar input: one draw, as a Python number
        return _draw(dtype, "()") + ".item()"
    # (FlashInfer-Bench softmaxes a sampling definition's `probs`: those are not imported)
    return _draw(dtype, shape_of(spec))


def reference_source(definition: Any, workload: Any | None, source: str) -> str:
    """The reference.py text; `workload` (the first) gives the variable axes and the scalar
    inputs, `source` names where the definition came from."""
    values = axis_values(definition, workload)
    first = workload.uuid if workload is not None else "-"
    inputs = list(definition.inputs)
    fixed = [
        name
        for name, given in (workload.inputs.items() if workload is not None else [])
        if given.type == "safetensors" and name in definition.inputs
    ]
    lines = [
        f'"""FlashInfer-Bench definition {definition.name} ({definition.op_type}), from',
        source,
        "as `accelopt import-flashinfer` wrote it (provenance.json): the definition's reference",
        "verbatim, then what accelopt's task format adds: the axes, forward() and get_inputs().",
        '"""',
        "",
        definition.reference.rstrip(),
        "",
        "",
        "# --- added by accelopt import-flashinfer ---",
        "import torch  # noqa: E402",
        "",
        "# The axes: the definition's constants, and its variable axes as the first workload",
        f"# ({first}) gives them; workloads.jsonl holds all.",
    ]
    for axis, value in values.items():
        kind = "const" if axis in definition.const_axes else "var"
        lines.append(f"{axis} = {value}  # {kind}")
    lines += ["", f"OUTPUT_NAMES = {list(definition.outputs)!r}"]
    if fixed:
        lines += [
            "# Inputs the workloads load from safetensors files (index arrays, tables): the",
            "# same across seeds.",
            f"FIXED_INPUTS = {fixed!r}",
        ]
    parameters = ", ".join(inputs)
    lines += [
        "",
        "",
        f"def forward({parameters}):",
        '    """The definition\'s run(), its outputs by name (FlashInfer-Bench takes a tuple in',
        '    the definition\'s order of outputs)."""',
        f"    result = run({parameters})",
        "    if isinstance(result, dict):",
        "        return {name: result[name] for name in OUTPUT_NAMES}",
        "    values = result if isinstance(result, tuple | list) else [result]",
        "    return dict(zip(OUTPUT_NAMES, values, strict=True))",
        "",
        "",
        "def get_inputs():",
        '    """Each input drawn as FlashInfer-Bench draws a random one, in the definition\'s',
        '    order."""',
        "    return {",
    ]
    for name, spec in definition.inputs.items():
        lines.append(f"        {name!r}: {_input(definition, name, spec, workload)},")
    lines += ["    }", ""]
    return "\n".join(lines)
