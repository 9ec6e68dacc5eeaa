"""The kernel phase of a check, inside the sandboxed child: load the kernel with restricted
builtins, run it on each seed's inputs, save its outputs, and report what went wrong in the
kernel's own terms (error kind, message, kernel line)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from nkibench.arrays import save_array
from nkibench.correctness import relative_l2
from nkibench.cost import estimate
from nkibench.kernel_loader import kernel_line, load_kernel
from nkibench.nkisim.dtypes import is_float
from nkibench.nkisim.errors import KernelError, OrderDependence
from nkibench.nkisim.frontend import install_shadow_modules
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import KernelRun, execute
from nkibench.static_check import check_source, violation_kind

__all__ = [
    "ORDER_TOLERANCE",
    "load_phase_kernel",
    "run_error",
    "run_kernel_phase",
    "save_outputs",
    "seed_arguments",
]

ORDER_TOLERANCE = 1e-5
"""Relative L2 change allowed when affine loops run backwards (float reassociation only) in
float32; narrower outputs allow a tenth of their epsilon (a reassociated sum may round the
last bit of a bfloat16 the other way)."""


def order_tolerance(dtype: np.dtype[Any]) -> float:
    eps = float(ml_dtypes.finfo(dtype).eps)  # type: ignore[no-untyped-call]
    return max(ORDER_TOLERANCE, 0.1 * eps)


def _error(kind: str, message: str, line: int = 0, seed: int | None = None) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message, "line": line, "seed": seed}


def _located(message: str, display: str, line: int) -> str:
    return f"{display} line {line}: {message}" if line else message


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


def load_phase_kernel(request: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """The kernel function of a kernel phase's request, or the error result that says why
    it does not load. The shadow NKI modules must be installed first if nkisim runs it."""
    display = request["display_name"]
    filename = request["kernel_file"]
    dialect = request.get("dialect", "nki")
    violations = check_source(request["kernel_source"], display, dialect)
    if violations:
        message = "; ".join(v.render(display) for v in violations[:5])
        return None, _error(violation_kind(violations), message, violations[0].line)
    try:
        kernel = load_kernel(request["kernel_source"], filename, request["function"], dialect)
        return kernel, None
    except KernelError as e:
        line = kernel_line(e, filename)
        return None, _error(e.kind, _located(e.message, display, line), line)
    except SyntaxError as e:
        return None, _error(
            "compile", f"{display} line {e.lineno}: SyntaxError: {e.msg}", e.lineno or 0
        )
    except MemoryError:
        raise
    except Exception as e:
        line = kernel_line(e, filename)
        return None, _error("compile", _located(f"{type(e).__name__}: {e}", display, line), line)


def run_error(
    error: BaseException, request: dict[str, Any], seed: int, kind: str = "runtime"
) -> dict[str, Any]:
    """The result of a kernel that raised while running on `seed`."""
    display, filename = request["display_name"], request["kernel_file"]
    line = kernel_line(error, filename)
    if isinstance(error, KernelError):
        return _error(error.kind, _located(error.message, display, line), line, seed)
    if isinstance(error, RecursionError):
        return _error("runtime", f"RecursionError: {error}", line, seed)
    if isinstance(error, OSError) and error.errno == errno.EFBIG:
        # Python ignores SIGXFSZ: the write fails instead
        return _error("resource", "the kernel wrote more than the file size limit", line, seed)
    return _error(kind, _located(f"{type(error).__name__}: {error}", display, line), line, seed)


def save_outputs(request: dict[str, Any], seed: int, outputs: list[Any]) -> None:
    folder = Path(request["out_dir"]) / f"seed_{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    for i, array in enumerate(outputs):
        save_array(folder / f"output_{i}.npy", np.asarray(array))


def seed_arguments(
    request: dict[str, Any], seed: int, restore: Callable[[dict[str, Any], Path], Any]
) -> list[Any]:
    manifest = request["manifest"][str(seed)]
    folder = Path(request["data_dir"]) / f"seed_{seed}"
    return [restore(spec, folder) for spec in manifest["inputs"]]


def _first_seed_details(request: dict[str, Any], run: KernelRun) -> dict[str, Any]:
    if request.get("trace_path"):
        run.trace.dump(Path(request["trace_path"]))
    return {
        "warnings": run.warnings,
        "capacity": {
            "sbuf_peak_bytes": run.capacity.sbuf_peak_bytes,
            "sbuf_limit_bytes": run.capacity.sbuf_limit,
            "psum_peak_banks": run.capacity.psum_peak_banks,
            "psum_banks": run.capacity.psum_banks,
        },
        "estimate": (
            estimate(run.trace.instructions, request["target"]).to_json()
            if request.get("estimate")
            else None
        ),
    }


def run_kernel_phase(
    request: dict[str, Any], restore: Callable[[dict[str, Any], Path], Any]
) -> dict[str, Any]:
    install_shadow_modules()
    kernel, failure = load_phase_kernel(request)
    if failure is not None:
        return failure
    config = Config(
        target=request["target"],
        strict_capacity=request["strict_capacity"],
        kernel_file=request["kernel_file"],
    )
    seeds: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for number, seed in enumerate(request["seeds"]):
        args = seed_arguments(request, seed, restore)
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
            "never_written": run.never_written,
            "instructions": len(run.trace),
            "kernel_s": run.seconds,
        }
        if number == 0:
            seeds[str(seed)]["engine_counts"] = run.trace.engine_counts()
            details = _first_seed_details(request, run)
        del run
    return {"ok": True, "seeds": seeds, **details}
