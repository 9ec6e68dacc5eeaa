"""The neuron backend's phases inside the sandboxed child (named in NeuronBackend.phases).

kernel: the route the parent chose for the kernel's dialect (request["route"]): current NKI
  (nkibench.backends.neuron.current) or legacy NKI, below.
legacy kernel: compile and run the kernel on the device for every seed through the
  documented legacy entry point `neuronxcc.nki.baremetal` (it returns the outputs as NumPy
  arrays), keeping the first seed's NEFF and NTFF for the profile (Neuron SDK 2.29 and older).
measure (legacy): the profile summary of that first run (counters), then the latency:
  `neuron-profile capture --profile-nth-exec=2` (one warm-up execution, then the traced one)
  repeated, each summarised by `neuron-profile view --output-format summary-json` for its
  `total_time`; repeated as a whole while the spread exceeds the tolerance (AccelOpt's rule).
Nothing here imports neuronxcc or nki until a phase runs, so the module loads anywhere.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

from nkibench.backends.neuron import current
from nkibench.backends.neuron.detect import CURRENT
from nkibench.backends.neuron.profiler import ProfilerFailed, summary, traced_ms
from nkibench.backends.neuron.summary import SummaryError, best_latency
from nkibench.sandbox.kernel import load_phase_kernel, run_error, save_outputs, seed_arguments

__all__ = ["kernel_phase", "legacy_kernel_phase", "measure_phase"]


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("route") == CURRENT:
        return current.kernel_phase(request)
    return legacy_kernel_phase(request)


def legacy_kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    try:
        # the real package (or a test double), never nkisim; imported only here
        nki = importlib.import_module("neuronxcc.nki")
    except Exception as e:
        return {
            "ok": False,
            "kind": "compile",
            "message": f"neuronxcc does not import in the sandbox: {type(e).__name__}: {e}",
            "line": 0,
        }
    # NKI's tracer reads the kernel's source file: give it the source being checked.
    source_file = Path.cwd() / "kernel.py"
    source_file.write_text(request["kernel_source"], encoding="utf-8")
    request = {**request, "kernel_file": str(source_file)}
    kernel, failure = load_phase_kernel(request)
    if failure is not None:
        return failure
    seeds: dict[str, Any] = {}
    for number, seed in enumerate(request["seeds"]):
        args = seed_arguments(request, seed)
        options: dict[str, Any] = {"additional_compile_opt": request["compile_options"]}
        if number == 0:
            options |= {
                "save_neff_name": request["neff_path"],
                "save_trace_name": request["ntff_path"],
            }
        started = time.perf_counter()
        try:
            produced = nki.baremetal(kernel, **options)(*args)
        except MemoryError:
            raise
        except Exception as e:
            # The first call compiles: AccelOpt files its failures as compilation errors.
            return run_error(e, request, seed, kind="compile" if number == 0 else "runtime")
        outputs = list(produced) if isinstance(produced, tuple | list) else [produced]
        save_outputs(request, seed, outputs)
        seeds[str(seed)] = {"outputs": len(outputs), "kernel_s": time.perf_counter() - started}
    return {"ok": True, "seeds": seeds, "warnings": [], "capacity": {}}


def measure_phase(request: dict[str, Any]) -> dict[str, Any]:
    profiler, neff = request["profiler"], request["neff_path"]
    folder = Path.cwd()
    runs = int(request["iterations"])
    try:
        counters = summary(profiler, neff, request["ntff_path"])
        best, attempts = best_latency(
            lambda attempt: [
                traced_ms(profiler, neff, folder, attempt * 1000 + i) for i in range(runs)
            ],
            int(request["retries"]),
            float(request["spread_tolerance"]),
        )
    except (ProfilerFailed, SummaryError) as e:
        return {"ok": False, "kind": "measurement", "message": str(e), "line": 0}
    return {
        "ok": True,
        "counters": counters,
        "latency": best,
        "attempts": attempts,
        "timer": f"{Path(profiler).name} capture",
    }
