"""Comparing kernel outputs with the reference: AccelOpt's rule, relative L2 error in float64,

    ||out - ref||_2 <= rel_tol * ||ref||_2     (rel_tol 2e-5 for float32 unless the task says)

with the number of outputs and every shape matching exactly; each output is judged on its own,
under its own tolerance where task.toml gives one (`[outputs.<name>]`: a dtype, its own rel_tol,
FlashInfer-Bench's per-element atol/rtol with a matched ratio; nkibench.policy.tolerance).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from nkibench.dtypes import is_float
from nkibench.policy.tolerance import Tolerance

__all__ = ["Comparison", "compare_outputs", "mismatched", "relative_l2", "unknown_outputs"]


@dataclass(frozen=True)
class Comparison:
    correct: bool
    max_rel_l2: float | None
    message: str


CHUNK = 1 << 22
"""Elements converted to float64 at a time: a 1 GB output must not need 6 GB to compare."""

THREADS = min(8, os.cpu_count() or 1)
"""Chunks compared at once: NumPy lets go of the GIL in the casts and the reductions, so a
512 MB output compares in a fraction of one core's time. Each chunk's sum is kept apart and
the sums added in order, so the result does not depend on the thread count."""


def _per_chunk(
    out: np.ndarray[Any, Any],
    ref: np.ndarray[Any, Any],
    reduce: Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], tuple[float, ...]],
) -> list[tuple[float, ...]]:
    """`reduce` of each CHUNK of out and ref, both raveled and converted to float64, in
    order."""
    a, b = np.ravel(out), np.ravel(ref)

    def one(start: int) -> tuple[float, ...]:
        x = a[start : start + CHUNK].astype(np.float64)
        return reduce(x, b[start : start + CHUNK].astype(np.float64))

    starts = range(0, a.size, CHUNK)
    if len(starts) < 2 or THREADS < 2:
        return [one(start) for start in starts]
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, starts))


def _squares(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[float, float]:
    difference = x - y
    return float(np.dot(difference, difference)), float(np.dot(y, y))


def relative_l2(out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any]) -> float:
    """||out - ref|| / ||ref|| in float64 (inf when ref is zero and out is not)."""
    sums = _per_chunk(out, ref, _squares)
    difference = sum(d for d, _ in sums)
    scale = sum(s for _, s in sums)
    if scale == 0.0:
        return 0.0 if difference == 0.0 else float("inf")
    return float(np.sqrt(difference) / np.sqrt(scale))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def mismatched(
    out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any], atol: float, rtol: float
) -> int:
    """Elements FlashInfer-Bench's rule fails, in float64: |out - ref| > atol and
    |out - ref| > rtol * |ref| (a NaN or an infinity that differs fails)."""

    def failing(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> tuple[float]:
        with np.errstate(invalid="ignore", over="ignore"):
            difference = np.abs(x - y)
            passed = (difference <= atol) | (difference <= rtol * np.abs(y)) | (x == y)
        return (float(np.count_nonzero(~passed)),)

    return int(sum(count for (count,) in _per_chunk(out, ref, failing)))


def _tolerance_of(
    index: int, name: str | None, rel_tol: float, tolerances: Mapping[str, Tolerance]
) -> Tolerance:
    """An output's tolerance: task.toml's `[outputs.<name>]`, else `[outputs.<index>]`, else
    the task's relative L2."""
    if name is not None and name in tolerances:
        return tolerances[name]
    return tolerances.get(str(index), Tolerance(rel_tol))


def unknown_outputs(
    tolerances: Mapping[str, Tolerance], names: Sequence[str] | None, count: int
) -> list[str]:
    """task.toml's output tables that name no output of the reference."""
    known = {*(names or ()), *(str(i) for i in range(count))}
    return [key for key in tolerances if key not in known]


def compare_outputs(
    outputs: Any,
    expected: Any,
    rel_tol: float,
    names: Sequence[str] | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> Comparison:
    """Each output on its own against the reference's, under its own tolerance (`names`: the
    reference's names of its outputs; `tolerances`: task.toml's `[outputs.*]` by name or
    position, see nkibench.policy.tolerance). max_rel_l2 is the worst relative L2 over the
    array outputs, whichever rule judged them."""
    got, want = _as_list(outputs), _as_list(expected)
    if len(got) != len(want):
        return Comparison(
            False, None, f"the kernel returned {len(got)} output(s), the reference {len(want)}"
        )
    labels = list(names) if names is not None and len(names) == len(want) else None
    worst = 0.0
    for index, (produced, ref) in enumerate(zip(got, want, strict=True)):
        i = labels[index] if labels else index
        tolerance = _tolerance_of(
            index, labels[index] if labels else None, rel_tol, tolerances or {}
        )
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
        if tolerance.dtype is not None and out.dtype.name != tolerance.dtype:
            message = (
                f"output {i}: dtype {out.dtype.name}, where the task declares {tolerance.dtype}"
            )
            return Comparison(False, None, message)
        nan = int(np.count_nonzero(np.isnan(out))) if is_float(out.dtype) else 0
        if nan and not np.isnan(ref).any():
            return Comparison(False, None, f"output {i}: {nan} element(s) are NaN")
        error = relative_l2(out, ref)
        worst = max(worst, error)
        if tolerance.rel_tol is not None and not error <= tolerance.rel_tol:
            message = (
                f"output {i}: relative L2 error {error:.3e} exceeds tolerance "
                f"{tolerance.rel_tol:.1e}"
            )
            return Comparison(False, error, message)
        if tolerance.atol is not None and tolerance.rtol is not None:
            failed = mismatched(out, ref, tolerance.atol, tolerance.rtol)
            allowed = math.floor((1.0 - tolerance.matched_ratio) * out.size + 1e-9)
            if failed > allowed:
                message = (
                    f"output {i}: {failed} of {out.size} element(s) off by more than atol "
                    f"{tolerance.atol:g} and rtol {tolerance.rtol:g}"
                    + (f" (at most {allowed} may be)" if allowed else "")
                )
                return Comparison(False, error, message)
    return Comparison(True, worst, "")
