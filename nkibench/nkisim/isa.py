"""`neuronxcc.nki.isa` (nisa) under nkisim: the engine instructions of legacy NKI, each
returning a new tile, with the operand rules of the NKI ISA documentation."""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.dtypes import as_dtype, is_float
from nkibench.nkisim import ops
from nkibench.nkisim.errors import ConstraintViolation, UnsupportedApi
from nkibench.nkisim.index import IndexExpr
from nkibench.nkisim.machine import F32, Read, current
from nkibench.nkisim.tensor import Access, Buffer, NkiTensor
from nkibench.nkisim.trace import compiler_placed

__all__ = [
    "activation",
    "iota",
    "memset",
    "nc_matmul",
    "nc_transpose",
    "reciprocal",
    "tensor_copy",
    "tensor_reduce",
    "tensor_scalar",
    "tensor_tensor",
    "tensor_tensor_scan",
]

GEMM_STATIONARY_FMAX = 128
GEMM_MOVING_FMAX = 512
VECTOR_TRANSPOSE_MAX = 32

tensor_engine = "tensor"
vector_engine = "vector"
scalar_engine = "scalar"
gpsimd_engine = "gpsimd"
dma_engine = "dma"
unknown_engine = "unknown"


class engine:
    tensor = tensor_engine
    vector = vector_engine
    scalar = scalar_engine
    gpsimd = gpsimd_engine
    sync = dma_engine
    unknown = unknown_engine


class reduce_cmd:
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


def _chosen_by_compiler(value: Any) -> bool:
    """No engine named: the compiler places the instruction."""
    return value is None or value == unknown_engine


def _engine(value: Any, default: str, api: str) -> str:
    if _chosen_by_compiler(value):
        return default
    if value not in (tensor_engine, vector_engine, scalar_engine, gpsimd_engine, dma_engine):
        raise UnsupportedApi(f"{api}: unknown engine {value!r}")
    return str(value)


def _read_tile(
    x: Any, api: str, *, mask: Any = None, psum: bool = True, engine_name: str = ""
) -> Read:
    machine = current()
    read = machine.read(x, api, mask=mask)
    if read.source.alloc.buffer is Buffer.PSUM and (not psum or engine_name == gpsimd_engine):
        who = "the GpSimd engine" if engine_name == gpsimd_engine else api
        raise ConstraintViolation(
            f"{api}: {who} cannot read PSUM (`{read.source.alloc.name}`); "
            "copy it to SBUF with nl.copy"
        )
    return read


def _as_2d(read: Read, role: str, api: str) -> np.ndarray[Any, Any]:
    values = read.values
    if values.ndim < 2:
        raise ConstraintViolation(f"{api}: {role} must be a 2-D tile")
    return values.reshape(values.shape[0], -1)


# --- TensorE ---------------------------------------------------------------------------------


