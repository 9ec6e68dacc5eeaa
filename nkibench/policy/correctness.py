"""Comparing kernel outputs with the reference: AccelOpt's rule, relative L2 error in float64.

    ||out - ref||_2 <= rel_tol * ||ref||_2     (rel_tol 2e-5 for float32 unless the task says)

with the number of outputs and every shape matching exactly; each output is judged on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkibench.dtypes import is_float

__all__ = ["Comparison", "compare_outputs", "relative_l2"]


@dataclass(frozen=True)
class Comparison:
    correct: bool
    max_rel_l2: float | None
    message: str


CHUNK = 1 << 22
"""Elements converted to float64 at a time: a 1 GB output must not need 6 GB to compare."""


def relative_l2(out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any]) -> float:
    """||out - ref|| / ||ref|| in float64 (inf when ref is zero and out is not)."""
    a, b = np.ravel(out), np.ravel(ref)
    difference = scale = 0.0
    for start in range(0, a.size, CHUNK):
        x = a[start : start + CHUNK].astype(np.float64)
        y = b[start : start + CHUNK].astype(np.float64)
        difference += float(np.dot(x - y, x - y))
        scale += float(np.dot(y, y))
    if scale == 0.0:
        return 0.0 if difference == 0.0 else float("inf")
    return float(np.sqrt(difference) / np.sqrt(scale))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def compare_outputs(
    outputs: Any, expected: Any, rel_tol: float, names: Sequence[str] | None = None
) -> Comparison:
    """Each output on its own against the reference's (`names`: the reference's names of its
    outputs, which the messages use)."""
    got, want = _as_list(outputs), _as_list(expected)
    if len(got) != len(want):
        return Comparison(
            False, None, f"the kernel returned {len(got)} output(s), the reference {len(want)}"
        )
    labels = list(names) if names is not None and len(names) == len(want) else None
    worst = 0.0
    for index, (produced, ref) in enumerate(zip(got, want, strict=True)):
        i = labels[index] if labels else index
        if not isinstance(ref, np.ndarray):
            if isinstance(produced, np.ndarray) or produced != ref:
                return Comparison(
                    False, None, f"output {i}: {produced!r} differs from the reference {ref!r}"
                )
            continue
        out = np.asarray(produced)
        if out.shape != ref.shape:
            wanted = list(ref.shape)
            message = f"output {i}: shape {list(out.shape)} differs from the reference's {wanted}"
            return Comparison(False, None, message)
        nan = int(np.count_nonzero(np.isnan(out))) if is_float(out.dtype) else 0
        if nan and not np.isnan(ref).any():
            return Comparison(False, None, f"output {i}: {nan} element(s) are NaN")
        error = relative_l2(out, ref)
        worst = max(worst, error)
        if not error <= rel_tol:
            message = f"output {i}: relative L2 error {error:.3e} exceeds tolerance {rel_tol:.1e}"
            return Comparison(False, error, message)
    return Comparison(True, worst, "")
