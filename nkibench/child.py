"""The sandboxed child: `python -m nkibench.child` reads one request on stdin, applies its
resource limits to itself, does one phase of a check, and writes its result to a file.

Phases:
- reference: run the task's get_inputs/forward for each seed; save inputs and expected outputs
- kernel:    run the (untrusted) kernel on those inputs under nkisim; save its outputs
- compare:   apply the task's transform_nki_outputs and compare with the expected outputs
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from nkibench.arrays import load_array, save_array
from nkibench.correctness import compare_outputs
from nkibench.flop_count import compulsory_bytes, count_forward
from nkibench.kernel_runner import run_kernel_phase
from nkibench.neuron.child import neuron_kernel_phase, neuron_measure_phase
from nkibench.nkisim.dtypes import as_dtype
from nkibench.reference_module import load_reference
from nkibench.sandbox import apply_limits, die_with_parent
from nkibench.triton.phases import TRITON_PHASES

__all__ = ["main"]


def _spec(value: Any, folder: Path, stem: str) -> dict[str, Any]:
    if isinstance(value, np.ndarray):
        save_array(folder / f"{stem}.npy", value)
        return {
            "kind": "array",
            "file": f"{stem}.npy",
            "shape": list(value.shape),
            "dtype": str(value.dtype),
        }
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | float):
        return {"kind": "scalar", "value": value}
    raise TypeError(f"{type(value).__name__} is neither a NumPy array nor a number")


def _restore(spec: dict[str, Any], folder: Path) -> Any:
    if spec["kind"] == "array":
        return load_array(folder / spec["file"])
    return spec["value"]


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def _reference_error(error: BaseException, path: str) -> dict[str, Any]:
    line = 0
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == path:
            line = frame.lineno or 0
    where = f"{Path(path).name} line {line}" if line else Path(path).name
    return {"ok": False, "kind": "task", "message": f"{where}: {type(error).__name__}: {error}"}


class _TaskFailure(Exception):
    """The task's own code failed: the phase's result is this error."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["message"])
        self.result = result


def _reference_module(request: dict[str, Any]) -> ModuleType:
    path = request["reference"]
    try:
        return load_reference(Path(path), request["overrides"])
    except Exception as e:
        raise _TaskFailure(_reference_error(e, path)) from e


def _count_work(
    module: ModuleType, inputs: list[Any], kernel_inputs: list[Any], expected: list[Any]
) -> dict[str, Any]:
    """The roofline's flops and bytes, counted from forward() (see nkibench.flop_count)."""
    try:
        tally = count_forward(module.forward, inputs)
    except Exception as e:
        return {"error": f"counting forward()'s work failed: {type(e).__name__}: {e}"}
    return {
        "vec_flops": tally.vec_flops,
        "mm_flops": tally.mm_flops,
        "bytes": compulsory_bytes(kernel_inputs, expected),
    }


def reference_phase(request: dict[str, Any]) -> dict[str, Any]:
    path = request["reference"]
    module = _reference_module(request)
    data = Path(request["data_dir"])
    seeds: dict[str, Any] = {}
    work: dict[str, Any] | None = None
    for seed in request["seeds"]:
        folder = data / f"seed_{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            np.random.seed(seed)
            inputs = module.get_inputs()
            if not isinstance(inputs, list | tuple):
                raise TypeError(f"get_inputs() returned a {type(inputs).__name__}, not a list")
            started = time.perf_counter()
            expected = module.forward(
                *[np.copy(x) if isinstance(x, np.ndarray) else x for x in inputs]
            )
            forward_s = time.perf_counter() - started
            transform = getattr(module, "transform_to_nki_inputs", None)
            kernel_inputs = _listed(transform(list(inputs))) if transform else list(inputs)
            for i, value in enumerate(kernel_inputs):
                if isinstance(value, np.ndarray):
                    try:
                        as_dtype(value.dtype)
                    except Exception:
                        raise TypeError(
                            f"kernel input {i} has dtype {value.dtype}, which NKI does not have "
                            "(cast it, e.g. .astype(np.float32))"
                        ) from None
            if request.get("count_work") and work is None:
                work = _count_work(module, list(inputs), kernel_inputs, _listed(expected))
            seeds[str(seed)] = {
                "inputs": [_spec(v, folder, f"input_{i}") for i, v in enumerate(kernel_inputs)],
                "expected": [
                    _spec(v, folder, f"expected_{i}") for i, v in enumerate(_listed(expected))
                ],
                "forward_s": forward_s,
            }
        except Exception as e:
            return _reference_error(e, path)
    return {"ok": True, "seeds": seeds, "work": work}


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    return run_kernel_phase(request, _restore)


def compare_phase(request: dict[str, Any]) -> dict[str, Any]:
    # Triton tasks have no output transform: their reference (and torch) need not load here
    module = _reference_module(request) if request.get("transform", True) else None
    transform = getattr(module, "transform_nki_outputs", None)
    data, outputs = Path(request["data_dir"]), Path(request["out_dir"])
    seeds: dict[str, Any] = {}
    for seed in request["seeds"]:
        manifest = request["manifest"][str(seed)]
        expected = [_restore(spec, data / f"seed_{seed}") for spec in manifest["expected"]]
        count = request["output_counts"][str(seed)]
        got = [load_array(outputs / f"seed_{seed}" / f"output_{i}.npy") for i in range(count)]
        reference = expected[0] if len(expected) == 1 else tuple(expected)
        result = got[0] if len(got) == 1 else tuple(got)
        if transform is not None:
            try:
                result = transform(result, reference)
            except Exception as e:
                seeds[str(seed)] = {
                    "correct": False,
                    "max_rel_l2": None,
                    "message": "transform_nki_outputs failed on the kernel's outputs: "
                    f"{type(e).__name__}: {e}",
                }
                continue
        comparison = compare_outputs(result, reference, request["rel_tol"])
        seeds[str(seed)] = {
            "correct": comparison.correct,
            "max_rel_l2": comparison.max_rel_l2,
            "message": comparison.message,
        }
        if not comparison.correct:
            break
    return {"ok": True, "seeds": seeds}


def _triton_phase(kind: str) -> Any:
    def phase(request: dict[str, Any]) -> dict[str, Any]:
        from nkibench.triton.child import PHASES as TRITON  # noqa: PLC0415 (torch: only here)

        return TRITON[kind](request, _restore)

    return phase


PHASES = {
    **{kind: _triton_phase(kind) for kind in TRITON_PHASES},
    "reference": reference_phase,
    "kernel": kernel_phase,
    "compare": compare_phase,
    "neuron_kernel": lambda request: neuron_kernel_phase(request, _restore),
    "neuron_measure": neuron_measure_phase,
}


def main() -> None:
    die_with_parent()
    request = json.loads(sys.stdin.buffer.read())
    apply_limits(request["limits"])  # before anything of the task or the kernel runs
    result_path = Path(request["result_path"])
    try:
        result = PHASES[request["kind"]](request)
    except _TaskFailure as failure:
        result = failure.result
    except MemoryError:
        result = {
            "ok": False,
            "kind": "resource",
            "message": "out of memory (the memory limit was reached)",
        }
    result_path.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