def nc_matmul(
    stationary: Any,
    moving: Any,
    *,
    is_stationary_onezero: bool = False,
    is_moving_onezero: bool = False,
    is_transpose: bool = False,
    tile_position: Any = (),
    tile_size: Any = (),
    mask: Any = None,
    _api: str = "nisa.nc_matmul",
    **_kw: Any,
) -> NkiTensor:
    """stationary.T @ moving into a new float32 PSUM tile [stationary free, moving free]."""
    machine = current()
    shapes = [x.shape if isinstance(x, NkiTensor | Access) else () for x in (stationary, moving)]
    valid = None
    if mask is not None and all(len(s) == 2 for s in shapes):
        # The mask covers the output [stationary free, moving free]; each operand is read only
        # in the columns some selected output element needs.
        valid = machine.mask_array(mask, (shapes[0][1], shapes[1][1]), _api)
    left_mask = right_mask = None
    if valid is not None:
        rows_used = np.asarray(valid.any(axis=1)).reshape(1, -1)
        cols_used = np.asarray(valid.any(axis=0)).reshape(1, -1)
        left_mask = np.broadcast_to(rows_used, shapes[0])
        right_mask = np.broadcast_to(cols_used, shapes[1])
    left = _read_tile(stationary, f"{_api} stationary", psum=False, mask=left_mask)
    right = _read_tile(moving, f"{_api} moving", psum=False, mask=right_mask)
    a, b = _as_2d(left, "stationary", _api), _as_2d(right, "moving", _api)
    if a.shape[0] != b.shape[0]:
        raise ConstraintViolation(
            f"{_api}: the contraction (partition) sizes differ: stationary has {a.shape[0]} "
            f"partitions, moving has {b.shape[0]}; both operands hold K on the partition axis"
        )
    if a.shape[1] > GEMM_STATIONARY_FMAX:
        raise ConstraintViolation(
            f"{_api}: stationary free size {a.shape[1]} exceeds the architecture limit of "
            f"{GEMM_STATIONARY_FMAX} (nl.tile_size.gemm_stationary_fmax)"
        )
    if b.shape[1] > GEMM_MOVING_FMAX:
        raise ConstraintViolation(
            f"{_api}: moving free size {b.shape[1]} exceeds the architecture limit of "
            f"{GEMM_MOVING_FMAX} (nl.tile_size.gemm_moving_fmax): one matmul writes one PSUM "
            "bank of 512 float32; split the moving tile"
        )
    for role, dtype in (("stationary", a.dtype), ("moving", b.dtype)):
        if not is_float(dtype):
            raise ConstraintViolation(
                f"{_api}: {role} has dtype {dtype}; TensorE multiplies floating-point tiles"
            )
    if (a.dtype == F32) != (b.dtype == F32):
        raise ConstraintViolation(
            f"{_api}: operands are {a.dtype} and {b.dtype}; a float32 operand needs a float32 "
            "partner (cast one with nl.copy(..., dtype=...))"
        )
    result = a.astype(F32, copy=False).T @ b.astype(F32, copy=False)
    if valid is None:
        valid = machine.mask_array(mask, result.shape, _api)
    return machine.result(
        result,
        F32,
        op="nc_matmul",
        engine=tensor_engine,
        inputs=[left, right],
        valid=valid,
        buffer=Buffer.PSUM,
        attrs={
            "api": _api,
            "transpose": bool(is_transpose),
            "k": int(a.shape[0]),
            "m": int(a.shape[1]),
            "n": int(b.shape[1]),
            "dtype": str(a.dtype),
        },
    )


def nc_transpose(
    data: Any,
    *,
    mask: Any = None,
    dtype: Any = None,
    engine: Any = None,
    _api: str = "nisa.nc_transpose",
    **_kw: Any,
) -> NkiTensor:
    """Swap the partition and (flattened) free axes: on TensorE (≤128x128, SBUF → PSUM) or on
    VectorE (≤32x32)."""
    machine = current()
    read = machine.read(data, _api, mask=None)
    values = _as_2d(read, "data", _api)
    rows, cols = values.shape
    chosen = _engine(
        engine, tensor_engine if max(rows, cols) > VECTOR_TRANSPOSE_MAX else vector_engine, _api
    )
    if chosen == tensor_engine:
        if read.source.alloc.buffer is Buffer.PSUM:
            raise ConstraintViolation(f"{_api}: a TensorE transpose reads SBUF, not PSUM")
        if cols > GEMM_STATIONARY_FMAX:
            raise ConstraintViolation(
                f"{_api}: free size {cols} exceeds the TensorE transpose limit of 128"
            )
        buffer = Buffer.PSUM
    elif chosen == vector_engine:
        if max(rows, cols) > VECTOR_TRANSPOSE_MAX:
            raise ConstraintViolation(
                f"{_api}: a VectorE transpose handles at most 32x32, got {rows}x{cols}"
            )
        buffer = Buffer.SBUF
    else:
        raise ConstraintViolation(f"{_api}: transposes run on TensorE or VectorE, not {chosen}")
    out_dtype = as_dtype(dtype) if dtype is not None else read.values.dtype
    valid = machine.mask_array(mask, (cols, rows), _api)
    return machine.result(
        np.ascontiguousarray(values.T),
        out_dtype,
        op="nc_transpose",
        engine=chosen,
        inputs=[read],
        valid=valid,
        buffer=buffer,
        attrs={"api": _api, "k": rows, "m": cols, "n": rows, "dtype": str(values.dtype)},
    )


