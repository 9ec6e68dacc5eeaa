"""nkisim's dtype rules on top of NKI's dtype table (nkibench.dtypes): the bit patterns of
never-written memory, cached names, and NKI's promotion of two tile dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.dtypes import bfloat16, is_float

__all__ = ["dtype_name", "never_written", "promote", "sentinel_bits"]

# Bit patterns of never-written memory: a quiet NaN whose payload spells "uninitialised".
# Copies keep the bits; arithmetic on x86 propagates the payload of a NaN operand, so masked-out
# lanes computed from garbage stay recognisable as garbage.
_SENTINELS: dict[str, tuple[np.dtype[Any], int]] = {
    np.dtype(np.float32).str: (np.dtype(np.uint32), 0x7FC0DEAD),
    np.dtype(np.float16).str: (np.dtype(np.uint16), 0x7E5D),
    bfloat16.str: (np.dtype(np.uint16), 0x7FDE),
}


_NAMES: dict[np.dtype[Any], str] = {}


def dtype_name(dtype: np.dtype[Any]) -> str:
    """str(dtype), cached: NumPy builds the name anew on every call, in Python."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = str(dtype)
    return name


def sentinel_bits(dtype: np.dtype[Any]) -> tuple[np.dtype[Any], int] | None:
    """(unsigned view dtype, bit pattern) of the uninitialised sentinel, for float dtypes."""
    return _SENTINELS.get(dtype.str)


def never_written(data: np.ndarray[Any, Any]) -> int:
    """Elements of an output still holding the sentinel nkisim fills new memory with."""
    sentinel = sentinel_bits(data.dtype)
    if sentinel is None:
        return 0
    view_dtype, bits = sentinel
    return int(np.count_nonzero(data.view(view_dtype) == bits))


def _rank(dtype: np.dtype[Any]) -> tuple[int, int]:
    return (1 if is_float(dtype) else 0, dtype.itemsize)


def promote(a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    """NKI's promotion of two tile dtypes (floats win; the wider wins; fp16+bf16 is fp32)."""
    if a == b:
        return a
    if is_float(a) and is_float(b) and a.itemsize == b.itemsize:
        return np.dtype(np.float32) if a.itemsize == 2 else bfloat16
    if not is_float(a) and not is_float(b) and a.kind != b.kind:
        wider = max(a.itemsize, b.itemsize)
        return np.dtype(np.float32) if wider >= 4 else np.dtype(f"int{wider * 16}")
    return a if _rank(a) > _rank(b) else b
