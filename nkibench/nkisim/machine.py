"""The machine a kernel runs on: allocates memory, reads operands, writes results, records
every instruction, and enforces the rules of the hardware as it goes.

nl.* and nisa.* functions find the machine of the running kernel through `current()`.
"""

from __future__ import annotations

import contextvars
import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkibench.dtypes import as_dtype, is_float
from nkibench.nkisim import ops
from nkibench.nkisim.dtypes import promote, sentinel_bits
from nkibench.nkisim.errors import ConstraintViolation, UnsupportedApi
from nkibench.nkisim.index import IndexExpr, MaskExpr
from nkibench.nkisim.tensor import PMAX, Access, Allocation, Buffer, NkiTensor, ParDim
from nkibench.nkisim.trace import (
    Instruction,
    Lifetime,
    Operand,
    Trace,
    compiler_placed,
    peak_overlap,
)
from nkibench.targets import TRAINIUM

__all__ = ["TARGETS", "Config", "Machine", "Read", "current", "running"]

Array = np.ndarray[Any, Any]
F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class TargetSpec:
    """The on-chip memory limits of one Trainium generation, per partition."""

    name: str
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int = 16 * 1024
    psum_bank_bytes: int = 2 * 1024
    psum_tile_bytes: int = 2 * 1024
    """The most one PSUM tile (one matmul's output) may span: a bank up to NC-v3, all 8 on
    NC-v4."""
    matmul_psum_dtypes: tuple[str, ...] = ("float32",)
    """What nc_matmul may write to PSUM (NC-v4 adds bfloat16)."""

    def __post_init__(self) -> None:
        bank, tile = self.psum_bank_bytes, self.psum_tile_bytes
        total = self.psum_bytes_per_partition
        if bank <= 0 or total % bank or tile % bank or not bank <= tile <= total:
            raise ValueError(
                f"{self.name}: a PSUM tile of {tile} bytes must be whole banks of {bank} "
                f"within the {total} bytes of a partition"
            )

    def psum_tile_fmax(self, itemsize: int) -> int:
        """The most elements of `itemsize` bytes a PSUM tile holds per partition."""
        return self.psum_tile_bytes // itemsize


TARGETS = {
    # Every size from the generation's sourced table (nkibench/targets.py).
    name: TargetSpec(
        name,
        int(generation.sbuf_bytes_per_partition.value),
        psum_bytes_per_partition=int(generation.psum_bytes_per_partition.value),
        psum_bank_bytes=int(generation.psum_bank_bytes.value),
        psum_tile_bytes=int(generation.psum_tile_bytes.value),
        matmul_psum_dtypes=generation.matmul_psum_dtypes,
    )
    for name, generation in TRAINIUM.items()
}


@dataclass(frozen=True)
class Config:
    target: str = "trn1"
    reverse_affine: frozenset[int] | None = None
    """Kernel lines of affine_range loops to run backwards (None: none; empty: all)."""
    strict_capacity: bool = False
    kernel_file: str = "kernel.py"
    beat: Callable[[], None] | None = None
    """Called on every instruction executed: how the sandbox's parent sees a long simulation
    making progress (nkibench.sandbox.progress)."""


@dataclass
class Read:
    """An operand as an instruction sees it."""

    values: Array
    operand: Operand
    block: tuple[int, ...]
    valid: Array | None
    source: NkiTensor | Access


@dataclass
class LoopReduce:
    """What nl.loop_reduce returns: applied when assigned into its destination."""

    read: Read
    op: str
    first: bool
    dtype: np.dtype[Any]
    mask: Array | None
    line: int


@dataclass(frozen=True)
class Layout:
    """What capacity accounting needs of an allocation (not its data, which may be freed)."""

    buffer: Buffer
    shape: tuple[int, ...]
    par_axis: int | None
    itemsize: int

    def bytes_per_partition(self, block: tuple[int, ...]) -> int:
        if self.par_axis is None:
            return int(np.prod(self.shape)) * self.itemsize
        free = int(np.prod(self.shape[self.par_axis + 1 :], dtype=np.int64))
        blocks = 1 if block else int(np.prod(self.shape[: self.par_axis], dtype=np.int64))
        return blocks * free * self.itemsize

    @property
    def partitions(self) -> int:
        return 1 if self.par_axis is None else self.shape[self.par_axis]