# --- VectorE, ScalarE, GpSimd ----------------------------------------------------------------


def _per_partition(operand: Any, partitions: int, role: str, api: str) -> tuple[Any, Read | None]:
    """A scalar, or a [P, 1] tile broadcast along the free axis."""
    if isinstance(operand, NkiTensor | Access):
        read = _read_tile(operand, f"{api} {role}")
        values = read.values
        if values.ndim != 2 or values.shape[1] != 1 or values.shape[0] not in (1, partitions):
            raise ConstraintViolation(
                f"{api}: {role} must be a scalar or a [{partitions}, 1] tile (one value per "
                f"partition), got {list(values.shape)}"
            )
        return values.astype(F32), read
    if isinstance(operand, bool) or not isinstance(operand, int | float | np.number):
        raise ConstraintViolation(
            f"{api}: {role} must be a scalar or a tile, got {type(operand).__name__}"
        )
    return np.float32(operand), None


def _apply(op: str, left: Any, right: Any, reverse: bool) -> Any:
    if reverse:
        left, right = right, left
    return ops.BINARY[op](left, right)


def tensor_scalar(
    data: Any,
    op0: Any,
    operand0: Any,
    reverse0: bool = False,
    op1: Any = None,
    operand1: Any = None,
    reverse1: bool = False,
    *,
    dtype: Any = None,
    mask: Any = None,
    engine: Any = None,
    **_kw: Any,
) -> NkiTensor:
    api = "nisa.tensor_scalar"
    machine = current()
    chosen = _engine(engine, vector_engine, api)
    read = _read_tile(data, api, mask=mask, engine_name=chosen)
    partitions = read.values.shape[0]
    reads = [read]
    first, r0 = _per_partition(operand0, partitions, "operand0", api)
    used = [ops.op_name(op0, f"{api} op0")]
    values = _apply(used[0], read.values.astype(F32), first, reverse0)
    if (op1 is None) != (operand1 is None):
        raise ConstraintViolation(f"{api}: op1 and operand1 go together (both or neither)")
    r1 = None
    if op1 is not None:
        second, r1 = _per_partition(operand1, partitions, "operand1", api)
        used.append(ops.op_name(op1, f"{api} op1"))
        values = _apply(used[1], values, second, reverse1)
    reads += [r for r in (r0, r1) if r is not None]
    out_dtype = as_dtype(dtype) if dtype is not None else read.values.dtype
    return machine.result(
        np.asarray(values),
        out_dtype,
        op="tensor_scalar",
        engine=chosen,
        inputs=reads,
        valid=read.valid,
        attrs={
            "api": api,
            "ops": used,
            **compiler_placed(_chosen_by_compiler(engine)),
        },
    )


def scalar_tensor_tensor(
    *,
    data: Any,
    op0: Any,
    operand0: Any,
    op1: Any,
    operand1: Any,
    reverse0: bool = False,
    reverse1: bool = False,
    dtype: Any = None,
    mask: Any = None,
    **_kw: Any,
) -> NkiTensor:
    api = "nisa.scalar_tensor_tensor"
    machine = current()
    read = _read_tile(data, api, mask=mask)
    first, r0 = _per_partition(operand0, read.values.shape[0], "operand0", api)
    other = _read_tile(operand1, f"{api} operand1", mask=mask)
    if other.values.shape != read.values.shape:
        raise ConstraintViolation(
            f"{api}: operand1 must have data's shape {list(read.values.shape)}"
        )
    values = _apply(ops.op_name(op0, f"{api} op0"), read.values.astype(F32), first, reverse0)
    values = _apply(ops.op_name(op1, f"{api} op1"), values, other.values.astype(F32), reverse1)
    reads = [read, other] + ([r0] if r0 else [])
    out_dtype = as_dtype(dtype) if dtype is not None else read.values.dtype
    return machine.result(
        np.asarray(values),
        out_dtype,
        op="scalar_tensor_tensor",
        engine=vector_engine,
        inputs=reads,
        valid=read.valid,
    )


