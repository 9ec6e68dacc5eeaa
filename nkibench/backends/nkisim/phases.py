"""The nkisim backend's kernel phase, inside the sandboxed child: the kernel runs under nkisim
(the shadow NKI modules installed), its affine_range loops are checked for order dependence,
and the first seed's instruction trace is written to the output folder as data. This process
ran the kernel, so it judges nothing: the trace is checked and estimated by another child
(nkibench.backends.nkisim.estimate), the outputs are compared by a third."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from nkibench.dialects import get_dialect
from nkibench.dtypes import is_float
from nkibench.nkisim.errors import OrderDependence, UnsupportedApi
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import KernelRun, execute
from nkibench.nkisim.trace_file import OutputRecord, write_trace
from nkibench.policy.correctness import relative_l2
from nkibench.sandbox.kernel import (
    load_phase_kernel,
    run_error,
    save_outputs,
    seed_arguments,
)
from nkibench.sandbox.progress import PROGRESS_FD_KEY, Beat

__all__ = ["ORDER_TOLERANCE", "TRACE_FILE", "kernel_phase", "order_tolerance"]

TRACE_FILE = "trace.jsonl"
"""The first seed's trace, in the kernel phase's output folder (nkibench.nkisim.trace_file)."""
ORDER_TOLERANCE = 1e-5
"""Relative L2 change allowed when affine loops run backwards (float reassociation only) in
float32; narrower outputs allow a tenth of their epsilon (a reassociated sum may round the
last bit of a bfloat16 the other way)."""


def order_tolerance(dtype: np.dtype[Any]) -> float:
    eps = float(ml_dtypes.finfo(dtype).eps)  # type: ignore[no-untyped-call]
    return max(ORDER_TOLERANCE, 0.1 * eps)


def _change(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> float:
    """How far two runs' outputs differ; never-written (NaN) elements must match exactly."""
    if not is_float(x.dtype):
        return 0.0 if np.array_equal(x, y) else float("inf")
    x, y = x.astype(np.float32, copy=False), y.astype(np.float32, copy=False)  # bf16, fp8
    missing = np.isnan(x)
    if not np.array_equal(missing, np.isnan(y)):
        return float("inf")
    return relative_l2(x[~missing], y[~missing]) if missing.any() else relative_l2(x, y)


def _differs(a: KernelRun, b: KernelRun) -> tuple[float, float]:
    """The worst output's change and that change over its dtype's tolerance."""
    worst = (0.0, 0.0)
    for x, y in zip(a.outputs, b.outputs, strict=True):
        change = _change(x, y)
        tolerance = order_tolerance(x.dtype) if is_float(x.dtype) else ORDER_TOLERANCE
        worst = max(worst, (change / tolerance, change))
    return worst


def _order_check(
    kernel: Any, args: list[Any], base: Config, first: KernelRun, display: str
) -> None:
    """Run the affine_range loops backwards; if the result moves, find the loop to blame."""
    if not first.affine_lines:
        return
    backwards = execute(kernel, args, Config(**{**base.__dict__, "reverse_affine": frozenset()}))
    excess, change = _differs(first, backwards)
    if excess <= 1.0:
        return
    for line in sorted(first.affine_lines):
        single = execute(
            kernel, args, Config(**{**base.__dict__, "reverse_affine": frozenset({line})})
        )
        excess, moved = _differs(first, single)
        if excess > 1.0:
            raise OrderDependence(
                f"{display} line {line}: the affine_range loop's result depends on the order of "
                f"its iterations (running it backwards changes the output by a relative L2 of "
                f"{moved:.2e}); affine_range promises independent iterations: use "
                "nl.sequential_range for a loop-carried dependency, or make iterations write "
                "disjoint locations"
            )
    raise OrderDependence(
        f"the result depends on the order of affine_range iterations (relative L2 change "
        f"{change:.2e} when all run backwards); use nl.sequential_range where iterations depend "
        "on each other"
    )


def _write_trace(request: dict[str, Any], run: KernelRun, beat: Beat | None) -> None:
    outputs = [OutputRecord(o.alloc.id, tuple(o.data.shape), o.box) for o in run.tensors]
    with (Path(request["out_dir"]) / TRACE_FILE).open("w", encoding="utf-8") as out:
        write_trace(
            out, request["target"], outputs, run.trace.instructions, run.lifetimes, beat=beat
        )


def _install_front(dialect_name: str) -> None:
    """nkisim's stand-ins for the dialect's modules (nkibench.dialects names them)."""
    front = get_dialect(dialect_name).shadow_front
    if front is None:
        raise UnsupportedApi(f"nkisim does not run {dialect_name} kernels")
    module, _, function = front.partition(":")
    getattr(importlib.import_module(module), function)()


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Run the kernel under nkisim on every seed; the first seed's trace is estimated."""
    _install_front(request["dialect"])
    kernel, failure = load_phase_kernel(request)
    if failure is not None:
        return failure
    beats = request.get(PROGRESS_FD_KEY)
    beat = Beat(beats) if beats is not None else None
    config = Config(
        target=request["target"],
        strict_capacity=request["strict_capacity"],
        kernel_file=request["kernel_file"],
        beat=beat,
    )
    seeds: dict[str, Any] = {}
    warnings: list[str] = []
    for number, seed in enumerate(request["seeds"]):
        args = seed_arguments(request, seed)
        try:
            run = execute(kernel, args, config)
            if number == 0 and request["order_check"]:
                _order_check(kernel, args, config, run, request["display_name"])
        except MemoryError:
            raise
        except Exception as e:
            return run_error(e, request, seed)
        save_outputs(request, seed, run.outputs)
        seeds[str(seed)] = {
            "outputs": len(run.outputs),
            "kernel_s": run.seconds,
        }
        if number == 0:
            _write_trace(request, run, beat)
            warnings = run.warnings
        del run
    return {"ok": True, "seeds": seeds, "warnings": warnings}
