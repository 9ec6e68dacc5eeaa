"""Loading a kernel module with restricted builtins, and executing it on a fresh machine."""

from __future__ import annotations

import builtins
import itertools
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkibench.nkisim.dtypes import sentinel_bits
from nkibench.nkisim.errors import ConstraintViolation, KernelError
from nkibench.nkisim.frontend import JitKernel
from nkibench.nkisim.machine import Capacity, Config, Machine, running
from nkibench.nkisim.tensor import NkiTensor
from nkibench.nkisim.trace import Trace
from nkibench.static_check import FORBIDDEN_NAMES, module_allowed

__all__ = ["ImportBlocked", "KernelRun", "execute", "kernel_line", "load_kernel"]


class ImportBlocked(KernelError):
    kind = "rejected"


def _guarded_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    if level or not module_allowed(name):
        raise ImportBlocked(f"import of {name!r} is not allowed in a kernel")
    return builtins.__import__(name, globals, locals, fromlist, level)


def _safe_builtins() -> dict[str, Any]:
    allowed = {
        name: getattr(builtins, name)
        for name in dir(builtins)
        if not name.startswith("_") and name not in FORBIDDEN_NAMES
    }
    allowed["__import__"] = _guarded_import
    allowed["__build_class__"] = builtins.__build_class__
    return allowed


def load_kernel(source: str, filename: str, function: str) -> Any:
    """Execute the kernel module with restricted builtins and return its kernel function."""
    code = compile(source, filename, "exec")
    namespace: dict[str, Any] = {"__name__": "nki_kernel", "__builtins__": _safe_builtins()}
    exec(code, namespace)
    if function not in namespace:
        raise NameError(f"the kernel module defines no `{function}`")
    return namespace[function]


def kernel_line(error: BaseException, filename: str) -> int:
    """The innermost line of the kernel file in an exception's traceback (0 if none)."""
    line = 0
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == filename:
            line = frame.lineno or 0
    return line


@dataclass
class KernelRun:
    outputs: list[np.ndarray[Any, Any]]
    never_written: list[int]
    trace: Trace
    capacity: Capacity
    affine_lines: set[int]
    seconds: float
    warnings: list[str] = field(default_factory=list)


def _never_written(data: np.ndarray[Any, Any]) -> int:
    sentinel = sentinel_bits(data.dtype)
    if sentinel is None:
        return 0
    view_dtype, bits = sentinel
    return int(np.count_nonzero(data.view(view_dtype) == bits))


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


def execute(kernel: Any, args: list[Any], config: Config) -> KernelRun:
    """Run one kernel call on a fresh machine; inputs are NumPy arrays or Python scalars."""
    machine = Machine(config)
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
    capacity = machine.capacity()
    warnings = list(machine.warnings)
    limit = capacity.sbuf_limit
    notes = []
    if capacity.sbuf_peak_bytes > limit:
        notes.append(
            f"SBUF: {capacity.sbuf_peak_bytes} bytes per partition live at once (near "
            f"instruction {capacity.at_instruction.get('sbuf', 0)}), more than the {limit} of "
            f"{config.target}; the compiler will spill to HBM"
        )
    if capacity.psum_peak_banks > capacity.psum_banks:
        notes.append(
            f"PSUM: {capacity.psum_peak_banks} banks live at once, more than the "
            f"{capacity.psum_banks} of {config.target}"
        )
    if notes and config.strict_capacity:
        raise ConstraintViolation("; ".join(notes) + " (the task asks for strict capacity)")
    warnings += notes
    return KernelRun(
        outputs=arrays,
        never_written=[_never_written(a) for a in arrays],
        trace=machine.trace,
        capacity=capacity,
        affine_lines=set(machine.affine_lines),
        seconds=seconds,
        warnings=warnings,
    )