@dataclass
class Capacity:
    sbuf_peak_bytes: int = 0
    psum_peak_banks: int = 0
    sbuf_limit: int = 0
    psum_banks: int = 0
    at_instruction: dict[str, int] = field(default_factory=dict)


def _axes(axis: Any, ndim: int, api: str) -> tuple[int, ...]:
    items = list(axis) if isinstance(axis, list | tuple) else [axis]
    axes = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int):
            raise UnsupportedApi(f"{api}: axis must be integers")
        axes.append(item + ndim if item < 0 else item)
    if 0 in axes:
        raise ConstraintViolation(
            f"{api}: reductions run along free axes only, axis 0 is the partition dimension; "
            "transpose first (nisa.nc_transpose) or multiply by a ones vector on TensorE"
        )
    if any(not 0 < a < ndim for a in axes):
        raise ConstraintViolation(f"{api}: axis {axis} is out of range for a {ndim}-D tile")
    return tuple(sorted(set(axes)))


_current: contextvars.ContextVar[Machine | None] = contextvars.ContextVar("nkisim", default=None)


def current() -> Machine:
    machine = _current.get()
    if machine is None:
        raise UnsupportedApi(
            "NKI functions run only inside a kernel executed by nkisim (nki.jit-decorated)"
        )
    return machine


@contextmanager
def running(machine: Machine) -> Iterator[Machine]:
    token = _current.set(machine)
    try:
        yield machine
    finally:
        _current.reset(token)


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float | np.number | np.bool_) and not isinstance(value, bool)


