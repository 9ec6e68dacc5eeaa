"""Arrays between the sandboxed phases: `.npy` files, with bfloat16 and fp8 kept.

`.npy` has no code for ml_dtypes' types (they come back as opaque void), and loading with
pickle is never allowed; such arrays are stored as their unsigned-integer bits with the dtype's
name in a sidecar file, and viewed back on load.

Every array is read as data written by another child: through nkibench.sandbox.readback (no
link followed, regular files only, size bounded), its header parsed before its body, no object
dtype, and the body exactly as long as the header says.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from nkibench.sandbox.readback import MissingFile, UnsafeFile, open_beneath, read_beneath
from nkibench.sandbox.values import listed

__all__ = [
    "ARRAY_LIMIT",
    "listed",
    "load_array",
    "restore",
    "save_array",
    "value_spec",
]

EXTENSION_DTYPES = {
    np.dtype(t).name: np.dtype(t)
    for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)
}
ARRAY_LIMIT = 1 << 40
"""Bytes of one array file when the reader knows no tighter bound: the reader's memory limit is
what really holds (callers that know the expected shape pass a tighter one)."""
SIDECAR_LIMIT = 64
HEADER_LIMIT = 1 << 16
"""What a `.npy` header may take besides the data (numpy writes 64 to a few hundred bytes)."""


def _sidecar(name: str) -> str:
    return name + ".dtype"


def save_array(path: Path, array: np.ndarray[Any, Any]) -> None:
    if array.dtype.name in EXTENSION_DTYPES:
        path.with_name(_sidecar(path.name)).write_text(array.dtype.name)
        array = array.view(f"u{array.dtype.itemsize}")
    np.save(path, array, allow_pickle=False)


def _read_npy(folder: Path, name: str, limit: int) -> np.ndarray[Any, Any]:
    with open_beneath(folder, name, limit) as (handle, size):
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                header = np.lib.format.read_array_header_1_0(handle)
            else:
                header = np.lib.format.read_array_header_2_0(handle)
        except (ValueError, OSError, SyntaxError) as e:
            raise UnsafeFile(f"{name}: not a .npy file ({e})") from None
        shape, fortran, dtype = header
        if dtype.hasobject or dtype.itemsize == 0:
            raise UnsafeFile(f"{name}: dtype {dtype} is not a numeric array's")
        expected = math.prod(shape) * dtype.itemsize
        body = size - handle.tell()
        if body != expected:
            raise UnsafeFile(f"{name}: its header says {expected} bytes of data, it holds {body}")
        # read straight into the array's own memory: one copy and no second buffer (a
        # 470 MB file in a quarter of the time that bytes plus a bytearray took)
        data = np.empty(expected, dtype=np.uint8)
        got = handle.readinto(data.data) if expected else 0
    if got != expected:
        raise UnsafeFile(f"{name}: shorter than its size when read")
    return data.view(dtype).reshape(shape, order="F" if fortran else "C")


def load_array(folder: Path, name: str, *, limit: int = ARRAY_LIMIT) -> np.ndarray[Any, Any]:
    """`folder/name` (a path relative to `folder`) as written by save_array in another child;
    UnsafeFile when it is not a well-formed array file of at most `limit` bytes."""
    array = _read_npy(folder, name, limit + HEADER_LIMIT)
    try:
        kept = read_beneath(folder, _sidecar(name), SIDECAR_LIMIT).decode("ascii", "replace")
    except MissingFile:
        return array
    dtype = EXTENSION_DTYPES.get(kept.strip())
    if dtype is None or array.dtype != np.dtype(f"u{dtype.itemsize}"):
        raise UnsafeFile(f"{_sidecar(name)}: {kept[:40]!r} does not name the dtype of {name}")
    return array.view(dtype)


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
    """A manifest value back: the array from its file (`folder` is the seed's), or the number."""
    if spec["kind"] == "array":
        return load_array(folder.parent, f"{folder.name}/{spec['file']}")
    return spec["value"]
