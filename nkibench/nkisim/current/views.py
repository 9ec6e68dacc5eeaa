"""Current NKI's tensor views (`NkiTensor.slice/select/permute/broadcast/expand_dim/
squeeze_dim/reshape/ap` and the layout queries), on nkisim's tensors.

Views that NumPy can express share the allocation's memory (`NkiTensor`, with the
allocation dimension each axis walks, so that bounding boxes stay exact). `.ap()` is an
explicit gather (`Access`): its index arrays are checked against the tensor's bounds when an
instruction uses it, and its bounding box is that of the elements it touches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nkibench.dtypes import as_dtype
from nkibench.nkisim.current.registers import runtime_int
from nkibench.nkisim.current.storage import storage_offset, storage_strides
from nkibench.nkisim.errors import ConstraintViolation, OutOfBounds, UnsupportedApi
from nkibench.nkisim.machine import current
from nkibench.nkisim.tensor import Access, DimMap, NkiTensor

__all__ = ["TENSOR_METHODS", "ap", "reshape"]

IntArray = np.ndarray[Any, np.dtype[np.int64]]


def _name(t: NkiTensor) -> str:
    return f"`{t.alloc.name}`"


def _dim(t: NkiTensor, dim: Any, api: str, *, extra: int = 0) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise ConstraintViolation(f"{api}: dim must be an integer, got {type(dim).__name__}")
    rank = t.ndim + extra
    value = int(dim) + rank if dim < 0 else int(dim)
    if not 0 <= value < rank:
        raise ConstraintViolation(f"{api}: dim {dim} is out of range for {_name(t)} {t.shape}")
    return value


def _view(t: NkiTensor, data: np.ndarray[Any, Any], dims: DimMap) -> NkiTensor:
    return NkiTensor(
        current(),
        t.alloc,
        data,
        dims=dims,
        box=t.box,
        par_axis=0 if t.alloc.on_chip else None,
    )


def _not_partition(t: NkiTensor, dim: int, api: str) -> None:
    if t.alloc.on_chip and dim == 0:
        raise ConstraintViolation(
            f"{api}: dim 0 of on-chip tensor {_name(t)} is the partition dimension, which a "
            "view cannot change"
        )


# --- views -------------------------------------------------------------------------------------


def slice_(t: NkiTensor, dim: int, start: int, end: int, step: int = 1) -> NkiTensor | Access:
    api = "NkiTensor.slice"
    d = _dim(t, dim, api)
    size = t.shape[d]
    if not all(isinstance(v, int | np.integer) for v in (start, end, step)) or step < 1:
        raise ConstraintViolation(f"{api}: start, end and step are integers with step >= 1")
    if not 0 <= start < end:
        raise ConstraintViolation(f"{api}: need 0 <= start < end, got start={start} end={end}")
    if end > size:
        raise OutOfBounds(
            f"{api}: slice [{start}:{end}] of dimension {d} of {_name(t)} exceeds its size {size}"
        )
    key: list[Any] = [slice(None)] * t.ndim
    key[d] = slice(int(start), int(end), int(step))
    return t[tuple(key)]


def select(t: NkiTensor, dim: int, index: Any) -> NkiTensor | Access:
    api = "NkiTensor.select"
    d = _dim(t, dim, api)
    value = runtime_int(index, f"{api} index")
    if not 0 <= value < t.shape[d]:
        raise OutOfBounds(
            f"{api}: index {value} on dimension {d} of {_name(t)} is outside [0, {t.shape[d]})"
        )
    key: list[Any] = [slice(None)] * t.ndim
    key[d] = value
    return t[tuple(key)]


def permute(t: NkiTensor, dims: Any) -> NkiTensor:
    api = "NkiTensor.permute"
    order = tuple(int(d) for d in dims)
    if sorted(order) != list(range(t.ndim)):
        raise ConstraintViolation(f"{api}: {list(order)} is not a permutation of {t.ndim} dims")
    if t.alloc.on_chip and order[0] != 0:
        raise ConstraintViolation(
            f"{api}: on-chip tensor {_name(t)} keeps its partition dimension first "
            f"(dims[0] must be 0, got {list(order)}); move data across partitions with "
            "nisa.nc_transpose or nisa.dma_transpose"
        )
    return _view(t, t.data.transpose(order), tuple(t.dims[d] for d in order))


def broadcast(t: NkiTensor, dim: int, size: int) -> NkiTensor:
    api = "NkiTensor.broadcast"
    d = _dim(t, dim, api)
    _not_partition(t, d, api)
    if t.shape[d] != 1:
        raise ConstraintViolation(
            f"{api}: dimension {d} of {_name(t)} {t.shape} has size {t.shape[d]}, not 1"
        )
    shape = list(t.shape)
    shape[d] = int(size)
    dims = list(t.dims)
    dims[d] = None
    return _view(t, np.broadcast_to(t.data, tuple(shape)), tuple(dims))


def expand_dim(t: NkiTensor, dim: int) -> NkiTensor:
    api = "NkiTensor.expand_dim"
    d = _dim(t, dim, api, extra=1)
    _not_partition(t, d, api)
    dims = list(t.dims)
    dims.insert(d, None)
    return _view(t, np.expand_dims(t.data, d), tuple(dims))


def squeeze_dim(t: NkiTensor, dim: int) -> NkiTensor:
    api = "NkiTensor.squeeze_dim"
    d = _dim(t, dim, api)
    _not_partition(t, d, api)
    if t.shape[d] != 1:
        raise ConstraintViolation(f"{api}: dimension {d} of {_name(t)} {t.shape} is not 1")
    if t.alloc.on_chip and t.ndim <= 2:
        raise ConstraintViolation(f"{api}: on-chip tiles keep at least 2 dimensions")
    dims = list(t.dims)
    del dims[d]
    return _view(t, np.squeeze(t.data, axis=d), tuple(dims))


def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    items = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
    return tuple(int(s) for s in items)


def reshape(t: NkiTensor, *shape: Any) -> NkiTensor:
    api = "NkiTensor.reshape"
    wanted = _shape_arg(shape)
    try:
        data = np.reshape(t.data, wanted, copy=False)
    except ValueError as e:
        if "copy" in str(e):
            raise ConstraintViolation(
                f"{api}: {_name(t)} {t.shape} cannot be viewed as {list(wanted)}: its layout is "
                "not contiguous (after a strided slice or permute); copy it first"
            ) from None
        raise ConstraintViolation(
            f"{api}: cannot reshape {_name(t)} {t.shape} to {list(wanted)}"
        ) from None
    if t.alloc.on_chip and data.shape[:1] != t.shape[:1]:
        raise ConstraintViolation(
            f"{api}: reshape of on-chip tensor {_name(t)} must keep its partition dimension "
            f"({t.shape[0]}), got {list(data.shape)}"
        )
    if t.alloc.on_chip:
        dims: DimMap = (t.dims[0], *(None for _ in data.shape[1:]))
    else:
        dims = tuple(None for _ in data.shape)
    return _view(t, data, dims)


def reshape_dim(t: NkiTensor, dim: int, shape: Any) -> NkiTensor:
    d = _dim(t, dim, "NkiTensor.reshape_dim")
    parts = [int(s) for s in shape]
    if parts.count(-1) == 1:
        known = math.prod(p for p in parts if p != -1)
        parts[parts.index(-1)] = t.shape[d] // known if known else 0
    if math.prod(parts) != t.shape[d]:
        raise ConstraintViolation(
            f"NkiTensor.reshape_dim: {list(shape)} does not split dimension {d} of size "
            f"{t.shape[d]}"
        )
    if t.alloc.on_chip and d == 0 and len(parts) > 1:
        _not_partition(t, d, "NkiTensor.reshape_dim")
    return reshape(t, (*t.shape[:d], *parts, *t.shape[d + 1 :]))


def flatten_dims(t: NkiTensor, start_dim: int, end_dim: int) -> NkiTensor:
    api = "NkiTensor.flatten_dims"
    start, end = _dim(t, start_dim, api), _dim(t, end_dim, api)
    if start > end:
        raise ConstraintViolation(f"{api}: start_dim {start_dim} is after end_dim {end_dim}")
    if start < end:
        _not_partition(t, start, api)
    merged = math.prod(t.shape[start : end + 1])
    return reshape(t, (*t.shape[:start], merged, *t.shape[end + 1 :]))


# --- access patterns ---------------------------------------------------------------------------


def _pattern(pattern: Any, api: str) -> list[tuple[int, int]]:
    if not isinstance(pattern, list | tuple) or not pattern:
        raise ConstraintViolation(f"{api}: pattern is a list of [stride, count] pairs")
    pairs = []
    for pair in pattern:
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in pair)
        ):
            raise ConstraintViolation(
                f"{api}: pattern entries are [stride, count] integer pairs, got {pair!r}"
            )
        stride, count = int(pair[0]), int(pair[1])
        if count < 1:
            raise ConstraintViolation(f"{api}: a count in the pattern must be >= 1, got {count}")
        pairs.append((stride, count))
    return pairs


def _terms(pairs: list[tuple[int, int]], first: int) -> IntArray:
    """Σ step_d · i_d over the pattern's axes from `first` on, in the pattern's full shape."""
    rank = len(pairs)
    total: IntArray = np.zeros((1,) * rank, dtype=np.int64)
    for axis in range(first, rank):
        stride, count = pairs[axis]
        shape = tuple(count if a == axis else 1 for a in range(rank))
        total = total + stride * np.arange(count, dtype=np.int64).reshape(shape)
    return total


def _unravel(flat: IntArray, shape: tuple[int, ...]) -> list[IntArray]:
    """Per dimension of `shape`, the index of each flat position; the first dimension is left
    unbounded so that a position past the end is out of bounds there, not wrapped around."""
    indices: list[IntArray] = []
    rest = flat
    for size in reversed(shape[1:]):
        indices.append(np.mod(rest, size))
        rest = np.floor_divide(rest, size)
    indices.append(rest)
    return indices[::-1]


def _root(t: NkiTensor) -> NkiTensor:
    alloc = t.alloc
    dims = tuple((d, 0, 1) for d in range(alloc.data.ndim))
    return NkiTensor(
        current(), alloc, alloc.data, dims=dims, box=alloc.full_box, par_axis=alloc.par_axis
    )


def ap(  # noqa: PLR0917 - NKI's signature
    t: NkiTensor,
    pattern: Any,
    offset: int | None = None,
    scalar_offset: Any = None,
    vector_offset: Any = None,
    indirect_dim: int = 0,
    dtype: Any = None,
) -> Access:
    """Read the allocation's storage as `[[stride, count], ...]` from the view's offset."""
    api = f"{_name(t)}.ap"
    pairs = _pattern(pattern, api)
    if dtype is not None and as_dtype(dtype, f"{api} dtype") != t.dtype:
        raise UnsupportedApi(f"{api}: reinterpreting the dtype (dtype=) is not supported")
    if scalar_offset is not None and vector_offset is not None:
        raise ConstraintViolation(f"{api}: scalar_offset and vector_offset exclude each other")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int)):
        raise ConstraintViolation(f"{api}: offset is a compile-time integer")
    base = storage_offset(t) + (offset or 0)
    strides = storage_strides(t) if t.ndim else ()
    indirect = 0
    if scalar_offset is not None or vector_offset is not None:
        axis = _dim(t, indirect_dim, f"{api} indirect_dim")
        indirect = strides[axis]
    if scalar_offset is not None:
        base += runtime_int(scalar_offset, f"{api} scalar_offset") * indirect
    shape = tuple(count for _, count in pairs)
    alloc_shape = t.alloc.data.shape
    if vector_offset is not None:
        if t.alloc.on_chip:
            raise ConstraintViolation(
                f"{api}: vector_offset indexes HBM tensors only; {_name(t)} is in "
                f"{t.alloc.buffer.value}"
            )
        rows = _vector_offsets(vector_offset, shape[0], api)
        # Each partition p starts at its own row: the pattern's first step is replaced.
        flat = base + (rows * indirect).reshape((-1,) + (1,) * (len(shape) - 1)) + _terms(pairs, 1)
    else:
        flat = base + _terms(pairs, 0)
    if t.alloc.on_chip:
        free = math.prod(alloc_shape[1:])
        if len(pairs) < 2 or pairs[0][0] != free:
            raise ConstraintViolation(
                f"{api}: on-chip access patterns start with the partition dimension, whose "
                f"step must be the tensor's free size {free} (pattern {[list(p) for p in pairs]})"
            )
        first = base + pairs[0][0] * np.arange(shape[0], dtype=np.int64).reshape(
            (-1,) + (1,) * (len(shape) - 1)
        )
        partition = np.floor_divide(first, free)
        within = np.mod(first, free) + _terms(pairs, 1)
        arrays = [partition, *_unravel(within, alloc_shape[1:])]
    else:
        arrays = _unravel(flat, alloc_shape)
    full = [np.broadcast_to(a, shape) for a in arrays]
    return Access(_root(t), list(full), shape, 0 if t.alloc.on_chip else None)


def _vector_offsets(vector_offset: Any, partitions: int, api: str) -> IntArray:
    if not isinstance(vector_offset, NkiTensor | Access):
        raise ConstraintViolation(f"{api}: vector_offset is an SBUF tensor of shape (P, 1)")
    read = current().read(vector_offset, f"{api} vector_offset")
    values = read.values
    if values.dtype.kind not in "iu" or values.size != partitions:
        raise ConstraintViolation(
            f"{api}: vector_offset must be an integer tile of shape ({partitions}, 1), got "
            f"{list(values.shape)} {values.dtype}"
        )
    return values.reshape(-1).astype(np.int64)


# --- layout queries ----------------------------------------------------------------------------


def get_pattern(t: NkiTensor) -> list[list[int]]:
    return [[s, n] for s, n in zip(storage_strides(t), t.shape, strict=True)]


def is_contiguous(t: NkiTensor) -> bool:
    expected = 1
    dims = list(zip(t.shape, storage_strides(t), strict=True))
    if t.alloc.on_chip:
        dims = dims[1:]
    for size, stride in reversed(dims):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _unsupported(name: str, advice: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise UnsupportedApi(f"NkiTensor.{name} is not supported by nkisim; {advice}")

    return refuse


def _method(function: Callable[..., Any]) -> Callable[[NkiTensor], Any]:
    def bind(t: NkiTensor) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            return function(t, *args, **kwargs)

        method.__name__ = function.__name__.rstrip("_")
        return method

    return bind


TENSOR_METHODS: dict[str, Callable[[NkiTensor], Any]] = {
    "ap": _method(ap),
    "slice": _method(slice_),
    "select": _method(select),
    "permute": _method(permute),
    "broadcast": _method(broadcast),
    "expand_dim": _method(expand_dim),
    "squeeze_dim": _method(squeeze_dim),
    "reshape": _method(reshape),
    "reshape_dim": _method(reshape_dim),
    "flatten_dims": _method(flatten_dims),
    "get_pattern": _method(get_pattern),
    "is_contiguous": _method(is_contiguous),
    "is_indirect": lambda t: lambda: False,
    "strides": storage_strides,
    "offset": storage_offset,
    "name": lambda t: t.alloc.name,
    "size": lambda t: int(t.data.size),
    "view": lambda t: _unsupported("view", "copy with a cast (nisa.tensor_copy) instead"),
    "reinterpret_cast": lambda t: _unsupported("reinterpret_cast", "copy with a cast instead"),
    "rearrange": lambda t: _unsupported("rearrange", "use reshape and permute"),
    "vector_select": lambda t: _unsupported("vector_select", "use .ap(vector_offset=...)"),
    "indirect": lambda t: _unsupported("indirect", "tensor indirection is not modelled"),
}
"""What current NKI adds to a tensor, for Machine.tensor_methods."""
