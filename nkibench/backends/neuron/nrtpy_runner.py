"""Times a NEFF with nrtpy: run as a script by the Python of an environment that has nrtpy
(`python nrtpy_runner.py REQUEST.json`), which is not accelopt's (the standalone nrtpy and nki
wheels cannot share one environment yet, neuron-runtime/nrtpy/index.rst). So it imports the
standard library, NumPy and nrtpy only.

The request names the NEFF, its inputs (name → .npy file, named after the kernel's parameters,
as NKI names the NEFF's inputs), the warm-up and timed iterations and where to write the
result: nrtpy's device-side durations (NrtpyModel.benchmark(mode="device"): NeuronCore time
only, from device-side tracing). The NeuronCore is the one NEURON_RT_VISIBLE_CORES leaves
visible (nrtpy's core 0).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

EXIT_REQUEST = 2
EXIT_RUNTIME = 3


def _matched(neff_names: list[str], given: dict[str, str]) -> dict[str, str]:
    """NEFF input name → .npy file: by name, or by position when the counts agree and the
    names do not (the NEFF's order is the kernel's)."""
    if set(neff_names) == set(given):
        return {name: given[name] for name in neff_names}
    if len(neff_names) == len(given):
        return dict(zip(neff_names, given.values(), strict=True))
    raise ValueError(
        f"the NEFF's inputs are {neff_names}, the kernel's array arguments {list(given)}"
    )


def run(request: dict[str, Any]) -> dict[str, Any]:
    nrtpy = importlib.import_module("nrtpy")
    model = nrtpy.NrtpyModel.load_from_neff(request["neff"])
    files = _matched(list(model.input_tensors_info), request["inputs"])
    inputs = {
        name: nrtpy.NrtpyTensor.from_numpy(np.load(path, allow_pickle=False), name=name)
        for name, path in files.items()
    }
    stats = model.benchmark(
        inputs=inputs,
        warmup_iter=int(request["warmup"]),
        benchmark_iter=int(request["iterations"]),
        mode="device",
    )
    return {
        "durations_ms": [float(d) for d in stats.durations_ms],
        "mean_ms": float(stats.mean_ms),
        "iterations": int(stats.iterations),
    }


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    try:
        result = run(request)
    except ValueError as e:
        print(f"nrtpy_runner: {e}", file=sys.stderr)
        sys.exit(EXIT_REQUEST)
    except Exception as e:  # an NrtError from the runtime, or nrtpy missing
        print(f"nrtpy_runner: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(EXIT_RUNTIME)
    Path(request["result"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
