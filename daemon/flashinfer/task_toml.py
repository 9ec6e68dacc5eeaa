"""task.toml of a task made from a definition: the triton backend, the definition's name and
description, each output's dtype held to FlashInfer-Bench's per-element tolerance for it
(daemon.flashinfer.judging), and the compulsory bytes as the roofline (a definition says
nothing of its flops)."""

from __future__ import annotations

import json
from typing import Any

from daemon.flashinfer.judging import Judging
from daemon.flashinfer.shapes import bytes_formula

__all__ = ["task_toml"]

TASK_DTYPES = ("bfloat16", "float16", "float32")


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes, ASCII only, are TOML's)."""
    return json.dumps(text, ensure_ascii=True)


def _task_dtype(definition: Any) -> str:
    """The task's precision: its first floating-point output's (bfloat16, float16 or
    float32), else float32; each output's own dtype is held by its [outputs] table."""
    for spec in definition.outputs.values():
        if str(spec.dtype.value) in TASK_DTYPES:
            return str(spec.dtype.value)
    return "float32"


def task_toml(
    definition: Any, judged: Judging, kernel_function: str, allow_torch_compute: bool
) -> str:
    description = definition.description or f"FlashInfer-Bench definition {definition.name}"
    lines = [
        "# Written by `accelopt import-flashinfer` (provenance.json says from what).",
        f"name = {_string(definition.name)}",
        'backend = "triton"',
        f"dtype = {_string(_task_dtype(definition))}",
        f"description = {_string(' '.join(description.split()))}",
    ]
    if kernel_function != "run":
        lines.append(f"kernel_function = {_string(kernel_function)}")
    if allow_torch_compute:
        lines.append("allow_torch_compute = true")
    lines += ["", "[roofline]", f"bytes = {_string(bytes_formula(definition))}"]
    for name, spec in definition.outputs.items():
        lines += [
            "",
            f"[outputs.{name}]",
            f"dtype = {_string(str(spec.dtype.value))}",
            f"atol = {judged.atol!r}",
            f"rtol = {judged.rtol!r}",
        ]
        if judged.matched_ratio is not None:
            lines.append(f"matched_ratio = {judged.matched_ratio!r}")
    return "\n".join(lines) + "\n"
