"""Where a view sits in its allocation's storage: element offset, strides, and the flat
position of every element. Current NKI describes views this way (`t.offset`, `t.strides`,
`.ap(pattern)`), and nkisim needs it to keep per-element state beside the data (which PSUM
elements a matmul has written)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.nkisim.errors import KernelError
from nkibench.nkisim.tensor import Access, NkiTensor

__all__ = ["flat_positions", "storage_offset", "storage_strides"]

IntArray = np.ndarray[Any, np.dtype[np.int64]]


def _address(array: np.ndarray[Any, Any]) -> int:
    return int(array.__array_interface__["data"][0])


def storage_offset(x: NkiTensor) -> int:
    """The element offset of the view's first element in its allocation."""
    base = x.alloc.data
    delta = _address(x.data) - _address(base)
    if x.data.size and not 0 <= delta < base.nbytes:
        raise KernelError(f"nkisim: a view of `{x.alloc.name}` does not lie in its storage")
    return delta // base.itemsize


def storage_strides(x: NkiTensor) -> tuple[int, ...]:
    """Per dimension of the view, its step in elements of the allocation's storage."""
    itemsize = x.alloc.data.itemsize
    return tuple(int(s) // itemsize for s in x.data.strides)


def flat_positions(x: NkiTensor | Access) -> IntArray:
    """The flat storage position of every element of `x`, in `x`'s shape (bounds-checked for an
    access that may reach outside its tensor)."""
    if isinstance(x, Access):
        picked = x.positions(None, f"access to `{x.alloc.name}`")
        base = flat_positions(x.base)
        gathered: IntArray = base[picked].reshape(x.shape)
        return gathered
    positions: IntArray = np.full((1,) * x.ndim, storage_offset(x), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(x.shape, storage_strides(x), strict=True)):
        shape = tuple(size if a == axis else 1 for a in range(x.ndim))
        positions = positions + stride * np.arange(size, dtype=np.int64).reshape(shape)
    return positions