def activation(
    op: Any,
    data: Any,
    *,
    bias: Any = None,
    scale: Any = 1.0,
    reduce_op: Any = None,
    reduce_res: Any = None,
    reduce_cmd: Any = 0,
    mask: Any = None,
    dtype: Any = None,
    **_kw: Any,
) -> NkiTensor:
    """op(data * scale + bias) on ScalarE, computed in float32."""
    api = "nisa.activation"
    machine = current()
    name = ops.op_name(op, api)
    if name not in ops.ACTIVATIONS:
        raise ConstraintViolation(f"{api}: {name} is not an activation function of ScalarE")
    read = _read_tile(data, api, mask=mask)
    partitions = read.values.shape[0]
    reads = [read]
    scale_value, scale_read = _per_partition(scale, partitions, "scale", api)
    values = read.values.astype(F32) * scale_value
    if bias is not None:
        bias_value, bias_read = _per_partition(bias, partitions, "bias", api)
        values = values + bias_value
        if bias_read:
            reads.append(bias_read)
    if scale_read:
        reads.append(scale_read)
    result = np.asarray(ops.UNARY[name](values))
    out_dtype = as_dtype(dtype) if dtype is not None else read.values.dtype
    tile = machine.result(
        result,
        out_dtype,
        op="activation",
        engine=scalar_engine,
        inputs=reads,
        valid=read.valid,
        attrs={"api": api, "function": name},
    )
    if reduce_op is not None or reduce_res is not None:
        if reduce_res is None or ops.op_name(reduce_op, f"{api} reduce_op") != "add":
            raise UnsupportedApi(
                f"{api}: only reduce_op=np.add with a reduce_res tile is supported"
            )
        summed = result.reshape(partitions, -1).sum(axis=1, keepdims=True)
        machine.assign(
            reduce_res,
            machine.result(summed, F32, op="activation_reduce", engine=scalar_engine, inputs=[]),
        )
    return tile


def tensor_reduce(
    op: Any,
    data: Any,
    axis: Any,
    *,
    mask: Any = None,
    dtype: Any = None,
    negate: bool = False,
    keepdims: bool = False,
    **_kw: Any,
) -> NkiTensor:
    name = ops.op_name(op, "nisa.tensor_reduce")
    if name not in ops.REDUCTIONS:
        raise ConstraintViolation(f"nisa.tensor_reduce: {name} is not a reduction operation")
    return current().reduce(
        name,
        data,
        axis,
        dtype=dtype,
        mask=mask,
        keepdims=keepdims,
        api="nisa.tensor_reduce",
        negate=negate,
    )


