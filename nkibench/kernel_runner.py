"""The kernel phase of a check, inside the sandboxed child: load the kernel with restricted
builtins, run it on each seed's inputs, save its outputs, and report what went wrong in the
kernel's own terms (error kind, message, kernel line)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nkibench.correctness import relative_l2
from nkibench.nkisim.errors import KernelError, OrderDependence
from nkibench.nkisim.frontend import install_shadow_modules
from nkibench.nkisim.machine import Config
from nkibench.nkisim.runtime import KernelRun, execute, kernel_line, load_kernel
from nkibench.static_check import check_source, violation_kind

__all__ = ["ORDER_TOLERANCE", "run_kernel_phase"]

ORDER_TOLERANCE = 1e-5
"""Relative L2 change allowed when affine loops run backwards (float reassociation only)."""


def _error(kind: str, message: str, line: int = 0, seed: int | None = None) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message, "line": line, "seed": seed}


def _located(message: str, display: str, line: int) -> str:
    return f"{display} line {line}: {message}" if line else message


def _change(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> float:
    """How far two runs' outputs differ; never-written (NaN) elements must match exactly."""
    if x.dtype.kind != "f":
        return 0.0 if np.array_equal(x, y) else float("inf")
    missing = np.isnan(x)
    if not np.array_equal(missing, np.isnan(y)):
        return float("inf")
    return relative_l2(x[~missing], y[~missing]) if missing.any() else relative_l2(x, y)


def _differs(a: KernelRun, b: KernelRun) -> float:
    return max((_change(x, y) for x, y in zip(a.outputs, b.outputs, strict=True)), default=0.0)


def _order_check(
    kernel: Any, args: list[Any], base: Config, first: KernelRun, display: str
) -> None:
    """Run the affine_range loops backwards; if the result moves, find the loop to blame."""
    if not first.affine_lines:
        return
    backwards = execute(kernel, args, Config(**{**base.__dict__, "reverse_affine": frozenset()}))
    change = _differs(first, backwards)
    if change <= ORDER_TOLERANCE:
        return
    for line in sorted(first.affine_lines):
        single = execute(
            kernel, args, Config(**{**base.__dict__, "reverse_affine": frozenset({line})})
        )
        moved = _differs(first, single)
        if moved > ORDER_TOLERANCE:
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


def run_kernel_phase(
    request: dict[str, Any], restore: Callable[[dict[str, Any], Path], Any]
) -> dict[str, Any]:
    display = request["display_name"]
    filename = request["kernel_file"]
    violations = check_source(request["kernel_source"], display)
    if violations:
        message = "; ".join(v.render(display) for v in violations[:5])
        return _error(violation_kind(violations), message, violations[0].line)
    install_shadow_modules()
    try:
        kernel = load_kernel(request["kernel_source"], filename, request["function"])
    except KernelError as e:
        return _error(
            e.kind, _located(e.message, display, kernel_line(e, filename)), kernel_line(e, filename)
        )
    except SyntaxError as e:
        return _error("compile", f"{display} line {e.lineno}: SyntaxError: {e.msg}", e.lineno or 0)
    except MemoryError:
        raise
    except Exception as e:
        line = kernel_line(e, filename)
        return _error("compile", _located(f"{type(e).__name__}: {e}", display, line), line)
    config = Config(
        target=request["target"],
        strict_capacity=request["strict_capacity"],
        kernel_file=filename,
    )
    data, outputs = Path(request["data_dir"]), Path(request["out_dir"])
    seeds: dict[str, Any] = {}
    warnings: list[str] = []
    capacity: dict[str, Any] = {}
    for number, seed in enumerate(request["seeds"]):
        manifest = request["manifest"][str(seed)]
        args = [restore(spec, data / f"seed_{seed}") for spec in manifest["inputs"]]
        try:
            run = execute(kernel, args, config)
            if number == 0 and request["order_check"]:
                _order_check(kernel, args, config, run, display)
        except KernelError as e:
            line = kernel_line(e, filename)
            return _error(e.kind, _located(e.message, display, line), line, seed)
        except MemoryError:
            raise
        except RecursionError as e:
            return _error("runtime", f"RecursionError: {e}", kernel_line(e, filename), seed)
        except OSError as e:
            if e.errno == errno.EFBIG:  # Python ignores SIGXFSZ: the write fails instead
                return _error(
                    "resource",
                    "the kernel wrote more than the file size limit",
                    kernel_line(e, filename),
                    seed,
                )
            line = kernel_line(e, filename)
            return _error(
                "runtime", _located(f"{type(e).__name__}: {e}", display, line), line, seed
            )
        except Exception as e:
            line = kernel_line(e, filename)
            return _error(
                "runtime", _located(f"{type(e).__name__}: {e}", display, line), line, seed
            )
        folder = outputs / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        for i, array in enumerate(run.outputs):
            np.save(folder / f"output_{i}.npy", array, allow_pickle=False)
        seeds[str(seed)] = {
            "outputs": len(run.outputs),
            "never_written": run.never_written,
            "instructions": len(run.trace),
            "kernel_s": run.seconds,
        }
        if number == 0:
            warnings = run.warnings
            capacity = {
                "sbuf_peak_bytes": run.capacity.sbuf_peak_bytes,
                "sbuf_limit_bytes": run.capacity.sbuf_limit,
                "psum_peak_banks": run.capacity.psum_peak_banks,
                "psum_banks": run.capacity.psum_banks,
            }
            seeds[str(seed)]["engine_counts"] = run.trace.engine_counts()
            if request.get("trace_path"):
                run.trace.dump(Path(request["trace_path"]))
        del run
    return {"ok": True, "seeds": seeds, "warnings": warnings, "capacity": capacity}
