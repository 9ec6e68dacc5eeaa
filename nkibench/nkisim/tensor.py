"""Tensors as kernels see them: allocations in HBM, SBUF or PSUM, and views into them.

An `Allocation` owns a NumPy array. An `NkiTensor` is a view of one (the whole of it, or a
tile cut out by indexing) and knows, for each of its dimensions, which dimension of the
allocation it walks, so that every access has a bounding box in allocation coordinates:
that is what dependencies and liveness are computed from. Indexing that NumPy cannot express
as a view (gathers, accesses that reach outside the tensor and must be masked) gives an
`Access`, resolved when an instruction uses it with its mask.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

import numpy as np

from nkibench.nkisim.dtypes import dtype_name, sentinel_bits
from nkibench.nkisim.errors import (
    ConstraintViolation,
    KernelError,
    OutOfBounds,
    UninitializedRead,
    UnsupportedApi,
)
from nkibench.nkisim.index import Arange, IndexExpr, broadcast_shape
from nkibench.nkisim.trace import Box, Instruction, Operand

__all__ = [
    "Access",
    "Allocation",
    "Buffer",
    "DimMap",
    "NkiTensor",
    "ParDim",
    "Slice",
    "TensorHost",
    "ds",
    "par_dim",
]

PMAX = 128


class Buffer(Enum):
    SBUF = "sbuf"
    PSUM = "psum"
    HBM = "hbm"
    SHARED_HBM = "shared_hbm"

    @property
    def on_chip(self) -> bool:
        return self in (Buffer.SBUF, Buffer.PSUM)

    def __repr__(self) -> str:
        return f"nl.{self.value}"


class ParDim(int):
    """`nl.par_dim(n)`: marks the partition dimension inside a shape tuple."""

    __slots__ = ()


def par_dim(size: int) -> ParDim:
    return ParDim(size)


class Slice:
    """`nl.ds(start, size)`: the slice start:start+size."""

    __slots__ = ("size", "start")

    def __init__(self, start: int, size: int) -> None:
        self.start, self.size = int(start), int(size)

    def as_slice(self) -> slice:
        return slice(self.start, self.start + self.size)


def ds(start: int, size: int) -> Slice:
    return Slice(start, size)


class Allocation:
    """Memory a kernel allocated (or an input): the array, where it lives, and its history."""

    __slots__ = (
        "buffer",
        "data",
        "dtype",
        "id",
        "input_name",
        "name",
        "on_chip",
        "par_axis",
        "pending",
        "readers",
        "verified",
    )

    def __init__(
        self,
        ident: int,
        data: np.ndarray[Any, Any],
        buffer: Buffer,
        name: str,
        par_axis: int | None,
        *,
        initialized: bool,
        input_name: str | None = None,
    ) -> None:
        self.id = ident
        self.data = data
        self.dtype: np.dtype[Any] = data.dtype
        self.buffer = buffer
        self.on_chip = buffer.on_chip  # read for every operand: not an Enum property lookup
        self.name = name
        self.par_axis = par_axis
        self.pending = not initialized
        """True while some of it may still hold the never-written sentinel."""
        self.verified: set[Box] = set()
        self.readers = 0
        self.input_name = input_name

    @property
    def full_box(self) -> Box:
        return tuple((0, n) for n in self.data.shape)

    def block_of(self, box: Box) -> tuple[int, ...]:
        """The block coordinates of an access (leading dims before the partition dim)."""
        if not self.par_axis:
            return ()
        lows = []
        for low, high in box[: self.par_axis]:
            if high - low != 1:
                return ()
            lows.append(low)
        return tuple(lows)

    def bytes_per_partition(self, block: tuple[int, ...]) -> int:
        shape = self.data.shape
        if self.par_axis is None:
            return int(np.prod(shape)) * int(self.dtype.itemsize)
        free = int(np.prod(shape[self.par_axis + 1 :], dtype=np.int64))
        blocks = 1 if block else int(np.prod(shape[: self.par_axis], dtype=np.int64))
        return blocks * free * int(self.dtype.itemsize)

    def check_initialized(
        self,
        values: np.ndarray[Any, Any],
        box: Box,
        valid: np.ndarray[Any, Any] | None,
        what: str,
        *,
        cache: bool = True,
    ) -> None:
        """Raise if `values` (read from `box`) hold the never-written sentinel.

        A box found clean is remembered (memory once written stays written), unless the read
        did not cover the whole box (`cache` False, or a mask).
        """
        cache = cache and valid is None
        if not self.pending or (cache and box in self.verified):
            return
        sentinel = sentinel_bits(self.dtype)
        if sentinel is not None:
            nan = np.isnan(values)
            if valid is not None:
                nan &= valid
            if nan.any():
                view_dtype, bits = sentinel
                garbage = int(np.count_nonzero(nan & (values.view(view_dtype) == bits)))
                if garbage:
                    raise UninitializedRead(
                        f"{what} reads {garbage} element(s) of `{self.name}` that no "
                        "instruction has written (uninitialised memory holds garbage on "
                        "hardware): write them first, or initialise with nl.zeros"
                    )
        if cache:
            self.verified.add(box)
            if box == self.full_box:
                self.pending = False


DimMap = tuple[tuple[int, int, int] | None, ...]
"""Per view dimension: (allocation dim, origin, step), or None for an inserted size-1 axis."""


def _same_view(a: Any, b: NkiTensor | Access) -> bool:
    """Whether `a` accesses the very elements `b` accesses, laid out the same way."""
    if isinstance(a, Access) and isinstance(b, Access):
        return (
            a.shape == b.shape
            and _same_view(a.base, b.base)
            and all(
                np.array_equal(np.broadcast_to(x, a.shape), np.broadcast_to(y, b.shape))
                for x, y in zip(a.arrays, b.arrays, strict=True)
            )
        )
    if not isinstance(a, NkiTensor) or not isinstance(b, NkiTensor) or a.alloc is not b.alloc:
        return False
    x, y = a.data, b.data
    return (
        x.shape == y.shape
        and x.strides == y.strides
        and x.__array_interface__["data"][0] == y.__array_interface__["data"][0]
    )


def _as_index(item: Any) -> Any:
    if isinstance(item, bool):
        raise UnsupportedApi("booleans cannot index a tensor")
    if isinstance(item, int | np.integer):
        return int(item)
    if isinstance(item, Slice):
        return item.as_slice()
    if isinstance(item, Arange):
        raise ConstraintViolation(
            "indexing with a 1-D nl.arange is not supported: place it on an axis, like "
            "nl.arange(128)[:, None] for the partition axis and nl.arange(512)[None, :] "
            "for the free axis"
        )
    if isinstance(item, slice | IndexExpr) or item is Ellipsis:
        return item
    if item is None:
        raise UnsupportedApi("None (np.newaxis) in a tensor index is not supported")
    raise UnsupportedApi(f"cannot index a tensor with {type(item).__name__}")


def _from_end(item: Any, size: int) -> Any:
    """Python's negative indices, counted from the end (a stop past the end stays there: it is
    out of bounds, not clipped)."""
    if isinstance(item, int):
        return item + size if item < 0 else item
    if isinstance(item, slice) and (
        (item.start is not None and item.start < 0) or (item.stop is not None and item.stop < 0)
    ):
        start = item.start + size if item.start is not None and item.start < 0 else item.start
        stop = item.stop + size if item.stop is not None and item.stop < 0 else item.stop
        return slice(start, stop, item.step)
    return item


class TensorHost(Protocol):
    """What a tensor asks of the machine it lives in (nkibench.nkisim.machine.Machine, which
    satisfies this structurally): its dunders and indexing record instructions there. Named
    here so that the machine imports tensors and tensors do not import the machine."""

    tensor_methods: dict[str, Callable[[NkiTensor], Any]]
    python_indices: bool
    oob_hint: str | None

    def assign(self, target: NkiTensor | Access, value: Any) -> None: ...

    def update(self, target: NkiTensor | Access, value: Any, op: str) -> None: ...

    def operator(self, name: str, a: NkiTensor, b: Any, *, reverse: bool) -> NkiTensor: ...

    def reshape(self, x: NkiTensor, shape: tuple[int, ...]) -> NkiTensor: ...

    def broadcast(self, x: NkiTensor, shape: tuple[int, ...]) -> NkiTensor: ...

    def copy_tile(self, x: Any, *, dtype: Any = None) -> NkiTensor: ...


class NkiTensor:
    """A tensor or tile as the kernel sees it: a view into an allocation."""

    __slots__ = (
        "__weakref__",
        "_machine",
        "alloc",
        "box",
        "data",
        "dims",
        "par_axis",
        "producer",
        "valid",
    )
    __array_priority__ = 1000

    def __init__(
        self,
        machine: TensorHost,
        alloc: Allocation,
        data: np.ndarray[Any, Any],
        *,
        dims: DimMap,
        box: Box,
        par_axis: int | None,
    ) -> None:
        self._machine = machine
        self.alloc = alloc
        self.data = data
        self.dims = dims
        self.box = box
        self.par_axis = par_axis
        self.producer: Instruction | None = None
        """For a fresh result: the instruction that computed it (it may be retargeted)."""
        self.valid: np.ndarray[Any, Any] | None = None
        """For a fresh result of a masked instruction: which elements were computed."""

    # --- what a kernel can ask ---------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self.data.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return int(self.data.ndim)

    @property
    def itemsize(self) -> int:
        return int(self.data.dtype.itemsize)

    @property
    def buffer(self) -> Buffer:
        return self.alloc.buffer

    def __repr__(self) -> str:
        return (
            f"<{self.alloc.buffer.value} tensor {self.alloc.name}{list(self.shape)} {self.dtype}>"
        )

    def __len__(self) -> int:
        return self.data.shape[0] if self.data.ndim else 0

    def __bool__(self) -> bool:
        raise ConstraintViolation(
            "the truth value of a tile is ambiguous: control flow cannot depend on tensor "
            "values; use mask= or nl.where"
        )

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        # a kernel's bug (NumPy runs on the host, not on a NeuronCore), not an API nkisim lacks
        raise KernelError(
            "NumPy functions cannot run on NKI tensors inside a kernel; use the nl.* or nisa.* "
            "equivalent"
        )

    def __array_ufunc__(self, *args: Any, **kwargs: Any) -> Any:
        return NotImplemented

    def __iter__(self) -> Any:
        raise UnsupportedApi("iterating over a tensor is not supported; index it with loops")

    def __getattr__(self, name: str) -> Any:
        # Only for names the class lacks: the tensor methods a dialect's front adds (`t.ap`).
        if not name.startswith("_"):
            getter = self._machine.tensor_methods.get(name)
            if getter is not None:
                return getter(self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- views ---------------------------------------------------------------------------------

    def _child(
        self, data: np.ndarray[Any, Any], dims: DimMap, box: Box, par_axis: int | None
    ) -> NkiTensor:
        return NkiTensor(self._machine, self.alloc, data, dims=dims, box=box, par_axis=par_axis)

    def _box_with(self, fixed: dict[int, tuple[int, int]]) -> Box:
        box = list(self.box)
        for dim, span in fixed.items():
            box[dim] = span
        return tuple(box)

    def __getitem__(self, key: Any) -> NkiTensor | Access:
        items = [_as_index(i) for i in (key if isinstance(key, tuple) else (key,))]
        # Identity, not ==: an index expression's == builds a mask.
        ellipses = [n for n, i in enumerate(items) if i is Ellipsis]
        if len(ellipses) > 1:
            raise UnsupportedApi("only one ... per index")
        if ellipses:
            at = ellipses[0]
            fill = self.ndim - (len(items) - 1)
            items[at : at + 1] = [slice(None)] * max(0, fill)
        if len(items) > self.ndim:
            raise ConstraintViolation(
                f"{len(items)} indices for `{self.alloc.name}` of {self.ndim} dimensions"
            )
        advanced = any(isinstance(i, IndexExpr) for i in items)
        if advanced and any(isinstance(i, slice) for i in items):
            raise ConstraintViolation(
                "mixing basic indexing (slices) and advanced indexing (nl.arange) in one "
                "index is not supported: use one style for the whole index"
            )
        if advanced:
            if len(items) < self.ndim:
                raise ConstraintViolation(
                    f"index every dimension of `{self.alloc.name}` when using nl.arange "
                    f"({len(items)} of {self.ndim} given)"
                )
            return self._advanced(items)
        items += [slice(None)] * (self.ndim - len(items))
        return self._basic(items)

    def _basic(self, items: list[Any]) -> NkiTensor | Access:
        if self._machine.python_indices:
            items = [_from_end(item, size) for item, size in zip(items, self.shape, strict=True)]
        key: list[Any] = []
        dims: list[tuple[int, int, int] | None] = []
        fixed: dict[int, tuple[int, int]] = {}
        par_axis = None
        for d, (given, size) in enumerate(zip(items, self.shape, strict=True)):
            mapping = self.dims[d]
            item = given
            if isinstance(given, int) and d == self.par_axis:
                item = slice(given, given + 1)  # the partition dim survives integer indexing
            if isinstance(item, int):
                if not 0 <= item < size:
                    return Access.basic(self, items)
                key.append(item)
                if mapping is not None:
                    position = mapping[1] + mapping[2] * item
                    fixed[mapping[0]] = (position, position + 1)
                continue
            start, stop, step = (
                item.start or 0,
                size if item.stop is None else item.stop,
                item.step or 1,
            )
            if step <= 0 or start < 0:
                raise UnsupportedApi("slices need a start ≥ 0 and a positive step")
            if stop > size:
                return Access.basic(self, items)
            count = max(0, -(-(stop - start) // step))
            key.append(slice(start, stop, step))
            if d == self.par_axis:
                par_axis = len(dims)
            if mapping is None:
                dims.append(None)
                continue
            alloc_dim, origin, stride = mapping
            dims.append((alloc_dim, origin + stride * start, stride * step))
            if count:
                first = origin + stride * start
                last = origin + stride * (start + step * (count - 1))
                fixed[alloc_dim] = (min(first, last), max(first, last) + 1)
        data = self.data[tuple(key)]
        if self.alloc.on_chip and data.ndim == 1 and par_axis == 0:
            data, dims = data.reshape((*data.shape, 1)), [*dims, None]
        return self._child(data, tuple(dims), self._box_with(fixed), par_axis)

    def _advanced(self, items: list[Any]) -> NkiTensor | Access:
        exprs = [i for i in items if isinstance(i, IndexExpr)]
        shape = broadcast_shape([e.shape() for e in exprs])
        rank = len(shape)
        plan = self._separable(items, shape)
        if plan is None:
            return Access.advanced(self, items, shape)
        key, axis_of_dim = plan
        view = self.data[tuple(key)]
        dims: list[tuple[int, int, int] | None] = [None] * rank
        fixed: dict[int, tuple[int, int]] = {}
        for d, item in enumerate(items):
            mapping = self.dims[d]
            if mapping is None:
                continue
            alloc_dim, origin, stride = mapping
            if isinstance(item, int):
                position = origin + stride * item
                fixed[alloc_dim] = (position, position + 1)
                continue
            sl = key[d]
            count = len(range(sl.start, sl.stop, sl.step))
            first = origin + stride * sl.start
            last = origin + stride * (sl.start + sl.step * (count - 1))
            fixed[alloc_dim] = (min(first, last), max(first, last) + 1)
            dims[axis_of_dim[d]] = (alloc_dim, first, stride * sl.step)
        data = view.reshape(shape)
        par_axis = self._result_par_axis(items, axis_of_dim, rank)
        return self._child(data, tuple(dims), self._box_with(fixed), par_axis)

    def _separable(
        self, items: list[Any], shape: tuple[int, ...]
    ) -> tuple[list[Any], dict[int, int]] | None:
        """A NumPy basic-indexing key equivalent to this advanced index, when there is one:
        every expression is `c + k·arange(n)` along its own result axis, in dimension order,
        and inside the tensor."""
        key: list[Any] = []
        axis_of_dim: dict[int, int] = {}
        last_axis = -1
        for d, (item, size) in enumerate(zip(items, self.shape, strict=True)):
            if isinstance(item, int):
                if not 0 <= item < size:
                    return None
                key.append(item)
                continue
            placed = item.as_slice()
            if placed is None or item.ndim != len(shape):
                return None
            sl, axis = placed
            if axis <= last_axis or sl.start < 0 or sl.stop > size:
                return None
            last_axis = axis
            key.append(sl)
            axis_of_dim[d] = axis
        return key, axis_of_dim

    def _result_par_axis(
        self, items: list[Any], axis_of_dim: dict[int, int], rank: int
    ) -> int | None:
        if rank == 0:
            return None
        if (
            self.par_axis is not None
            and self.par_axis in axis_of_dim
            and axis_of_dim[self.par_axis] != 0
        ):
            raise ConstraintViolation(
                f"the partition dimension of `{self.alloc.name}` must be indexed along the "
                "first axis of the tile, like nl.arange(128)[:, None]"
            )
        return 0

    # --- writing -------------------------------------------------------------------------------

    def __setitem__(self, key: Any, value: Any) -> None:
        target = self[key]
        if value is target or _same_view(value, target):
            # `t[i] += x` reads t[i] into a view, updates it in place, then stores the view
            # back onto itself: no instruction (the compiler emits no copy either; AccelOpt's
            # trn1 profiles of kernels written so show no VectorE work for it)
            return
        self._machine.assign(target, value)

    def _update(self, value: Any, op: str) -> NkiTensor:
        self._machine.update(self, value, op)
        return self

    def __iadd__(self, value: Any) -> NkiTensor:
        return self._update(value, "add")

    def __isub__(self, value: Any) -> NkiTensor:
        return self._update(value, "subtract")

    def __imul__(self, value: Any) -> NkiTensor:
        return self._update(value, "multiply")

    def __itruediv__(self, value: Any) -> NkiTensor:
        return self._update(value, "divide")

    # --- arithmetic operators map to nl ops ---------------------------------------------------

    def _binary(self, other: Any, op: str, *, reverse: bool = False) -> Any:
        return self._machine.operator(op, self, other, reverse=reverse)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, "add")

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, "add", reverse=True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, "subtract")

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, "subtract", reverse=True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, "multiply")

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, "multiply", reverse=True)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, "divide")

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, "divide", reverse=True)

    def __pow__(self, other: Any) -> Any:
        return self._binary(other, "power")

    def __neg__(self) -> Any:
        return self._machine.operator("multiply", self, -1.0, reverse=False)

    def __lt__(self, other: Any) -> Any:
        return self._binary(other, "less")

    def __le__(self, other: Any) -> Any:
        return self._binary(other, "less_equal")

    def __gt__(self, other: Any) -> Any:
        return self._binary(other, "greater")

    def __ge__(self, other: Any) -> Any:
        return self._binary(other, "greater_equal")

    def __eq__(self, other: Any) -> Any:
        if other is None:  # `t == None` (current NKI refuses `is`): Python's identity answer
            return NotImplemented
        return self._binary(other, "equal")

    def __ne__(self, other: Any) -> Any:
        if other is None:
            return NotImplemented
        return self._binary(other, "not_equal")

    __hash__ = object.__hash__

    # --- tensor methods of the NKI API ---------------------------------------------------------

    def reshape(self, *shape: Any) -> NkiTensor:
        override = self._machine.tensor_methods.get("reshape")
        if override is not None:
            result: NkiTensor = override(self)(*shape)
            return result
        new_shape = tuple(
            int(s)
            for s in (shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape)
        )
        return self._machine.reshape(self, new_shape)

    def broadcast_to(self, shape: Any) -> NkiTensor:
        return self._machine.broadcast(self, tuple(int(s) for s in shape))

    def expand_dims(self, axis: int) -> NkiTensor:
        shape = list(self.shape)
        shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
        return self._machine.reshape(self, tuple(shape))

    def astype(self, dtype: Any) -> Any:
        return self._machine.copy_tile(self, dtype=dtype)

    def assert_shape(self, shape: Any) -> NkiTensor:
        if tuple(shape) != self.shape:
            raise ConstraintViolation(
                f"`{self.alloc.name}` has shape {list(self.shape)}, not {list(shape)}"
            )
        return self

    # --- what instructions need ---------------------------------------------------------------

    def operand(self, name: str | None = None) -> Operand:
        """The trace record of this view as an instruction operand."""
        data = self.data
        itemsize = data.dtype.itemsize
        shape = data.shape
        # HBM has no partitions; a DMA spreads an access's first axis over them.
        leading = self.par_axis == 0 or (self.par_axis is None and len(shape) >= 2)
        partitions = shape[0] if shape and leading else 1
        elements = data.size // partitions if partitions else 0
        if self.alloc.on_chip:
            run = elements * itemsize  # contiguity matters for the HBM side of a DMA only
        else:
            run = itemsize
            for size, stride in zip(reversed(shape), reversed(data.strides), strict=True):
                if stride != run and size > 1:
                    break
                run *= size
            if shape and leading and shape[0] > 1:
                run = min(run, elements * itemsize)
        return Operand(
            self.alloc.id,
            name or self.alloc.name,
            self.alloc.buffer.value,
            dtype_name(data.dtype),
            shape,
            partitions,
            elements,
            data.size * itemsize,
            max(itemsize, run),
            self.box,
        )


class Access:
    """An access NumPy cannot express as a view: a gather, or one reaching outside the tensor
    (legal only where a mask excludes it). Resolved when an instruction uses it."""

    __slots__ = ("arrays", "base", "par_axis", "shape")

    def __init__(
        self, base: NkiTensor, arrays: list[Any], shape: tuple[int, ...], par_axis: int | None
    ) -> None:
        self.base = base
        self.arrays = arrays
        """Per dimension of `base`: an int, or an int array broadcastable to `shape`."""
        self.shape = shape
        self.par_axis = par_axis

    @classmethod
    def basic(cls, base: NkiTensor, items: list[Any]) -> Access:
        arrays: list[Any] = []
        shape: list[int] = []
        kept = [i for i in items if isinstance(i, slice)]
        rank = len(kept)
        axis = 0
        par_axis = None
        for d, item in enumerate(items):
            if isinstance(item, int):
                arrays.append(item)
                continue
            size = base.shape[d]
            start, stop, step = (
                item.start or 0,
                size if item.stop is None else item.stop,
                item.step or 1,
            )
            values = np.arange(start, stop, step, dtype=np.int64)
            arrays.append(
                values.reshape(tuple(len(values) if a == axis else 1 for a in range(rank)))
            )
            shape.append(len(values))
            if d == base.par_axis:
                par_axis = axis
            axis += 1
        return cls(base, arrays, tuple(shape), par_axis)

    @classmethod
    def advanced(cls, base: NkiTensor, items: list[Any], shape: tuple[int, ...]) -> Access:
        arrays = [i.evaluate(len(shape)) if isinstance(i, IndexExpr) else i for i in items]
        par_axis = 0 if shape else None
        if base.par_axis is not None and isinstance(items[base.par_axis], IndexExpr):
            expr = items[base.par_axis]
            varying = [t.axis + len(shape) - expr.ndim for t in expr.terms if t.length > 1]
            if any(a != 0 for a in varying):
                raise ConstraintViolation(
                    f"the partition dimension of `{base.alloc.name}` must be indexed along the "
                    "first axis of the tile, like nl.arange(128)[:, None]"
                )
        return cls(base, arrays, shape, par_axis)

    @property
    def alloc(self) -> Allocation:
        return self.base.alloc

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.base.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def positions(
        self, valid: np.ndarray[Any, Any] | None, what: str
    ) -> tuple[np.ndarray[Any, Any], ...]:
        """Index arrays of the valid elements (all, without a mask), bounds-checked."""
        full = [np.broadcast_to(np.asarray(a, dtype=np.int64), self.shape) for a in self.arrays]
        picked = [a[valid] if valid is not None else a.reshape(-1) for a in full]
        for d, (index, size) in enumerate(zip(picked, self.base.shape, strict=True)):
            if index.size and (index.min() < 0 or index.max() >= size):
                low, high = int(index.min()), int(index.max())
                hint = (
                    "the mask does not cover it"
                    if valid is not None
                    else self.base._machine.oob_hint
                    or "mask the ragged part (mask=...) or fix the number of tiles"
                )
                raise OutOfBounds(
                    f"{what}: out-of-bounds access to `{self.alloc.name}` on dimension {d}: "
                    f"index range [{low}, {high}] exceeds dimension size {size}; {hint}"
                )
        return tuple(picked)

    def box(self, picked: tuple[np.ndarray[Any, Any], ...]) -> Box:
        box = list(self.base.box)
        for d, index in enumerate(picked):
            mapping = self.base.dims[d]
            if mapping is None or not index.size:
                continue
            alloc_dim, origin, stride = mapping
            ends = (origin + stride * int(index.min()), origin + stride * int(index.max()))
            box[alloc_dim] = (min(ends), max(ends) + 1)
        return tuple(box)

    def operand(self, picked: tuple[np.ndarray[Any, Any], ...], name: str | None = None) -> Operand:
        itemsize = self.base.dtype.itemsize
        count = int(picked[0].size) if picked else 1
        partitions = self.shape[0] if self.shape and self.par_axis == 0 else 1
        last = self.arrays[-1] if self.arrays else 0
        run = itemsize
        if isinstance(last, np.ndarray) and last.ndim and last.shape[-1] > 1:
            flat = last.reshape(-1, last.shape[-1])[0]
            if np.all(np.diff(flat) == 1):
                run = itemsize * last.shape[-1]
        return Operand(
            self.alloc.id,
            name or self.alloc.name,
            self.alloc.buffer.value,
            dtype_name(self.base.dtype),
            self.shape,
            partitions,
            count // max(1, partitions),
            count * itemsize,
            run,
            self.box(picked),
        )

    def __getitem__(self, key: Any) -> Any:
        raise UnsupportedApi(
            "indexing the result of a gather or masked access again is not supported"
        )

    def __setitem__(self, key: Any, value: Any) -> None:
        raise UnsupportedApi("assign through the tensor, not through an already indexed access")

    def __iadd__(self, value: Any) -> Access:
        self.base._machine.update(self, value, "add")
        return self
