"""TEST DOUBLE of the `neuron-profile` and `neuron-ls` command lines (standard library only;
see README.md). The test fixture wraps `main` as executables named after the tools."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path


def _option(argv: list[str], name: str) -> str:
    index = argv.index(name)
    return argv[index + 1]


def _nth(argv: list[str]) -> int:
    for item in argv:
        if item.startswith("--profile-nth-exec="):
            return int(item.split("=", 1)[1])
    return 1


def neuron_ls(argv: list[str]) -> int:
    if "--json-output" not in argv and "-j" not in argv:
        print("[TEST DOUBLE] only --json-output is implemented", file=sys.stderr)
        return 2
    cores = int(os.environ.get("NEURON_DOUBLE_CORES", "2"))
    devices = [
        {
            "neuron_device": device,
            "nc_count": min(2, cores - 2 * device),
            "neuroncore_ids": list(range(2 * device, min(2 * device + 2, cores))),
            "memory_size": 34359738368,
            "neuron_processes": [],
        }
        for device in range((cores + 1) // 2)
    ]
    print(json.dumps(devices))
    return 0


def _capture(argv: list[str]) -> int:
    neff = Path(_option(argv, "-n"))
    session = Path(_option(argv, "-s"))
    document = json.loads(neff.read_text())
    # in the working folder, as the profiler's own files: the NEFF's folder is read-only
    counter = Path.cwd() / f"{neff.stem}.captures"
    count = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(count + 1))
    # deterministic jitter: 0.1% normally, 5% when asked to be noisy
    amplitude = 0.05 if os.environ.get("NEURON_DOUBLE_PROFILE") == "noisy" else 0.001
    jitter = amplitude * (1 if count % 2 else -1)
    nth = _nth(argv)
    if nth > 1:
        session = session.with_name(f"{session.stem}_exec_{nth}{session.suffix}")
    session.write_text(
        json.dumps({"test_double": True, "total_time": document["total_time"] * (1 + jitter)})
    )
    return 0


def _view(argv: list[str]) -> int:
    if _option(argv, "--output-format") != "summary-json":
        print("[TEST DOUBLE] only --output-format summary-json is implemented", file=sys.stderr)
        return 2
    neff = json.loads(Path(_option(argv, "-n")).read_text())
    trace = json.loads(Path(_option(argv, "-s")).read_text())
    seconds = trace["total_time"]
    metrics = {
        "total_time": seconds,
        "hbm_read_bytes": 1 << 20,
        "hbm_write_bytes": 1 << 19,
        "hardware_flops": 0,
        "tensor_engine_active_time_percent": 0.1,
        "vector_engine_active_time_percent": 0.8,
        "scalar_engine_active_time_percent": 0.2,
        "gpsimd_engine_active_time_percent": 0.0,
        "dma_active_time_percent": 0.6,
        "test_double_visible_core": int(neff["visible_core"] or -1),
        "test_double_auto_cast_none": int("--auto-cast=none" in neff["cc_flags"]),
        "neff_name": "kernel",  # a string field: not a counter
    }
    key = "n_" + hashlib.sha256(json.dumps(neff).encode()).hexdigest()[:12]
    print("INFO: [TEST DOUBLE] neuron-profile summary follows")
    print(json.dumps({key: metrics}))
    return 0


def neuron_profile(argv: list[str]) -> int:
    if os.environ.get("NEURON_DOUBLE_PROFILE") == "fail":
        print("ERROR: [TEST DOUBLE] neuron-profile failed (requested)", file=sys.stderr)
        return 1
    command = argv[0] if argv else ""
    if command == "capture":
        return _capture(argv[1:])
    if command == "view":
        return _view(argv[1:])
    print(f"[TEST DOUBLE] unknown command {command!r}", file=sys.stderr)
    return 2


def main() -> None:
    tool = Path(sys.argv[0]).name
    handlers = {"neuron-profile": neuron_profile, "neuron-ls": neuron_ls}
    sys.exit(handlers[tool](sys.argv[1:]))
