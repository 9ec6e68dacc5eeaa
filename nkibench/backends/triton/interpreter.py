"""Two known gaps of Triton's CPU interpreter (TRITON_INTERPRET=1), closed for the checks
that CI runs without a GPU (child side).

- `tl.dot` on bfloat16 operands: the interpreter keeps bfloat16 as its raw uint16 bits and
  multiplies those integers. The operands are widened to float32 first, as the GPU's tensor
  cores do (products exact, sums in float32).
- Bounds: the interpreter dereferences whatever address a kernel computes; a load or store
  outside every tensor passed to the launch reads garbage (or crashes) where the GPU would
  fault. Each launch's tensor arguments are recorded, and every masked-in address of a load
  or store must lie inside one of them.

The interpreter copies a launch's tensor arguments to host tensors and back with aten ops, which
a GPU launch does not run: those copies are marked trusted, so that the torch-compute guard
(nkibench.backends.triton.torch_guard) sees only the kernel's own ops.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
import triton.language as tl
from triton.runtime import interpreter

from nkibench.backends.triton.tensors import extent
from nkibench.backends.triton.torch_guard import trusted
from nkibench.errors import KernelError

__all__ = ["OutOfBounds", "install_interpreter_fixes", "interpreting"]


class OutOfBounds(KernelError):
    kind = "runtime"


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


_ranges: list[tuple[int, int, int]] = []
"""(first byte, end byte, argument index) of the current launch's tensor arguments."""


def _record_ranges(args: list[Any], kwargs: dict[str, Any]) -> None:
    """Each tensor argument's own elements, from its first to its last: not its whole
    storage, whose rest may be another tensor's, or the guard bands around it
    (nkibench.backends.triton.canaries)."""
    _ranges.clear()
    values = [*args, *kwargs.values()]
    for index, value in enumerate(values):
        for tensor in value if isinstance(value, tuple) else (value,):
            if isinstance(tensor, torch.Tensor):
                start = tensor.data_ptr()
                _ranges.append((start, start + extent(tensor) * tensor.element_size(), index))


def _check(ptrs: Any, mask: Any, what: str) -> None:
    if not _ranges:
        return
    addresses = np.asarray(ptrs.data, dtype=np.uint64)[np.asarray(mask.data, dtype=bool)]
    if addresses.size == 0:
        return
    size = np.uint64(max(1, ptrs.get_element_ty().primitive_bitwidth // 8))
    inside = np.zeros(addresses.shape, dtype=bool)
    for start, end, _ in _ranges:
        inside |= (addresses >= np.uint64(start)) & (addresses + size <= np.uint64(end))
    if inside.all():
        return
    outside = addresses[~inside]
    first = int(outside[0])
    nearest = min(_ranges, key=lambda r: min(abs(first - r[0]), abs(first - r[1])))
    where = (
        f"{first - nearest[1]} bytes past the end of argument {nearest[2]}"
        if first >= nearest[1]
        else f"{nearest[0] - first} bytes before argument {nearest[2]}"
    )
    raise OutOfBounds(
        f"out-of-bounds {what}: {outside.size} of {addresses.size} masked-in addresses lie "
        f"outside every tensor argument (the first {where}); on a GPU this reads garbage or "
        "faults: widen the mask or fix the offsets"
    )


def install_interpreter_fixes() -> None:
    """Patch the interpreter in this process (call before any launch)."""
    builder = interpreter.InterpreterBuilder
    executor = interpreter.GridExecutor
    handle = interpreter.TensorHandle
    dot, load, store = builder.create_dot, builder.create_masked_load, builder.create_masked_store
    init_args = getattr(executor, "_init_args_hst")  # noqa: B009 (a private hook, on purpose)
    restore_args = getattr(executor, "_restore_args_dev")  # noqa: B009

    def widened(operand: Any) -> Any:
        if operand.dtype.scalar == tl.bfloat16:
            bits = np.asarray(operand.data).astype(np.uint32) << np.uint32(16)
            return handle(bits.view(np.float32), tl.float32)
        return operand

    def create_dot(self: Any, a: Any, b: Any, d: Any, *rest: Any) -> Any:
        return dot(self, widened(a), widened(b), d, *rest)

    def create_masked_load(self: Any, ptrs: Any, mask: Any, *rest: Any) -> Any:
        _check(ptrs, mask, "load")
        return load(self, ptrs, mask, *rest)

    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        _check(ptrs, mask, "store")
        return store(self, ptrs, value, mask, *rest)

    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        with trusted():
            args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        _record_ranges(list(args_hst), dict(kwargs_hst))
        return args_hst, kwargs_hst

    def restore_args_dev(self: Any, *args: Any) -> Any:
        with trusted():
            return restore_args(self, *args)

    builder.create_dot = create_dot
    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    setattr(executor, "_init_args_hst", init_args_hst)  # noqa: B010
    setattr(executor, "_restore_args_dev", restore_args_dev)  # noqa: B010