class Machine:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.target = TARGETS[config.target]
        self.trace = Trace(config.beat)
        self._ids = itertools.count(1)
        self.warnings: list[str] = []
        self.grid: tuple[int, ...] = ()
        self.program_ids: tuple[int, ...] = ()
        self.affine_lines: set[int] = set()
        self.layouts: dict[int, Layout] = {}
        self.shared: list[NkiTensor] = []
        """Shared-HBM tensors of the first SPMD instance, handed to the later ones."""
        self.shared_cursor = 0
        # Hooks for a dialect's front (current NKI); legacy NKI leaves them empty.
        self.dialect_state: dict[str, Any] = {}
        """Per-run state a dialect's front keeps (registers, PSUM accumulation flags)."""
        self.tensor_methods: dict[str, Callable[[NkiTensor], Any]] = {}
        """Extra tensor attributes by name (`t.ap`, `t.slice`...): a getter given the tensor."""
        self.store_hook: Callable[[NkiTensor | Access], None] | None = None
        """Called before every write into a tensor (a dialect tracks who wrote what)."""
        self.oob_hint: str | None = None
        """The advice an out-of-bounds access ends with (None: legacy NKI's, about masks)."""
        self.python_indices = False
        """Negative indices count from the end (current NKI); legacy NKI refuses them."""

    # --- source lines --------------------------------------------------------------------------

    def line(self) -> int:
        """The kernel line being executed (0 when called from outside the kernel file)."""
        frame: Any = sys._getframe(1)
        kernel_file = self.config.kernel_file
        while frame is not None:
            if frame.f_code.co_filename == kernel_file:
                return int(frame.f_lineno)
            frame = frame.f_back
        return 0

    # --- allocation ----------------------------------------------------------------------------

    def allocate(
        self,
        shape: Any,
        dtype: Any,
        buffer: Buffer,
        name: str = "",
        *,
        fill: Any = None,
        api: str = "nl.ndarray",
        psum_tile_bytes: int | None = None,
    ) -> NkiTensor:
        """A new tensor; `fill` None leaves it uninitialised (the never-written sentinel).
        `psum_tile_bytes`: the largest PSUM tile per partition (None: one bank)."""
        dims = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
        if not all(
            isinstance(d, int | np.integer) and not isinstance(d, bool) and d > 0 for d in dims
        ):
            raise ConstraintViolation(f"{api}: shape {list(dims)} must be positive integers")
        par = [i for i, d in enumerate(dims) if isinstance(d, ParDim)]
        if len(par) > 1:
            raise ConstraintViolation(f"{api}: more than one nl.par_dim in shape {list(dims)}")
        shape_ints = tuple(int(d) for d in dims)
        np_dtype = as_dtype(dtype, f"{api} dtype")
        if buffer is Buffer.SHARED_HBM and self.shared_cursor < len(self.shared):
            # A later SPMD instance: shared HBM is the same memory for every instance.
            self.shared_cursor += 1
            return self.shared[self.shared_cursor - 1]
        ident = next(self._ids)
        label = name or f"t{ident}"
        par_axis: int | None = None
        if buffer.on_chip:
            par_axis = par[0] if par else 0
            if len(shape_ints) - par_axis < 2 and buffer.on_chip:
                raise ConstraintViolation(
                    f"{api}: `{label}` {list(shape_ints)} has no free dimension after the "
                    "partition dimension; SBUF/PSUM tiles are at least 2-D (use shape (P, 1))"
                )
            self._check_partitions(shape_ints[par_axis], f"{api} `{label}`")
            if buffer is Buffer.PSUM:
                free_bytes = int(np.prod(shape_ints[par_axis + 1 :])) * np_dtype.itemsize
                most = self.target.psum_bank_bytes if psum_tile_bytes is None else psum_tile_bytes
                if free_bytes > most:
                    what = (
                        "512 float32, one bank"
                        if most == self.target.psum_bank_bytes
                        else f"{most // 4} float32"
                    )
                    raise ConstraintViolation(
                        f"{api}: PSUM tile `{label}` {list(shape_ints)} needs {free_bytes} bytes "
                        f"per partition; a PSUM tile holds at most {most} ({what})"
                    )
        elif fill is not None:
            raise ConstraintViolation(f"{api}: HBM tensors cannot be created with an initial value")
        try:
            if fill is None:
                data = self._uninitialised(shape_ints, np_dtype)
            else:
                data = np.full(shape_ints, fill, dtype=np_dtype)
        except MemoryError:
            raise
        alloc = Allocation(ident, data, buffer, label, par_axis, initialized=fill is not None)
        tensor = self._root(alloc)
        if buffer is Buffer.SHARED_HBM:
            self.shared.append(tensor)
            self.shared_cursor += 1
        return tensor

    @staticmethod
    def _uninitialised(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
        sentinel = sentinel_bits(dtype)
        if sentinel is None:
            return np.full(shape, 4, dtype=dtype)  # AWS's simulator fills integers with 4
        view_dtype, bits = sentinel
        return np.full(shape, bits, dtype=view_dtype).view(dtype)

    def _root(self, alloc: Allocation) -> NkiTensor:
        shape = alloc.data.shape
        self.layouts[alloc.id] = Layout(
            alloc.buffer, tuple(shape), alloc.par_axis, alloc.dtype.itemsize
        )
        dims = tuple((d, 0, 1) for d in range(len(shape)))
        return NkiTensor(
            self, alloc, alloc.data, dims=dims, box=alloc.full_box, par_axis=alloc.par_axis
        )

    def wrap_input(self, array: Array, name: str) -> NkiTensor:
        data = np.ascontiguousarray(array)
        as_dtype(data.dtype, f"input {name}")
        data.setflags(write=False)
        alloc = Allocation(
            next(self._ids), data, Buffer.SHARED_HBM, name, None, initialized=True, input_name=name
        )
        return self._root(alloc)

    def constant(self, array: Any, dtype: Any = None) -> NkiTensor:
        data = np.array(array, dtype=as_dtype(dtype) if dtype is not None else None)
        if data.dtype == np.float64:
            data = data.astype(np.float32)
        as_dtype(data.dtype, "nl.shared_constant")
        data.setflags(write=False)
        ident = next(self._ids)
        alloc = Allocation(
            ident,
            data,
            Buffer.HBM,
            f"const{ident}",
            None,
            initialized=True,
            input_name=f"const{ident}",
        )
        return self._root(alloc)

    def _check_partitions(self, partitions: int, what: str) -> None:
        if partitions > PMAX:
            raise ConstraintViolation(
                f"{what}: number of partitions {partitions} exceeds the architecture limit of "
                f"{PMAX} (nl.tile_size.pmax); split the partition dimension into tiles of 128"
            )

    # --- reading operands ----------------------------------------------------------------------

    def mask_array(self, mask: Any, shape: tuple[int, ...], what: str) -> Array | None:
        if mask is None:
            return None
        if isinstance(mask, bool | np.bool_):
            return None if mask else np.zeros(shape, dtype=bool)
        if isinstance(mask, np.ndarray) and mask.dtype == bool:  # derived by an instruction
            return None if mask.all() else np.broadcast_to(mask, shape)
        if not isinstance(mask, MaskExpr):
            raise UnsupportedApi(f"{what}: mask must be a comparison of nl.arange expressions")
        values = mask.evaluate()
        if values.all():  # the usual full tile: no mask to apply
            return None
        if values.ndim < len(shape):  # masks align to the leading axes of the access
            values = values.reshape(values.shape + (1,) * (len(shape) - values.ndim))
        try:
            return np.broadcast_to(values, shape)
        except ValueError:
            raise ConstraintViolation(
                f"{what}: a mask of shape {list(values.shape)} does not fit an access of shape "
                f"{list(shape)}"
            ) from None

    def read(
        self,
        x: Any,
        what: str,
        *,
        on_chip: bool = True,
        hbm: bool = False,
        mask: Any = None,
        tile: bool = True,
        check: bool = True,
    ) -> Read:
        """An operand's values for an instruction, after checking where it lives."""
        if not isinstance(x, NkiTensor | Access):
            raise ConstraintViolation(f"{what}: expected a tile, got {type(x).__name__}")
        buffer = x.alloc.buffer
        chip = x.alloc.on_chip
        if (chip and not on_chip) or (not chip and not hbm):
            expected = "sbuf or psum" if on_chip else "hbm"
            fix = "; load it into SBUF first with nl.load" if not chip else ""
            raise ConstraintViolation(
                f"{what}: expected a tensor in {expected}, got `{x.alloc.name}` in "
                f"{buffer.value}{fix}"
            )
        if tile and chip and x.par_axis not in (0, None):
            raise ConstraintViolation(
                f"{what}: `{x.alloc.name}` still has block dimensions {list(x.shape)}; index "
                "them with integers to get a tile whose first dimension is the partition"
            )
        shape = x.shape
        valid = self.mask_array(mask, shape, what)
        if isinstance(x, NkiTensor):
            if x.valid is not None:
                valid = x.valid if valid is None else (valid & x.valid)
            values = x.data
            operand = x.operand()
            if check:
                x.alloc.check_initialized(values, x.box, valid, what)
        else:
            picked = x.positions(valid, what)
            values = self._uninitialised(shape, x.dtype)
            gathered = x.base.data[picked]
            if valid is None:
                values = gathered.reshape(shape)
            else:
                values[valid] = gathered
            operand = x.operand(picked)
            if check:
                x.alloc.check_initialized(gathered, operand.box, None, what, cache=False)
        x.alloc.readers += 1
        if chip and shape:
            self._check_partitions(shape[0], what)
        return Read(values, operand, x.alloc.block_of(operand.box), valid, x)

    # --- results -------------------------------------------------------------------------------

    def result(
        self,
        values: Array,
        dtype: np.dtype[Any],
        *,
        op: str,
        engine: str,
        inputs: list[Read],
        valid: Array | None = None,
        buffer: Buffer = Buffer.SBUF,
        attrs: dict[str, Any] | None = None,
        line: int | None = None,
    ) -> NkiTensor:
        """A fresh tile holding `values` (cast to `dtype`), produced by a new instruction."""
        if values.ndim == 1:
            values = values.reshape((*values.shape, 1))
        if values.ndim == 0:
            values = values.reshape(1, 1)
        self._check_partitions(values.shape[0], op)
        data = values.astype(dtype, copy=False) if values.dtype != dtype else values
        if valid is not None:
            garbage = self._uninitialised(data.shape, dtype)
            data = np.where(np.broadcast_to(valid, data.shape), data, garbage)
        if not data.flags.writeable or (data.base is not None and not data.flags.owndata):
            data = np.array(data)
        ident = next(self._ids)
        alloc = Allocation(ident, data, buffer, f"{op}{ident}", 0, initialized=True)
        tile = self._root(alloc)
        if valid is not None:
            tile.valid = np.broadcast_to(valid, data.shape)
            alloc.pending = True
        out = tile.operand()
        instruction = self.trace.add(
            op,
            engine,
            [(r.operand, r.block) for r in inputs],
            (out, ()),
            attrs=attrs,
            line=self.line() if line is None else line,
        )
        tile.producer = instruction
        return tile

    def write_result(
        self,
        target: NkiTensor | Access,
        values: Array,
        *,
        op: str,
        engine: str,
        inputs: list[Read],
        attrs: dict[str, Any] | None = None,
    ) -> None:
        """An instruction that computed `values` writing them into `target` (current NKI's
        dst-first calls): what `result` then `assign` record, without the fresh tile between."""
        what = f"write into `{target.alloc.name}`"
        self._check_partitions(values.shape[0] if values.ndim else 1, op)
        self._check_destination(engine, target, what)
        out, picked = self._target(target, what, None)
        self.trace.add(
            op,
            engine,
            [(r.operand, r.block) for r in inputs],
            (out, target.alloc.block_of(out.box)),
            attrs=attrs,
            line=self.line(),
        )
        self._store_values(target, values.reshape(target.shape), None, picked)

    def record(
        self,
        op: str,
        engine: str,
        inputs: list[Read],
        output: tuple[Operand, tuple[int, ...]] | None,
        attrs: dict[str, Any] | None = None,
    ) -> Instruction:
        return self.trace.add(
            op,
            engine,
            [(r.operand, r.block) for r in inputs],
            output,
            attrs=attrs,
            line=self.line(),
        )

    # --- writing -------------------------------------------------------------------------------

    def _target(self, target: NkiTensor | Access, what: str, valid: Array | None):  # type: ignore[no-untyped-def]
        if target.alloc.input_name is not None:
            raise ConstraintViolation(
                f"{what}: the kernel writes its input `{target.alloc.name}`; inputs are "
                "read-only (allocate outputs with nl.ndarray(..., buffer=nl.shared_hbm))"
            )
        if isinstance(target, NkiTensor):
            return target.operand(), None
        picked = target.positions(valid, what)
        return target.operand(picked), picked

    def _source(
        self, value: Any, shape: tuple[int, ...], what: str
    ) -> tuple[Array, Array | None, Read | None]:
        """The values to write (broadcast to `shape`), which of them are valid, and the read."""
        if isinstance(value, LoopReduce):
            raise AssertionError("loop_reduce is applied by assign")
        if _scalar(value) or isinstance(value, bool):
            return (
                np.full(shape, value, dtype=F32 if isinstance(value, float) else None),
                None,
                None,
            )
        if not isinstance(value, NkiTensor | Access):
            raise ConstraintViolation(
                f"{what}: cannot write a {type(value).__name__} into a tensor"
            )
        read = self.read(value, what, on_chip=True, hbm=True, tile=False)
        values, valid = read.values, read.valid
        if values.shape != shape:
            values, valid = self._fit(values, valid, shape, what)
        return values, valid, read

    @staticmethod
    def _fit(
        values: Array, valid: Array | None, shape: tuple[int, ...], what: str
    ) -> tuple[Array, Array | None]:
        try:
            if np.broadcast_shapes(values.shape, shape) == shape:
                fitted = np.broadcast_to(values, shape)
                return fitted, None if valid is None else np.broadcast_to(valid, shape)
        except ValueError:
            pass
        same_partitions = values.shape[:1] == shape[:1] or (values.ndim and values.shape[0] == 1)
        if values.size == int(np.prod(shape)) and same_partitions:
            return values.reshape(shape), None if valid is None else valid.reshape(shape)
        raise ConstraintViolation(
            f"{what}: cannot write a tile of shape {list(values.shape)} into a destination of "
            f"shape {list(shape)}"
        )

    def _store_values(
        self, target: NkiTensor | Access, values: Array, valid: Array | None, picked: Any
    ) -> None:
        if self.store_hook is not None:
            self.store_hook(target)
        dtype = target.dtype
        cast = values.astype(dtype, copy=False) if values.dtype != dtype else values
        if isinstance(target, NkiTensor):
            if valid is None:
                target.data[...] = cast
                if target.box == target.alloc.full_box:
                    target.alloc.pending = False
            else:
                np.copyto(target.data, cast, where=valid)
        elif valid is None:
            target.base.data[picked] = cast.reshape(-1)
        else:
            target.base.data[picked] = cast[valid]

    def assign(self, target: NkiTensor | Access, value: Any) -> None:
        """`dst[...] = value`: the instruction that made `value` writes `dst` directly when it
        can (as on hardware), else a copy instruction is recorded."""
        what = f"write into `{target.alloc.name}`"
        if isinstance(value, LoopReduce):
            self._loop_reduce(target, value, what)
            return
        shape = target.shape
        producer = value.producer if isinstance(value, NkiTensor) else None
        values, valid, read = self._source(value, shape, what)
        out, picked = self._target(target, what, valid)
        block = target.alloc.block_of(out.box)
        fresh = (
            producer is not None
            and isinstance(value, NkiTensor)
            and producer.output is not None
            and producer.output.alloc == value.alloc.id
            and value.alloc.readers <= 1
        )
        if fresh and producer is not None and isinstance(value, NkiTensor):
            self._check_destination(producer.engine, target, what)
            self.trace.forget(value.alloc.id)
            self.trace.set_output(producer, out, block)
        else:
            engine, op = (
                ("dma", "dma_copy") if not target.alloc.on_chip else ("vector", "tensor_copy")
            )
            placed = compiler_placed(engine == "vector")
            self.record(op, engine, [read] if read else [], (out, block), attrs=placed)
        self._store_values(target, values, valid, picked)

    def _check_destination(self, engine: str, target: NkiTensor | Access, what: str) -> None:
        buffer = target.alloc.buffer
        if engine == "tensor" and buffer is not Buffer.PSUM:
            raise ConstraintViolation(
                f"{what}: matmul results are written to PSUM; copy them to "
                f"{buffer.value} with nl.copy"
            )
        if engine in ("vector", "scalar", "gpsimd") and not buffer.on_chip:
            raise ConstraintViolation(
                f"{what}: compute instructions write SBUF or PSUM, not {buffer.value}; "
                "store results to HBM with nl.store"
            )
        if engine == "gpsimd" and buffer is Buffer.PSUM:
            raise ConstraintViolation(f"{what}: the GpSimd engine cannot write PSUM")

    def update(self, target: NkiTensor | Access, value: Any, op: str) -> None:
        """`dst += value` and friends. A fresh matmul result accumulates in PSUM for free."""
        what = f"{op} into `{target.alloc.name}`"
        producer = value.producer if isinstance(value, NkiTensor) else None
        shape = target.shape
        if (
            op == "add"
            and producer is not None
            and producer.engine == "tensor"
            and isinstance(value, NkiTensor)
            and producer.output is not None
            and producer.output.alloc == value.alloc.id
            and value.alloc.readers == 0
        ):
            if target.alloc.buffer is not Buffer.PSUM:
                raise ConstraintViolation(
                    f"{what}: matmul results accumulate only in PSUM (`{target.alloc.name}` is "
                    f"in {target.alloc.buffer.value})"
                )
            current_read = self.read(target, what, tile=False)
            values, valid = value.data, value.valid
            if values.shape != shape:
                values, valid = self._fit(values, valid, shape, what)
            self.trace.forget(value.alloc.id)
            producer.attrs["accumulate"] = True
            if isinstance(target, NkiTensor):
                out, picked = current_read.operand, None  # the region just read
            else:
                out, picked = self._target(target, what, valid)
            # The accumulation reads and writes the same region: set_output's write-after-
            # write dependencies are its read-after-write ones.
            self.trace.set_output(producer, out, target.alloc.block_of(out.box))
            if isinstance(target, NkiTensor) and target.dtype == F32:
                np.add(target.data, values, out=target.data, where=True if valid is None else valid)
            else:
                summed = current_read.values.astype(F32, copy=False) + values.astype(
                    F32, copy=False
                )
                self._store_values(target, summed, valid, picked)
            return
        current_read = self.read(target, what, tile=False)
        values, valid, read = self._source(value, shape, what)
        out, picked = self._target(target, what, valid)
        result = ops.BINARY[op](
            current_read.values.astype(F32, copy=False), np.asarray(values, dtype=F32)
        )
        inputs = [current_read] + ([read] if read else [])
        self.record(
            "tensor_tensor", "vector", inputs, (out, target.alloc.block_of(out.box)), {"op": op}
        )
        self._store_values(target, result, valid, picked)

    # --- element-wise arithmetic shared by nl.*, nisa.* and tile operators ---------------------

    def operand_value(
        self, x: Any, what: str, mask: Any, shape: tuple[int, ...] | None = None
    ) -> tuple[Any, Read | None]:
        if _scalar(x) or isinstance(x, bool):
            return x, None
        if isinstance(x, NkiTensor | Access):
            read = self.read(x, what, mask=mask if (shape is None or x.shape == shape) else None)
            return read.values, read
        raise ConstraintViolation(f"{what}: expected a tile or a scalar, got {type(x).__name__}")

    def elementwise(
        self,
        name: str,
        args: list[Any],
        *,
        dtype: Any = None,
        mask: Any = None,
        engine: str | None = "vector",
        api: str,
    ) -> NkiTensor:
        """`engine` None: the compiler places it (recorded on VectorE, marked compiler-placed)."""
        tiles = [a for a in args if isinstance(a, NkiTensor | Access)]
        if not tiles:
            raise ConstraintViolation(f"{api}: needs at least one tile operand")
        try:
            shape = tuple(np.broadcast_shapes(*(t.shape for t in tiles)))
        except ValueError:
            raise ConstraintViolation(
                f"{api}: operands of shapes {[list(t.shape) for t in tiles]} could not be "
                "broadcast together"
            ) from None
        reads: list[Read] = []
        values: list[Any] = []
        for i, arg in enumerate(args):
            value, read = self.operand_value(arg, f"{api} operand {i}", mask, shape)
            values.append(
                np.asarray(value, dtype=F32)
                if read is not None and value.dtype.kind != "b"
                else value
            )
            if read is not None:
                reads.append(read)
        valid = self.mask_array(mask, shape, api)
        for read in reads:
            if read.valid is not None and read.values.shape == shape:
                valid = read.valid if valid is None else valid & read.valid
        if dtype is not None:
            out_dtype = as_dtype(dtype, f"{api} dtype")
        elif name in ops.COMPARISONS:
            out_dtype = np.dtype(np.bool_)
        else:
            out_dtype = tiles[0].dtype
            for t in tiles[1:]:
                out_dtype = promote(out_dtype, t.dtype)
            if any(isinstance(v, float) for v in args) and not is_float(out_dtype):
                out_dtype = F32
        if name in ops.UNARY:
            computed = ops.UNARY[name](values[0])
        else:
            computed = ops.BINARY[name](values[0], values[1])
        computed = np.broadcast_to(computed, shape)
        return self.result(
            np.asarray(computed),
            out_dtype,
            op=name,
            engine=engine or "vector",
            inputs=reads,
            valid=valid,
            attrs={"api": api, **compiler_placed(engine is None)},
        )

    def operator(self, name: str, a: NkiTensor, b: Any, *, reverse: bool) -> NkiTensor:
        if isinstance(b, IndexExpr):
            raise UnsupportedApi("tile arithmetic with an nl.arange expression is not supported")
        args = [b, a] if reverse else [a, b]
        engine = "scalar" if _scalar(b) else "vector"
        return self.elementwise(name, args, engine=engine, api=f"tile {name}")

    # --- views that change shape ---------------------------------------------------------------

    def reshape(self, x: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
        if int(np.prod(shape)) != x.data.size:
            raise ConstraintViolation(
                f"cannot reshape `{x.alloc.name}` {list(x.shape)} to {list(shape)}"
            )
        if x.alloc.on_chip and (not shape or shape[0] != x.shape[0]):
            raise ConstraintViolation(
                f"reshape of on-chip tile `{x.alloc.name}` must keep its partition dimension "
                f"({x.shape[0]}), got {list(shape)}"
            )
        data = x.data.reshape(shape)
        dims = (
            tuple((None if i else x.dims[0]) for i in range(len(shape)))
            if x.alloc.on_chip
            else tuple(None for _ in shape)
        )
        par_axis = 0 if x.alloc.on_chip else None
        return NkiTensor(self, x.alloc, data, dims=dims, box=x.box, par_axis=par_axis)

    def broadcast(self, x: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
        try:
            data = np.broadcast_to(x.data, shape)
        except ValueError:
            raise ConstraintViolation(
                f"cannot broadcast `{x.alloc.name}` {list(x.shape)} to {list(shape)}"
            ) from None
        self._check_partitions(shape[0] if shape else 1, f"broadcast_to of `{x.alloc.name}`")
        view = NkiTensor(
            self, x.alloc, data, dims=tuple(None for _ in shape), box=x.box, par_axis=0
        )
        view.valid = x.valid if x.valid is None else np.broadcast_to(x.valid, shape)
        return view

    def copy_tile(
        self,
        x: Any,
        *,
        dtype: Any = None,
        mask: Any = None,
        engine: str | None = None,
        api: str = "nl.copy",
    ) -> NkiTensor:
        """A copy on `engine`, or (None) on the engine the compiler picks: recorded on VectorE
        and marked so, for the cost model to place it as the compiler does."""
        read = self.read(x, api, mask=mask)
        out_dtype = as_dtype(dtype, f"{api} dtype") if dtype is not None else read.values.dtype
        return self.result(
            read.values,
            out_dtype,
            op="tensor_copy",
            engine=engine or "vector",
            inputs=[read],
            valid=read.valid,
            attrs={"api": api, **compiler_placed(engine is None)},
        )

    def reduce(
        self,
        name: str,
        x: Any,
        axis: Any,
        *,
        dtype: Any,
        mask: Any,
        keepdims: bool,
        api: str,
        negate: bool = False,
    ) -> NkiTensor:
        """A free-axis reduction (nl.sum/max/..., nisa.tensor_reduce) on VectorE."""
        machine = self
        read = machine.read(x, api, mask=mask)
        axes = _axes(axis, read.values.ndim, api)
        values = (
            read.values.astype(F32)
            if read.values.dtype.kind == "f" or name in ("mean", "var")
            else read.values
        )
        if read.valid is not None:
            identity = {
                "add": 0.0,
                "maximum": -np.inf,
                "minimum": np.inf,
                "multiply": 1.0,
                "mean": 0.0,
            }.get(name, 0.0)
            values = np.where(read.valid, values, identity)
        if name == "mean":
            result = np.mean(values, axis=axes, keepdims=keepdims)
        elif name == "var":
            result = np.var(values, axis=axes, keepdims=keepdims)
        else:
            result = ops.REDUCTIONS[name](values, axis=axes, keepdims=keepdims)
        if negate:
            result = -result
        out_dtype = (
            as_dtype(dtype) if dtype is not None else (F32 if name in ("mean", "var") else x.dtype)
        )
        return machine.result(
            np.asarray(result),
            out_dtype,
            op="tensor_reduce",
            engine="vector",
            inputs=[read],
            attrs={"op": name, "api": api},
        )

    # --- nl.loop_reduce ------------------------------------------------------------------------

    def _loop_reduce(self, target: NkiTensor | Access, reduce: LoopReduce, what: str) -> None:
        values, valid = reduce.read.values, reduce.read.valid
        if reduce.mask is not None:
            valid = reduce.mask if valid is None else valid & reduce.mask
        shape = target.shape
        if values.shape != shape:
            values, valid = self._fit(values, valid, shape, what)
        out, picked = self._target(target, what, valid)
        inputs = [reduce.read]
        if reduce.first:
            result = values.astype(F32)  # the first visit initialises the destination
        else:
            current_read = self.read(target, what, tile=False, mask=None)
            if valid is not None:
                target.alloc.check_initialized(current_read.values, out.box, valid, what)
            inputs.insert(0, current_read)
            result = ops.BINARY[reduce.op](current_read.values.astype(F32), values.astype(F32))
        self.trace.add(
            "tensor_tensor",
            "vector",
            [(r.operand, r.block) for r in inputs],
            (out, target.alloc.block_of(out.box)),
            attrs={"op": reduce.op, "api": "nl.loop_reduce"},
            line=reduce.line,
        )
        self._store_values(target, result.astype(reduce.dtype), valid, picked)

    # --- capacity ------------------------------------------------------------------------------

    def lifetimes(self) -> list[Lifetime]:
        """Every on-chip block's lifetime over the trace, in no particular order."""
        found = []
        for ident, blocks in self.trace.live.items():
            layout = self.layouts.get(ident)
            if layout is None or not layout.buffer.on_chip:
                continue
            for block, (first, last) in blocks.items():
                found.append(
                    Lifetime(
                        layout.buffer.value,
                        first,
                        last,
                        layout.bytes_per_partition(block),
                        layout.partitions,
                    )
                )
        return found

    def capacity(self, lifetimes: list[Lifetime]) -> Capacity:
        """Peak live SBUF bytes per partition and live PSUM banks, over the trace."""
        bank = self.target.psum_bank_bytes
        result = Capacity(
            sbuf_limit=self.target.sbuf_bytes_per_partition,
            psum_banks=self.target.psum_bytes_per_partition // bank,
        )
        result.sbuf_peak_bytes, result.at_instruction["sbuf"] = peak_overlap(
            (life.first, life.last, life.bytes_per_partition)
            for life in lifetimes
            if life.buffer == "sbuf"
        )
        result.psum_peak_banks, result.at_instruction["psum"] = peak_overlap(
            (life.first, life.last, -(-life.bytes_per_partition // bank))
            for life in lifetimes
            if life.buffer == "psum"
        )
        return result
