"""The neuron backend's phases inside the sandboxed child (named in NeuronBackend.phases).

kernel: compile and run the kernel on the device for every seed through the
  documented legacy entry point `neuronxcc.nki.baremetal` (it returns the outputs as NumPy
  arrays), keeping the first seed's NEFF and NTFF for the profile.
measure: the profile summary of that first run (counters), then the latency:
  `neuron-profile capture --profile-nth-exec=2` (one warm-up execution, then the traced one)
  repeated, each summarised by `neuron-profile view --output-format summary-json` for its
  `total_time`; repeated as a whole while the spread exceeds the tolerance (AccelOpt's rule).
Nothing here imports neuronxcc until a phase runs, so the module loads anywhere.
"""

from __future__ import annotations

import importlib
import subprocess
import time
from pathlib import Path
from typing import Any

from nkibench.backends.neuron.summary import SummaryError, latency_stats, parse_summary
from nkibench.sandbox.kernel import load_phase_kernel, run_error, save_outputs, seed_arguments

__all__ = ["kernel_phase", "measure_phase"]

PROFILER_TIMEOUT_S = 600


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
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


class _ProfilerFailed(Exception):
    pass


def _profiler(profiler: str, *arguments: str) -> str:
    try:
        completed = subprocess.run(
            [profiler, *arguments],
            capture_output=True,
            text=True,
            timeout=PROFILER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise _ProfilerFailed(f"neuron-profile {arguments[0]} did not run: {e}") from None
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip()[-500:]
        raise _ProfilerFailed(
            f"neuron-profile {arguments[0]} exited with status {completed.returncode}: {detail}"
        )
    return completed.stdout


def _summary(profiler: str, neff: str, ntff: str) -> dict[str, float]:
    text = _profiler(profiler, "view", "--output-format", "summary-json", "-n", neff, "-s", ntff)
    return parse_summary(text)


def _traced_run(profiler: str, neff: str, folder: Path, index: int) -> float:
    """One traced execution (after a warm-up one); its total_time in ms."""
    session = folder / f"run_{index}.ntff"
    _profiler(
        profiler,
        "capture",
        "-n",
        neff,
        "-s",
        str(session),
        "--profile-nth-exec=2",
        "--ignore-exec-errors",
    )
    # With --profile-nth-exec=N the profiler inserts "_exec_N" before the suffix.
    traced = session.with_name(f"{session.stem}_exec_2{session.suffix}")
    found = traced if traced.exists() else session
    if not found.exists():
        raise _ProfilerFailed(
            f"neuron-profile capture wrote neither {traced.name} nor {session.name}"
        )
    return _summary(profiler, neff, str(found))["total_time"] * 1e3


def measure_phase(request: dict[str, Any]) -> dict[str, Any]:
    profiler, neff = request["profiler"], request["neff_path"]
    folder = Path.cwd()
    try:
        counters = _summary(profiler, neff, request["ntff_path"])
        best: dict[str, float] | None = None
        attempts = 0
        for attempt in range(1 + int(request["retries"])):
            attempts = attempt + 1
            times = [
                _traced_run(profiler, neff, folder, attempt * 1000 + i)
                for i in range(int(request["iterations"]))
            ]
            stats = latency_stats(times)
            if best is None or stats["rel_spread"] < best["rel_spread"]:
                best = stats
            if stats["rel_spread"] <= float(request["spread_tolerance"]):
                break
    except (_ProfilerFailed, SummaryError) as e:
        return {"ok": False, "kind": "measurement", "message": str(e), "line": 0}
    assert best is not None
    return {"ok": True, "counters": counters, "latency": best, "attempts": attempts}
