"""The nkisim backend's trusted phase, in a sandboxed child that never ran the kernel: it reads
the kernel phase's trace as data (nkibench.nkisim.trace_file), checks that every element of
every output was written by a recorded instruction, and counts and estimates what the trace
holds (the cost model; every latency `estimated`).

Output coverage is what makes the trace answer for the outputs: a kernel that wrote its answer
into an output's storage behind the simulator's back (NumPy on the tensor's memory) leaves
elements that no instruction wrote, and its estimate would be of work it never described.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nkibench.cost import estimate
from nkibench.nkisim.machine import Config, Machine
from nkibench.nkisim.trace import ENGINES, Box, Instruction
from nkibench.nkisim.trace_file import MAX_LINE, OutputRecord, TraceError, TraceFile, read_trace
from nkibench.sandbox.readback import UnsafeFile, open_beneath

__all__ = ["TRACE_LIMIT", "estimate_phase", "uncovered"]

TRACE_LIMIT = 2 * 1024**3
"""Bytes of a trace file: about four million instructions (a few hundred bytes each), past
what a kernel nkisim can run in a task's time limit records."""


def _failure(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message}


def uncovered(output: OutputRecord, instructions: list[Instruction]) -> int:
    """Elements of the output that no instruction of the trace wrote."""
    box = output.box
    extent = tuple(high - low for low, high in box)
    if int(np.prod(extent, dtype=np.int64)) != int(np.prod(output.shape, dtype=np.int64)):
        return int(np.prod(output.shape, dtype=np.int64))  # a box that is not the output's
    written = np.zeros(extent, dtype=bool)
    for instruction in instructions:
        target = instruction.output
        if target is None or target.alloc != output.alloc or len(target.box) != len(box):
            continue
        region = _intersection(box, target.box)
        if region is not None:
            written[region] = True
    return int(written.size - np.count_nonzero(written))


def _intersection(outer: Box, inner: Box) -> tuple[slice, ...] | None:
    region = []
    for (olo, ohi), (ilo, ihi) in zip(outer, inner, strict=True):
        low, high = max(olo, ilo), min(ohi, ihi)
        if low >= high:
            return None
        region.append(slice(low - olo, high - olo))
    return tuple(region)


def _capacity(trace: TraceFile) -> dict[str, int]:
    capacity = Machine(Config(target=trace.target)).capacity(trace.lifetimes)
    return {
        "sbuf_peak_bytes": capacity.sbuf_peak_bytes,
        "sbuf_limit_bytes": capacity.sbuf_limit,
        "psum_peak_banks": capacity.psum_peak_banks,
        "psum_banks": capacity.psum_banks,
    }


def estimate_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Check the kernel phase's trace against its outputs and, when profiling, estimate it."""
    from nkibench.backends.nkisim.phases import TRACE_FILE  # noqa: PLC0415 (a leaf, no cycle)

    try:
        with open_beneath(Path(request["out_dir"]), TRACE_FILE, TRACE_LIMIT) as (handle, _):
            trace = read_trace(iter(lambda: handle.readline(MAX_LINE + 1), b""))
    except UnsafeFile as e:
        return _failure("runtime", f"the kernel's trace: {e}")
    except TraceError as e:
        return _failure("cheat", f"the kernel's trace is not one nkisim writes: {e}")
    if trace.target != request["target"]:
        wanted = request["target"]
        return _failure("cheat", f"the kernel's trace is of {trace.target}, not {wanted}")
    if len(trace.outputs) != request["outputs"]:
        return _failure(
            "cheat",
            f"the kernel's trace names {len(trace.outputs)} output(s); it returned "
            f"{request['outputs']}",
        )
    for i, output in enumerate(trace.outputs):
        missing = uncovered(output, trace.instructions)
        if missing:
            return _failure(
                "cheat",
                f"output {i}: {missing} element(s) were written by no instruction nkisim "
                "recorded: an output is written with nl.store / nisa.dma_copy, never through "
                "its storage (or returned as an input)",
            )
    counts = dict.fromkeys(ENGINES, 0)
    for instruction in trace.instructions:
        counts[instruction.engine] = counts.get(instruction.engine, 0) + 1
    result: dict[str, Any] = {
        "ok": True,
        "instructions": len(trace.instructions),
        "engine_counts": counts,
        "capacity": _capacity(trace),
    }
    if request.get("estimate"):
        try:
            found = estimate(trace.instructions, trace.target, trace.lifetimes)
        except MemoryError:
            raise
        except Exception as e:  # the trace is the kernel's data: what breaks the model is its own
            return _failure(
                "cheat", f"the kernel's trace cannot be estimated: {type(e).__name__}: {e}"[:500]
            )
        result["estimate"] = found.to_json()
    return result
