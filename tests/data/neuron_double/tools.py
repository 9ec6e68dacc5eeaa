"""TEST DOUBLE of the `neuron-profile`, `neuron-explorer` and `neuron-ls` command lines
(standard library only; see README.md). The test fixture wraps `main` as executables named
after the tools."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

VALUE_OPTIONS = ("-n", "--neff", "-s", "--session-file", "--output-format", "-d")


def _option(argv: list[str], name: str) -> str:
    index = argv.index(name)
    return argv[index + 1]


def _nth(argv: list[str]) -> int:
    for item in argv:
        if item.startswith("--profile-nth-exec="):
            return int(item.split("=", 1)[1])
    return 1


def _positional(argv: list[str]) -> list[str]:
    """What is left once the options (and the values of those that take one) are taken out."""
    left: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
        elif item in VALUE_OPTIONS:
            skip = True
        elif not item.startswith("-"):
            left.append(item)
    return left


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


def _inputs(argv: list[str], neff: dict[str, Any]) -> int | str:
    """The number of NAME FILE pairs given, or what is wrong with them."""
    pairs = _positional(argv)
    if len(pairs) % 2:
        return f"inputs come as NAME FILE pairs, got {pairs}"
    known = {i["name"] for i in neff.get("inputs", [])}
    for name, file in zip(pairs[::2], pairs[1::2], strict=True):
        if name not in known:
            return f"the NEFF has no input {name!r} (it has {sorted(known)})"
        if not Path(file).is_file():
            return f"input file {file} does not exist"
    return len(pairs) // 2


def _capture(argv: list[str]) -> int:
    neff_path = Path(_option(argv, "-n"))
    session = Path(_option(argv, "-s"))
    document = json.loads(neff_path.read_text())
    given = _inputs(argv, document)
    if isinstance(given, str):
        print(f"ERROR: [TEST DOUBLE] {given}", file=sys.stderr)
        return 2
    # in the working folder, as the profiler's own files: the NEFF's folder is read-only
    counter = Path.cwd() / f"{neff_path.stem}.captures"
    count = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(count + 1))
    # deterministic jitter: 0.1% normally, 5% when asked to be noisy
    amplitude = 0.05 if os.environ.get("NEURON_DOUBLE_PROFILE") == "noisy" else 0.001
    jitter = amplitude * (1 if count % 2 else -1)
    nth = _nth(argv)
    if nth > 1:
        session = session.with_name(f"{session.stem}_exec_{nth}{session.suffix}")
    trace = {"test_double": True, "total_time": document["total_time"] * (1 + jitter)}
    session.write_text(json.dumps({**trace, "inputs_given": given}))
    return 0


def _view_legacy(neff: dict[str, Any], trace: dict[str, Any]) -> None:
    """neuron-profile's summary: keyed by a per-NEFF id, `*_percent` as fractions."""
    metrics = {
        "total_time": trace["total_time"],
        "hbm_read_bytes": 1 << 20,
        "hbm_write_bytes": 1 << 19,
        "hardware_flops": 0,
        "tensor_engine_active_time_percent": 0.1,
        "vector_engine_active_time_percent": 0.8,
        "scalar_engine_active_time_percent": 0.2,
        "gpsimd_engine_active_time_percent": 0.0,
        "dma_active_time_percent": 0.6,
        "test_double_visible_core": int(str(neff["visible_core"]) or -1),
        "test_double_auto_cast_none": int("--auto-cast=none" in str(neff["cc_flags"])),
        "neff_name": "kernel",  # a string field: not a counter
    }
    key = "n_" + hashlib.sha256(json.dumps(neff).encode()).hexdigest()[:12]
    print("INFO: [TEST DOUBLE] neuron-profile summary follows")
    print(json.dumps({key: metrics}))


def _view_explorer(neff: dict[str, Any], trace: dict[str, Any]) -> None:
    """neuron-explorer's summary: the Summary table's fields in one flat object, `*_percent`
    in percent as its schema gives their unit."""
    metrics = {
        "total_time": trace["total_time"],
        "total_active_time_percent": 95.0,
        "hbm_read_bytes": 1 << 20,
        "hbm_write_bytes": 1 << 19,
        "hardware_flops": 0,
        "mfu_estimated_percent": 0.5,
        "tensor_engine_active_time_percent": 10.0,
        "vector_engine_active_time_percent": 80.0,
        "scalar_engine_active_time_percent": 20.0,
        "gpsimd_engine_active_time_percent": 0.0,
        "dma_active_time_percent": 60.0,
        "profile_schema_version": "7.4.0",  # a string field: not a counter
        "test_double_visible_core": int(str(neff["visible_core"]) or -1),
        "test_double_lnc_config": int(str(neff.get("lnc_config")) or -1),
        "test_double_inputs_given": trace.get("inputs_given", 0),
    }
    print("INFO: [TEST DOUBLE] neuron-explorer summary follows")
    print(json.dumps(metrics))


def _view(argv: list[str], tool: str) -> int:
    if _option(argv, "--output-format") != "summary-json":
        print("[TEST DOUBLE] only --output-format summary-json is implemented", file=sys.stderr)
        return 2
    neff = json.loads(Path(_option(argv, "-n")).read_text())
    trace = json.loads(Path(_option(argv, "-s")).read_text())
    if tool == "neuron-explorer":
        _view_explorer(neff, trace)
    else:
        _view_legacy(neff, trace)
    return 0


def profiler(argv: list[str], tool: str) -> int:
    if os.environ.get("NEURON_DOUBLE_PROFILE") == "fail":
        print(f"ERROR: [TEST DOUBLE] {tool} failed (requested)", file=sys.stderr)
        return 1
    command = argv[0] if argv else ""
    if command == "capture":
        return _capture(argv[1:])
    if command == "view":
        return _view(argv[1:], tool)
    print(f"[TEST DOUBLE] unknown command {command!r}", file=sys.stderr)
    return 2


def main() -> None:
    tool = Path(sys.argv[0]).name
    if tool == "neuron-ls":
        sys.exit(neuron_ls(sys.argv[1:]))
    sys.exit(profiler(sys.argv[1:], tool))