def reciprocal(data: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
    return current().elementwise(
        "reciprocal", [data], dtype=dtype, mask=mask, engine=vector_engine, api="nisa.reciprocal"
    )


def memset(
    shape: Any, value: Any, dtype: Any, *, mask: Any = None, engine: Any = None, **_kw: Any
) -> NkiTensor:
    machine = current()
    dims = tuple(int(d) for d in (shape if isinstance(shape, tuple | list) else (shape,)))
    if len(dims) < 2:
        raise ConstraintViolation(
            "nisa.memset: a tile shape needs a partition and a free dimension"
        )
    out_dtype = as_dtype(dtype, "nisa.memset dtype")
    values = np.full(dims, np.asarray(value).astype(out_dtype))
    valid = machine.mask_array(mask, dims, "nisa.memset")
    chosen = _engine(engine, vector_engine, "nisa.memset")
    return machine.result(
        values,
        out_dtype,
        op="memset",
        engine=chosen,
        inputs=[],
        valid=valid,
        attrs={"api": "nisa.memset"},
    )


def tensor_tensor(
    data1: Any,
    data2: Any,
    op: Any,
    *,
    dtype: Any = None,
    mask: Any = None,
    engine: Any = None,
    **_kw: Any,
) -> NkiTensor:
    api = "nisa.tensor_tensor"
    machine = current()
    chosen = _engine(engine, vector_engine, api)
    left = _read_tile(data1, f"{api} data1", mask=mask, engine_name=chosen)
    right = _read_tile(data2, f"{api} data2", mask=mask, engine_name=chosen)
    if left.source.alloc.buffer is Buffer.PSUM and right.source.alloc.buffer is Buffer.PSUM:
        raise ConstraintViolation(
            f"{api}: both inputs are in PSUM; at most one may be (copy one to SBUF)"
        )
    a, b = left.values, right.values
    if a.shape != b.shape:
        if a.shape[0] != b.shape[0] or a.size != b.size:
            raise ConstraintViolation(
                f"{api}: inputs of shapes {list(a.shape)} and {list(b.shape)} differ; "
                "tensor_tensor does not broadcast (use .broadcast_to or nl.* ops)"
            )
        b = b.reshape(a.shape)
    name = ops.op_name(op, api)
    values = ops.BINARY[name](a.astype(F32), b.astype(F32))
    out_dtype = (
        as_dtype(dtype)
        if dtype is not None
        else (a.dtype if a.dtype.itemsize >= b.dtype.itemsize else b.dtype)
    )
    valid = (
        left.valid
        if right.valid is None
        else (right.valid if left.valid is None else left.valid & right.valid.reshape(a.shape))
    )
    return machine.result(
        np.asarray(values),
        out_dtype,
        op="tensor_tensor",
        engine=chosen,
        inputs=[left, right],
        valid=valid,
        attrs={"api": api, "op": name},
    )


def tensor_tensor_scan(
    data0: Any,
    data1: Any,
    initial: Any,
    op0: Any,
    op1: Any,
    reverse0: bool = False,
    reverse1: bool = False,
    *,
    dtype: Any = None,
    mask: Any = None,
    **_kw: Any,
) -> NkiTensor:
    """Along the free axis: r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i]), with
    r[:, -1] = initial."""
    api = "nisa.tensor_tensor_scan"
    machine = current()
    first = _read_tile(data0, f"{api} data0", mask=mask)
    second = _read_tile(data1, f"{api} data1", mask=mask)
    a, b = _as_2d(first, "data0", api).astype(F32), _as_2d(second, "data1", api).astype(F32)
    if a.shape != b.shape:
        raise ConstraintViolation(
            f"{api}: data0 {list(a.shape)} and data1 {list(b.shape)} must have the same shape"
        )
    if first.source.alloc.buffer is Buffer.PSUM and second.source.alloc.buffer is Buffer.PSUM:
        raise ConstraintViolation(f"{api}: both inputs are in PSUM; at most one may be")
    start, start_read = _per_partition(initial, a.shape[0], "initial", api)
    name0, name1 = ops.op_name(op0, f"{api} op0"), ops.op_name(op1, f"{api} op1")
    carry = np.broadcast_to(np.asarray(start, dtype=F32).reshape(-1), a.shape[:1]).astype(F32)
    if (name0, name1) == ("multiply", "add"):
        out = _linear_recurrence(a, b, carry)
    else:
        out = _sequential_scan(a, b, carry, name0, name1, reverse0=reverse0, reverse1=reverse1)
    reads = [first, second] + ([start_read] if start_read else [])
    out_dtype = as_dtype(dtype) if dtype is not None else first.values.dtype
    return machine.result(
        out.reshape(first.values.shape),
        out_dtype,
        op="tensor_tensor_scan",
        engine=vector_engine,
        inputs=reads,
        attrs={"api": api},
    )


def _linear_recurrence(
    a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], initial: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """h[:, i] = a[:, i] * h[:, i-1] + b[:, i] in log2(n) vectorised steps.

    The pairs (a, b) compose associatively, (a1, b1) then (a2, b2) = (a1 a2, a2 b1 + b2), so a
    Hillis-Steele scan gives every prefix exactly, in float32, up to rounding order (both
    operations are commutative, so the reverse flags do not matter).
    """
    factors = a.copy()
    values = b.copy()
    values[:, 0] += factors[:, 0] * initial
    shift = 1
    while shift < a.shape[1]:
        values[:, shift:] = values[:, shift:] + factors[:, shift:] * values[:, :-shift]
        factors[:, shift:] = factors[:, shift:] * factors[:, :-shift]
        shift *= 2
    return values


def _sequential_scan(
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    initial: np.ndarray[Any, Any],
    name0: str,
    name1: str,
    *,
    reverse0: bool,
    reverse1: bool,
) -> np.ndarray[Any, Any]:
    f0, f1 = ops.BINARY[name0], ops.BINARY[name1]
    out = np.empty_like(a)
    carry = initial
    for i in range(a.shape[1]):
        step = f0(carry, a[:, i]) if reverse0 else f0(a[:, i], carry)
        carry = f1(b[:, i], step) if reverse1 else f1(step, b[:, i])
        out[:, i] = carry
    return out


def iota(expr: Any, dtype: Any, *, mask: Any = None, **_kw: Any) -> NkiTensor:
    machine = current()
    if isinstance(expr, IndexExpr):
        values = expr.evaluate()
    elif isinstance(expr, int) and not isinstance(expr, bool):
        values = np.full((1, 1), int(expr), dtype=np.int64)
    else:
        raise ConstraintViolation("nisa.iota takes an nl.arange expression or a loop index")
    if values.ndim < 2:
        raise ConstraintViolation(
            "nisa.iota: place the arange on axes, like nl.arange(128)[:, None]"
        )
    out_dtype = as_dtype(dtype, "nisa.iota dtype")
    valid = machine.mask_array(mask, values.shape, "nisa.iota")
    return machine.result(
        values.astype(np.int32).astype(out_dtype),
        out_dtype,
        op="iota",
        engine=gpsimd_engine,
        inputs=[],
        valid=valid,
    )


def tensor_copy(
    src: Any, *, mask: Any = None, dtype: Any = None, engine: Any = None, **_kw: Any
) -> NkiTensor:
    chosen = _engine(engine, vector_engine, "nisa.tensor_copy")
    if (
        chosen == gpsimd_engine
        and isinstance(src, NkiTensor | Access)
        and src.alloc.buffer is Buffer.PSUM
    ):
        raise ConstraintViolation("nisa.tensor_copy: the GpSimd engine cannot read PSUM")
    placed_by_compiler = _chosen_by_compiler(engine)
    return current().copy_tile(
        src,
        dtype=dtype,
        mask=mask,
        engine=None if placed_by_compiler else chosen,
        api="nisa.tensor_copy",
    )


def dma_copy(*, dst: Any, src: Any, mask: Any = None, dst_rmw_op: Any = None, **_kw: Any) -> None:
    machine = current()
    if dst_rmw_op is not None:
        raise UnsupportedApi("nisa.dma_copy: dst_rmw_op is not supported by nkisim")
    if not isinstance(src, NkiTensor | Access) or not isinstance(dst, NkiTensor | Access):
        raise ConstraintViolation("nisa.dma_copy: dst and src must be tensors")
    read = machine.read(src, "nisa.dma_copy", on_chip=True, hbm=True, mask=mask, tile=False)
    values, valid = read.values, read.valid
    if values.shape != dst.shape:
        values, valid = machine._fit(values, valid, dst.shape, "nisa.dma_copy")
    out, picked = machine._target(dst, "nisa.dma_copy", valid)
    machine.record("dma_copy", dma_engine, [read], (out, dst.alloc.block_of(out.box)))
    machine._store_values(dst, values, valid, picked)


def get_nc_version() -> str:
    return current().config.target


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # Python's own machinery (__path__, __wrapped__...)
        raise AttributeError(name)
    raise UnsupportedApi(f"nisa.{name} is not implemented by nkisim")
