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

__all__ = ["expected_folder", "listed", "load_array", "restore", "save_array", "value_spec"]

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


def value_spec(value: Any, folder: Path, stem: str) -> dict[str, Any]:
    """One value of a phase's manifest: an array saved as `<stem>.npy` in `folder`, or a
    number kept inline. Backends that hold values of their own kind (torch tensors) convert
    them to NumPy first."""
    if isinstance(value, np.ndarray):
        save_array(folder / f"{stem}.npy", value)
        return {
            "kind": "array",
            "file": f"{stem}.npy",
            "shape": list(value.shape),
            "dtype": str(value.dtype),
        }
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int | float):
        return {"kind": "scalar", "value": value}
    raise TypeError(f"{type(value).__name__} is neither an array nor a number")


def restore(spec: dict[str, Any], folder: Path) -> Any:
    """A manifest value back: the array from its file, or the number."""
    if spec["kind"] == "array":
        return load_array(folder / spec["file"])
    return spec["value"]


def listed(value: Any) -> list[Any]:
    """A function's result as a list of values (one value, or a tuple or list of them)."""
    return list(value) if isinstance(value, tuple | list) else [value]


def expected_folder(data_dir: Path, seed: int) -> Path:
    """Where a seed's expected outputs are kept: beside the inputs' folder, not in it, so that
    a child running kernel code, which is given the inputs, never sees them."""
    return data_dir.parent / f"{data_dir.name}.expected" / f"seed_{seed}"
