"""`neuronxcc.nki.language` (nl) under nkisim: allocation, data movement, element-wise
arithmetic, reductions, matmul, loops and SPMD, as the legacy NKI documentation defines them."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.dtypes import DTYPES, as_dtype
from nkibench.nkisim import isa, ops
from nkibench.nkisim.errors import ConstraintViolation, UnsupportedApi
from nkibench.nkisim.index import MGrid, arange
from nkibench.nkisim.loops import LoopIndex, affine_range, sequential_range, static_range
from nkibench.nkisim.machine import F32, LoopReduce, current
from nkibench.nkisim.tensor import Access, Buffer, NkiTensor, ds, par_dim

__all__ = [
    "affine_range",
    "arange",
    "ds",
    "mgrid",
    "par_dim",
    "sequential_range",
    "static_range",
]

sbuf = Buffer.SBUF
psum = Buffer.PSUM
hbm = Buffer.HBM
private_hbm = Buffer.HBM
shared_hbm = Buffer.SHARED_HBM

float32 = DTYPES["float32"]
float16 = DTYPES["float16"]
bfloat16 = DTYPES["bfloat16"]
tfloat32 = DTYPES["tfloat32"]
float32r = DTYPES["float32r"]
float8_e4m3 = DTYPES["float8_e4m3"]
float8_e5m2 = DTYPES["float8_e5m2"]
int8, int16, int32 = DTYPES["int8"], DTYPES["int16"], DTYPES["int32"]
uint8, uint16, uint32 = DTYPES["uint8"], DTYPES["uint16"], DTYPES["uint32"]
bool_ = DTYPES["bool_"]

mgrid = MGrid()


class tile_size:
    """Hardware tile limits (programming model TC#1..3)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512


class _MinMax:
    def __init__(self, min_value: float) -> None:
        self.min = min_value


fp32 = _MinMax(float(np.finfo(np.float32).min))


def _buffer(buffer: Any, default: Buffer, api: str) -> Buffer:
    if buffer is None:
        return default
    if not isinstance(buffer, Buffer):
        raise UnsupportedApi(f"{api}: buffer must be nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")
    return buffer


# --- allocation ------------------------------------------------------------------------------


def ndarray(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_kw: Any) -> NkiTensor:
    return current().allocate(shape, dtype, _buffer(buffer, sbuf, "nl.ndarray"), name)


def zeros(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_kw: Any) -> NkiTensor:
    # lazy_initialization (compiler-generated PSUM accumulators) means the same zero start.
    return current().allocate(
        shape, dtype, _buffer(buffer, sbuf, "nl.zeros"), name, fill=0, api="nl.zeros"
    )


def ones(shape: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_kw: Any) -> NkiTensor:
    return current().allocate(
        shape, dtype, _buffer(buffer, sbuf, "nl.ones"), name, fill=1, api="nl.ones"
    )


def full(
    shape: Any, fill_value: Any, dtype: Any, *, buffer: Any = None, name: str = "", **_kw: Any
) -> NkiTensor:
    return current().allocate(
        shape, dtype, _buffer(buffer, sbuf, "nl.full"), name, fill=fill_value, api="nl.full"
    )


def zeros_like(
    a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "", **_kw: Any
) -> NkiTensor:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def ones_like(
    a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "", **_kw: Any
) -> NkiTensor:
    return ones(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def empty_like(
    a: NkiTensor, dtype: Any = None, *, buffer: Any = None, name: str = "", **_kw: Any
) -> NkiTensor:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def shared_constant(constant: Any, dtype: Any = None, **_kw: Any) -> NkiTensor:
    return current().constant(constant, dtype)


def shared_identity_matrix(n: int, dtype: Any = np.uint8, **_kw: Any) -> NkiTensor:
    return current().constant(np.identity(n), dtype)


# --- data movement ---------------------------------------------------------------------------


def _hbm_access(src: Any, api: str) -> NkiTensor | Access:
    if not isinstance(src, NkiTensor | Access):
        raise ConstraintViolation(f"{api}: expected an HBM tensor, got {type(src).__name__}")
    return src


def load(src: Any, *, mask: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
    machine = current()
    access = _hbm_access(src, "nl.load")
    if access.alloc.on_chip:
        raise ConstraintViolation(
            f"nl.load: expected operand 'src' in hbm, got `{access.alloc.name}` in "
            f"{access.alloc.buffer.value} (nl.copy moves data on chip)"
        )
    if access.ndim == 0:
        raise ConstraintViolation(
            f"nl.load: the access of `{access.alloc.name}` is a single element; a tile needs a "
            "partition and a free dimension (index a range, e.g. x[i:i+1, j:j+1])"
        )
    # A 1-D access loads as a [n, 1] tile: one element per partition (legacy NKI's rule).
    read = machine.read(access, "nl.load", on_chip=False, hbm=True, mask=mask, tile=False)
    out_dtype = as_dtype(dtype, "nl.load dtype") if dtype is not None else access.dtype
    return machine.result(
        read.values, out_dtype, op="dma_load", engine="dma", inputs=[read], valid=read.valid
    )


def store(dst: Any, value: Any, *, mask: Any = None, **_kw: Any) -> None:
    machine = current()
    target = _hbm_access(dst, "nl.store")
    if target.alloc.on_chip:
        raise ConstraintViolation(
            f"nl.store: expected operand 'dst' in hbm, got `{target.alloc.name}` in "
            f"{target.alloc.buffer.value}"
        )
    what = f"nl.store into `{target.alloc.name}`"
    if isinstance(value, NkiTensor | Access):
        read = machine.read(value, what, mask=mask if value.shape == target.shape else None)
        values, valid = read.values, read.valid
        reads = [read]
    else:
        values, valid, reads = np.full(target.shape, value, dtype=F32), None, []
    mask_valid = machine.mask_array(mask, target.shape, what)
    if values.shape != target.shape:
        values, valid = machine._fit(values, valid, target.shape, what)
    if mask_valid is not None:
        valid = mask_valid if valid is None else valid & mask_valid
    out, picked = machine._target(target, what, valid)
    machine.record("dma_store", "dma", reads, (out, ()))
    machine._store_values(target, values, valid, picked)


def copy(src: Any, *, mask: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
    return current().copy_tile(src, dtype=dtype, mask=mask, api="nl.copy")


def load_transpose2d(src: Any, *, mask: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
    machine = current()
    access = _hbm_access(src, "nl.load_transpose2d")
    if access.ndim != 2:
        raise ConstraintViolation("nl.load_transpose2d takes a 2-D HBM access")
    read = machine.read(access, "nl.load_transpose2d", on_chip=False, hbm=True, tile=False)
    values = read.values.T
    valid = machine.mask_array(mask, values.shape, "nl.load_transpose2d")
    out_dtype = as_dtype(dtype) if dtype is not None else access.dtype
    return machine.result(
        values,
        out_dtype,
        op="dma_load",
        engine="dma",
        inputs=[read],
        valid=valid,
        attrs={"transpose": True},
    )


# --- element-wise ----------------------------------------------------------------------------


def _unary(name: str, engine: str) -> Any:
    def function(x: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
        return current().elementwise(
            name, [x], dtype=dtype, mask=mask, engine=engine, api=f"nl.{name}"
        )

    function.__name__ = name
    ops.register_op(function, name)
    return function


def _binary(name: str) -> Any:
    def function(x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
        return current().elementwise(
            name, [x, y], dtype=dtype, mask=mask, engine=None, api=f"nl.{name}"
        )

    function.__name__ = name
    ops.register_op(function, name)
    return function


_SCALAR_ENGINE = ops.ACTIVATIONS - {"abs", "sign"}
for _name in ops.UNARY:
    if _name != "copy":  # nl.copy above is the data move; it is also the identity op
        globals()[_name] = _unary(_name, "scalar" if _name in _SCALAR_ENGINE else "vector")
for _name in ops.BINARY:
    globals()[_name] = _binary(_name)
ops.register_op(copy, "copy")


def where(
    condition: Any, x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any
) -> NkiTensor:
    machine = current()
    shape = tuple(
        np.broadcast_shapes(*(t.shape for t in (condition, x, y) if isinstance(t, NkiTensor)))
    )
    values = []
    reads = []
    for i, arg in enumerate((condition, x, y)):
        value, read = machine.operand_value(arg, f"nl.where operand {i}", None, shape)
        values.append(value)
        if read is not None:
            reads.append(read)
    result = np.where(np.asarray(values[0], dtype=bool), values[1], values[2])
    out_dtype = (
        as_dtype(dtype) if dtype is not None else (x.dtype if isinstance(x, NkiTensor) else F32)
    )
    valid = machine.mask_array(mask, shape, "nl.where")
    return machine.result(
        np.broadcast_to(result, shape),
        out_dtype,
        op="select",
        engine="vector",
        inputs=reads,
        valid=valid,
    )


# --- reductions ------------------------------------------------------------------------------


def _reduction(name: str, api_name: str) -> Any:
    def function(
        x: Any,
        axis: Any,
        *,
        dtype: Any = None,
        mask: Any = None,
        keepdims: bool = False,
        **_kw: Any,
    ) -> NkiTensor:
        return current().reduce(
            name, x, axis, dtype=dtype, mask=mask, keepdims=keepdims, api=f"nl.{api_name}"
        )

    function.__name__ = api_name
    return function


sum = _reduction("add", "sum")
max = _reduction("maximum", "max")
min = _reduction("minimum", "min")
prod = _reduction("multiply", "prod")
mean = _reduction("mean", "mean")
var = _reduction("var", "var")
all = _reduction("logical_and", "all")
ops.register_op(sum, "add")
ops.register_op(max, "maximum")
ops.register_op(min, "minimum")
ops.register_op(prod, "multiply")


def loop_reduce(
    x: Any, op: Any, loop_indices: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any
) -> LoopReduce:
    """Reduce `x` into the destination it is assigned to, across the listed loops: the first
    iteration of those loops initialises the destination, later ones apply `op`."""
    machine = current()
    name = ops.op_name(op, "nl.loop_reduce")
    read = machine.read(x, "nl.loop_reduce")
    indices = loop_indices if isinstance(loop_indices, list | tuple) else [loop_indices]
    first = True
    for index in indices:
        first = first and (index.first if isinstance(index, LoopIndex) else int(index) == 0)
    out_dtype = as_dtype(dtype) if dtype is not None else read.values.dtype
    mask_values = machine.mask_array(mask, read.values.shape, "nl.loop_reduce")
    return LoopReduce(read, name, first, out_dtype, mask_values, machine.line())


# --- matmul and transpose --------------------------------------------------------------------


def matmul(x: Any, y: Any, *, transpose_x: bool = False, mask: Any = None, **_kw: Any) -> NkiTensor:
    """x @ y (or x.T @ y) into a new PSUM tile; without transpose_x, x is transposed on TensorE
    first (one extra instruction), as the compiler does."""
    stationary = (
        x if transpose_x else isa.nc_transpose(x, engine=isa.tensor_engine, _api="nl.matmul")
    )
    if not transpose_x:
        stationary = current().copy_tile(stationary, api="nl.matmul")  # PSUM → SBUF for TensorE
    return isa.nc_matmul(stationary, y, mask=mask, _api="nl.matmul")


def transpose(x: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
    if isinstance(x, NkiTensor | Access) and x.ndim != 2:
        raise ConstraintViolation("nl.transpose takes a 2-D tile")
    return isa.nc_transpose(
        x, dtype=dtype, mask=mask, engine=isa.tensor_engine, _api="nl.transpose"
    )


def broadcast_to(src: Any, *, shape: Any) -> NkiTensor:
    if not isinstance(src, NkiTensor):
        raise ConstraintViolation("nl.broadcast_to takes a tile")
    return src.broadcast_to(shape)


def expand_dims(data: Any, axis: int) -> NkiTensor:
    if not isinstance(data, NkiTensor):
        raise ConstraintViolation("nl.expand_dims takes a tile")
    return data.expand_dims(axis)


# --- SPMD and debugging ----------------------------------------------------------------------


def program_id(axis: int) -> int:
    machine = current()
    if not 0 <= axis < len(machine.program_ids):
        raise ConstraintViolation(
            f"nl.program_id({axis}): the launch grid has {len(machine.program_ids)} dimension(s)"
        )
    return machine.program_ids[axis]


def num_programs(axes: Any = None) -> int:
    grid = current().grid or (1,)
    if axes is None:
        return int(np.prod(grid))
    if isinstance(axes, int):
        return grid[axes]
    return int(np.prod([grid[a] for a in axes]))


def program_ndim() -> int:
    return len(current().grid)


def device_print(prefix: str, x: Any, *, mask: Any = None, **_kw: Any) -> None:
    machine = current()
    if isinstance(x, NkiTensor | Access):
        values = machine.read(
            x, "nl.device_print", on_chip=True, hbm=True, tile=False, mask=mask
        ).values
        print(prefix, values)
    else:
        print(prefix, x)


def static_cast(input_data: Any, dtype: Any) -> NkiTensor:
    return current().copy_tile(input_data, dtype=dtype, api="nl.static_cast")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # Python's own machinery (__path__, __wrapped__...)
        raise AttributeError(name)
    raise UnsupportedApi(f"nl.{name} is not implemented by nkisim")
