"""The neuron backend's phases for current NKI (the `nki` package, Neuron SDK 2.29 and later),
inside the sandboxed child.

kernel: `@nki.jit` called with NumPy arrays compiles the kernel and runs it standalone on the
  NeuronCore, no framework (nki.jit's reference; the 0.3.0 update guide). NKI keeps the NEFF it
  built in NKI_ARTIFACTS_DIR (as kernel.neff), a variable NKI reads when it is imported, so it
  is set first (the nrtpy NKI tutorial, neuron-runtime/nrtpy/tutorial-debug-neff-nrtpy.rst).
  The first seed's NEFF is kept, with its inputs saved under the kernel's parameter names
  (the NEFF's input names) for the profiler and nrtpy.
measure: one `neuron-explorer capture` of that NEFF with those inputs, summarised by
  `neuron-explorer view --output-format summary-json` (the counters); then the latency:
  nrtpy's device-side benchmark (NrtpyModel.benchmark(mode="device")) where an nrtpy
  interpreter is known, else repeated traced captures as on the legacy route; sampled again
  while the spread exceeds the tolerance (AccelOpt's rule).

Assumptions no Trainium host here could check (the docs read are SDK 2.32's):
- neuron-explorer's summary-json layout is undocumented ("may change"): flat, keyed and
  `["summary"][0]` forms are read, with a top-level `latency` in ms as the last resort;
- a `*_percent` value above 1 means the fields are percents (stored as fractions);
- `view -n NEFF -s NTFF --output-format summary-json` works as neuron-profile's did;
- the NEFF's input names are the kernel's parameter names (else nrtpy goes by position);
- the standalone call returns NumPy arrays, and a NEFF left behind by an exception means a
  runtime error, not a compile error;
- `neuron-explorer capture` exists on SDK 2.29-2.31 too;
- inputs saved as their raw bits (bfloat16 as uint16) are what the device reads;
- nki ignores NEURON_CC_FLAGS, so AccelOpt's compile options do not reach this route;
- NKI 0.7 comes with SDK 2.33 (our notes; the docs snapshot ends at 2.32).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from nkibench import python_ast
from nkibench.backends.neuron.profiler import (
    PROFILER_TIMEOUT_S,
    ProfilerFailed,
    capture,
    summary,
    traced_ms,
)
from nkibench.backends.neuron.summary import SummaryError, best_latency
from nkibench.sandbox.arrays import EXTENSION_DTYPES, listed
from nkibench.sandbox.kernel import (
    error_result,
    load_phase_kernel,
    run_error,
    save_outputs,
    seed_arguments,
)

__all__ = ["ARTIFACTS_FOLDER", "NrtpyFailed", "kernel_phase", "measure_phase", "parameter_names"]

ARTIFACTS_FOLDER = "nki_artifacts"
NEFF_NAME = "kernel.neff"
RUNNER = Path(__file__).with_name("nrtpy_runner.py")
WARMUP_RUNS = 2


class NrtpyFailed(Exception):
    pass


def parameter_names(source: str, function: str) -> list[str]:
    """The kernel function's positional parameters, in order (NKI names the NEFF's inputs
    after them)."""
    for node in python_ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    return []


def _neff(artifacts: Path) -> Path | None:
    named = artifacts / NEFF_NAME
    if named.is_file():
        return named
    found = sorted(artifacts.rglob("*.neff"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _save_inputs(request: dict[str, Any], args: list[Any]) -> dict[str, str]:
    """The array arguments as plain .npy files named after their parameters (bfloat16 and fp8
    as their bits: the device reads bytes)."""
    folder = Path(request["inputs_dir"])
    folder.mkdir(parents=True, exist_ok=True)
    names = parameter_names(request["kernel_source"], request["function"])
    saved: dict[str, str] = {}
    for index, value in enumerate(args):
        if not isinstance(value, np.ndarray):
            continue  # a number is a compile-time constant of the kernel, not a NEFF input
        name = names[index] if index < len(names) else f"input{index}"
        array = value.view(f"u{value.itemsize}") if value.dtype.name in EXTENSION_DTYPES else value
        path = folder / f"{name}.npy"
        np.save(path, np.ascontiguousarray(array), allow_pickle=False)
        saved[name] = str(path)
    return saved


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    artifacts = Path.cwd() / ARTIFACTS_FOLDER
    artifacts.mkdir(exist_ok=True)
    os.environ["NKI_ARTIFACTS_DIR"] = str(artifacts)  # read when nki is imported
    try:
        importlib.import_module("nki")  # the real package (or a test double), never nkisim
    except Exception as e:
        return error_result(
            "compile", f"nki does not import in the sandbox: {type(e).__name__}: {e}"
        )
    # NKI's compiler reads the kernel's source file: give it the source being checked.
    source_file = Path.cwd() / "kernel.py"
    source_file.write_text(request["kernel_source"], encoding="utf-8")
    request = {**request, "kernel_file": str(source_file)}
    kernel, failure = load_phase_kernel(request)
    if failure is not None:
        return failure
    seeds: dict[str, Any] = {}
    inputs: dict[str, str] = {}
    for number, seed in enumerate(request["seeds"]):
        args = seed_arguments(request, seed)
        started = time.perf_counter()
        try:
            produced = kernel(*args)
        except MemoryError:
            raise
        except Exception as e:
            # A NEFF left behind means it compiled and the run failed (an NrtError).
            compiled = number > 0 or _neff(artifacts) is not None
            return run_error(e, request, seed, kind="runtime" if compiled else "compile")
        outputs = [np.asarray(o) for o in listed(produced)]
        save_outputs(request, seed, outputs)
        if number == 0:
            neff = _neff(artifacts)
            if neff is None:
                return error_result(
                    "compile",
                    f"nki.jit ran the kernel but left no NEFF in NKI_ARTIFACTS_DIR ({artifacts})",
                    seed=seed,
                )
            shutil.copyfile(neff, request["neff_path"])
            inputs = _save_inputs(request, args)
        seeds[str(seed)] = {"outputs": len(outputs), "kernel_s": time.perf_counter() - started}
    return {"ok": True, "seeds": seeds, "warnings": [], "capacity": {}, "inputs": inputs}


def _nrtpy_ms(request: dict[str, Any], folder: Path, attempt: int) -> list[float]:
    """Device-side durations of nrtpy's benchmark, run by the nrtpy environment's Python."""
    asked = folder / f"nrtpy_{attempt}.json"
    answer = folder / f"nrtpy_{attempt}.result.json"
    asked.write_text(
        json.dumps(
            {
                "neff": request["neff_path"],
                "inputs": request["inputs"],
                "warmup": WARMUP_RUNS,
                "iterations": int(request["iterations"]),
                "result": str(answer),
            }
        )
    )
    try:
        completed = subprocess.run(
            [request["nrtpy_python"], str(RUNNER), str(asked)],
            capture_output=True,
            text=True,
            timeout=PROFILER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NrtpyFailed(f"nrtpy did not run: {e}") from None
    if completed.returncode != 0 or not answer.exists():
        detail = (completed.stderr or completed.stdout).strip()[-500:]
        raise NrtpyFailed(f"nrtpy's benchmark exited with status {completed.returncode}: {detail}")
    try:
        durations = json.loads(answer.read_text())["durations_ms"]
    except (ValueError, KeyError, TypeError) as e:
        raise NrtpyFailed(f"nrtpy's benchmark wrote no readable answer: {e!r:.200}") from None
    if (
        not isinstance(durations, list)
        or not durations
        or not all(isinstance(d, int | float) and d > 0 for d in durations)
    ):
        raise NrtpyFailed(f"nrtpy's benchmark returned no usable durations: {durations!r:.200}")
    return [float(d) for d in durations]


def measure_phase(request: dict[str, Any]) -> dict[str, Any]:
    profiler, neff = request["profiler"], request["neff_path"]
    folder = Path.cwd()
    pairs = [item for name, path in request["inputs"].items() for item in (name, path)]
    runs = int(request["iterations"])
    nrtpy = request.get("nrtpy_python")
    retries, tolerance = int(request["retries"]), float(request["spread_tolerance"])
    try:
        trace = capture(profiler, neff, folder / "profile.ntff", pairs)
        counters = summary(profiler, neff, str(trace))
        if nrtpy:
            best, attempts = best_latency(
                lambda attempt: _nrtpy_ms(request, folder, attempt), retries, tolerance
            )
        else:
            best, attempts = best_latency(
                lambda attempt: [
                    traced_ms(profiler, neff, folder, attempt * 1000 + i, pairs)
                    for i in range(runs)
                ],
                retries,
                tolerance,
            )
    except (ProfilerFailed, SummaryError, NrtpyFailed) as e:
        return {"ok": False, "kind": "measurement", "message": str(e), "line": 0}
    return {
        "ok": True,
        "counters": counters,
        "latency": best,
        "attempts": attempts,
        "timer": "nrtpy" if nrtpy else f"{Path(profiler).name} capture",
    }
