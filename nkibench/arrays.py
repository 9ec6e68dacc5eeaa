"""Arrays between the sandboxed phases: `.npy` files, with bfloat16 and fp8 kept.

`.npy` has no code for ml_dtypes' types (they come back as opaque void), and loading with
pickle is never allowed; such arrays are stored as their unsigned-integer bits with the dtype's
name in a sidecar file, and viewed back on load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["load_array", "save_array"]

EXTENSION_DTYPES = {
    np.dtype(t).name: np.dtype(t)
    for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)
}


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".dtype")


def save_array(path: Path, array: np.ndarray[Any, Any]) -> None:
    if array.dtype.name in EXTENSION_DTYPES:
        _sidecar(path).write_text(array.dtype.name)
        array = array.view(f"u{array.dtype.itemsize}")
    np.save(path, array, allow_pickle=False)


def load_array(path: Path) -> np.ndarray[Any, Any]:
    array: np.ndarray[Any, Any] = np.load(path, allow_pickle=False)
    sidecar = _sidecar(path)
    if sidecar.exists():
        array = array.view(EXTENSION_DTYPES[sidecar.read_text()])
    return array
