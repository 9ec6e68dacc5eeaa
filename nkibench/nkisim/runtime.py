"""Executing a loaded kernel on a fresh nkisim machine."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkibench.nkisim.dtypes import never_written
from nkibench.nkisim.errors import ConstraintViolation
from nkibench.nkisim.frontend import JitKernel
from nkibench.nkisim.machine import Capacity, Config, Machine, running
from nkibench.nkisim.tensor import NkiTensor
from nkibench.nkisim.trace import Lifetime, Trace

__all__ = ["KernelRun", "execute"]


@dataclass
class KernelRun:
    outputs: list[np.ndarray[Any, Any]]
    tensors: list[NkiTensor]
    """The output tensors themselves (their allocations and boxes, for the trace file)."""
    never_written: list[int]
    trace: Trace
    lifetimes: list[Lifetime]
    """The on-chip blocks' lifetimes (capacity, and the cost model's buffer rules)."""
    capacity: Capacity
    affine_lines: set[int]
    seconds: float
    warnings: list[str] = field(default_factory=list)


def _outputs(result: Any) -> list[NkiTensor]:
    if result is None:
        raise ConstraintViolation(
            "the kernel returned nothing: allocate outputs with nl.ndarray(..., "
            "buffer=nl.shared_hbm), write them, and return them"
        )
    items = list(result) if isinstance(result, tuple | list) else [result]
    for i, item in enumerate(items):
        if not isinstance(item, NkiTensor):
            raise ConstraintViolation(
                f"kernel output {i} is a {type(item).__name__}, not an HBM tensor"
            )
        if item.alloc.buffer.on_chip:
            raise ConstraintViolation(
                f"kernel output {i} (`{item.alloc.name}`) is in {item.alloc.buffer.value}; "
                "outputs live in HBM (nl.shared_hbm): store the result there"
            )
    return items


def _line_note(trace: Trace, index: int, prefix: str = ", ") -> str:
    """Where in the kernel an instruction came from, for a capacity message."""
    instructions = trace.instructions
    line = instructions[index].line if 0 <= index < len(instructions) else 0
    if not line:
        return ""
    return f"{prefix}kernel line {line}" + (")" if prefix.startswith(" (") else "")


def execute(kernel: Any, args: list[Any], config: Config) -> KernelRun:
    """Run one kernel call on a fresh machine; inputs are NumPy arrays or Python scalars."""
    machine = Machine(config)
    prepare = getattr(kernel, "prepare_machine", None)
    if prepare is not None:  # a dialect's front sets the machine up (current NKI's views)
        prepare(machine)
    grid = kernel.grid if isinstance(kernel, JitKernel) else ()
    function = kernel.fn if isinstance(kernel, JitKernel) else kernel
    started = time.perf_counter()
    # Floating-point warnings are not errors on the hardware either (a masked-out lane may hold
    # garbage); they are silenced once here rather than around every instruction.
    with running(machine), np.errstate(all="ignore"):
        wrapped = [
            machine.wrap_input(a, f"arg{i}") if isinstance(a, np.ndarray) else a
            for i, a in enumerate(args)
        ]
        machine.grid = grid
        result: Any = None
        for program in itertools.product(*(range(g) for g in grid)) if grid else [()]:
            machine.program_ids = tuple(program)
            machine.shared_cursor = 0
            result = function(*wrapped)
        outputs = _outputs(result)
    seconds = time.perf_counter() - started
    # The machine is discarded: its output memory becomes the result, uncopied.
    arrays = [np.asarray(o.data) for o in outputs]
    lifetimes = machine.lifetimes()
    capacity = machine.capacity(lifetimes)
    warnings = list(machine.warnings)
    limit = capacity.sbuf_limit
    notes = []
    if capacity.sbuf_peak_bytes > limit:
        at = capacity.at_instruction.get("sbuf", 0)
        notes.append(
            f"SBUF: {capacity.sbuf_peak_bytes} bytes per partition live at once (near "
            f"instruction {at}{_line_note(machine.trace, at)}), more than the {limit} of "
            f"{config.target}; the compiler will spill to HBM"
        )
    if capacity.psum_peak_banks > capacity.psum_banks:
        at = capacity.at_instruction.get("psum", 0)
        notes.append(
            f"PSUM: {capacity.psum_peak_banks} banks live at once"
            f"{_line_note(machine.trace, at, prefix=' (near ')}, more than the "
            f"{capacity.psum_banks} of {config.target}"
        )
    if notes and config.strict_capacity:
        raise ConstraintViolation("; ".join(notes) + " (the task asks for strict capacity)")
    warnings += notes
    return KernelRun(
        outputs=arrays,
        tensors=outputs,
        never_written=[never_written(a) for a in arrays],
        trace=machine.trace,
        lifetimes=lifetimes,
        capacity=capacity,
        affine_lines=set(machine.affine_lines),
        seconds=seconds,
        warnings=warnings,
    )
