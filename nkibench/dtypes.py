"""NKI's dtypes as NumPy dtypes (bfloat16 and fp8 from ml_dtypes): the table every layer shares
(the sandbox checks inputs against it, correctness compares floats by it, nkisim computes
with it)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from nkibench.errors import ConstraintViolation

__all__ = [
    "DTYPES",
    "INTEGER_DTYPE_NAMES",
    "as_dtype",
    "bfloat16",
    "float8_e4m3",
    "float8_e5m2",
    "is_float",
]

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

INTEGER_DTYPE_NAMES = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
)
"""Integer data (lengths, offsets, indices, masks), by the name NumPy and torch both give the
dtype; every other dtype holds floating-point data (float8 to float64, complex, quantized).
The triton backend's parent reads these names in a manifest, its child as torch dtypes."""

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


def is_float(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f" or dtype in (bfloat16, float8_e4m3, float8_e5m2)
