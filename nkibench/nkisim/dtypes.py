"""NKI dtypes as NumPy dtypes (bf16 and fp8 from ml_dtypes), and the promotion rules."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from nkibench.nkisim.errors import ConstraintViolation

__all__ = [
    "DTYPES",
    "as_dtype",
    "dtype_name",
    "is_float",
    "promote",
    "sentinel_bits",
]

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

DTYPES: dict[str, np.dtype[Any]] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": bfloat16,
    "tfloat32": np.dtype(np.float32),  # stored as fp32; TensorE's tf32 rounding is not modelled
    "float32r": np.dtype(np.float32),
    "float8_e4m3": float8_e4m3,
    "float8_e5m2": float8_e5m2,
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "bool_": np.dtype(np.bool_),
}
_ALLOWED = {d.str for d in DTYPES.values()} | {bfloat16.str, float8_e4m3.str}

# Bit patterns of never-written memory: a quiet NaN whose payload spells "uninitialised".
# Copies keep the bits; arithmetic on x86 propagates the payload of a NaN operand, so masked-out
# lanes computed from garbage stay recognisable as garbage.
_SENTINELS: dict[str, tuple[np.dtype[Any], int]] = {
    np.dtype(np.float32).str: (np.dtype(np.uint32), 0x7FC0DEAD),
    np.dtype(np.float16).str: (np.dtype(np.uint16), 0x7E5D),
    bfloat16.str: (np.dtype(np.uint16), 0x7FDE),
}


def as_dtype(value: Any, what: str = "dtype") -> np.dtype[Any]:
    """An NKI dtype from nl.float32, np.float32, np.dtype(...), or their names."""
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    try:
        dtype: np.dtype[Any] = np.dtype(value)
    except TypeError:
        raise ConstraintViolation(f"{what}: {value!r} is not a dtype") from None
    if dtype.str not in _ALLOWED and dtype != bfloat16 and dtype.kind not in "b":
        raise ConstraintViolation(
            f"{what}: {dtype} is not an NKI dtype (no 64-bit types on the hardware); "
            "use float32, bfloat16, float16, or a 8/16/32-bit integer"
        )
    return dtype


_NAMES: dict[np.dtype[Any], str] = {}


def dtype_name(dtype: np.dtype[Any]) -> str:
    """str(dtype), cached: NumPy builds the name anew on every call, in Python."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = str(dtype)
    return name


def is_float(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f" or dtype in (bfloat16, float8_e4m3, float8_e5m2)


def sentinel_bits(dtype: np.dtype[Any]) -> tuple[np.dtype[Any], int] | None:
    """(unsigned view dtype, bit pattern) of the uninitialised sentinel, for float dtypes."""
    return _SENTINELS.get(dtype.str)


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
