"""The arithmetic shared by instructions: operations named by nl functions, per-partition
scalar operands, and the destination rules of the compute engines."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.nkisim import ops as _ops
from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.machine import Machine as _Machine
from nkibench.nkisim.machine import Read as _Read
from nkibench.nkisim.tensor import Access as _Access
from nkibench.nkisim.tensor import NkiTensor as _NkiTensor

_Array = np.ndarray[Any, Any]

# --- operations named by nl functions ------------------------------------------------------------

BITVEC = frozenset(
    {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"}
)
EXTRA_BINARY = {
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
}


def op_name(op: Any, api: str) -> str:
    return _ops.op_name(op, api)


def binary(name: str, api: str) -> Any:
    function = _ops.BINARY.get(name) or EXTRA_BINARY.get(name)
    if function is None:
        raise _Violation(f"{api}: {name} is not a binary ALU operation")
    return function


def apply(name: str, left: _Array, right: Any, reverse: bool, api: str) -> _Array:
    if name == "bypass":
        return left
    if name in _ops.UNARY and name not in _ops.BINARY:
        return np.asarray(_ops.UNARY[name](left))
    function = binary(name, api)
    return np.asarray(function(right, left) if reverse else function(left, right))


def flat(read: _Read) -> _Array:
    values = read.values
    partitions, elements = _o.per_partition(tuple(values.shape))
    return values.reshape(partitions, elements)


def scalar_or_vector(
    machine: _Machine, value: Any, partitions: int, api: str, role: str, *, reads: list[_Read]
) -> Any:
    """A compile-time scalar, or a (P, 1) tile: one value per partition, broadcast along F."""
    if value is None:
        return None
    if isinstance(value, _NkiTensor | _Access):
        read = _o.read_tile(machine, value, api, role)
        if _o.per_partition(tuple(read.values.shape)) != (partitions, 1):
            raise _Violation(
                f"{api}: {role} must be a scalar or a tile of shape ({partitions}, 1), one value "
                f"per partition of the data; `{value.alloc.name}` has shape "
                f"{list(read.values.shape)}"
            )
        reads.append(read)
        return _o.as_f32(read.values.reshape(partitions, 1))
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise _Violation(f"{api}: {role} must be a scalar or a tile, got {type(value).__name__}")
    return np.float32(value)


# --- VectorE, ScalarE, GpSimd ------------------------------------------------------------------


def compute_dst(dst: Any, api: str, chosen: str, *, sbuf_only: bool = False) -> _o.Tile:
    target = _o.tensor(dst, api, "dst")
    allowed = _o.SBUF_ONLY if sbuf_only or chosen == "gpsimd" else _o.ON_CHIP
    advice = (
        "compute engines write SBUF or PSUM; move results to HBM with nisa.dma_copy"
        if not target.alloc.on_chip
        else ""
    )
    _o.check_buffer(target, api, "dst", allowed, advice)
    return target


def is_int(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "iu"


IDENTITY = {"add": 0.0, "subtract": 0.0, "maximum": -np.inf, "minimum": np.inf, "multiply": 1.0}
