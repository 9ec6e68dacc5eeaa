"""Element-wise instructions of VectorE, ScalarE and GpSimd: tensor_tensor, tensor_scalar,
scalar_tensor_tensor, tensor_copy, memset, reciprocal, tensor_tensor_scan, iota, affine_select."""

# The NKI API's own signatures: documented positional parameters.
from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.current.instructions.alu import (
    BITVEC,
    apply,
    binary,
    compute_dst,
    flat,
    is_int,
    op_name,
    scalar_or_vector,
)
from nkibench.nkisim.current.instructions.enums import (
    chosen_by_compiler,
    engine,
    engine_name,
    no_psum_on_gpsimd,
)
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.errors import OutOfBounds as _OutOfBounds
from nkibench.nkisim.machine import F32 as _F32
from nkibench.nkisim.tensor import Access as _Access
from nkibench.nkisim.tensor import Buffer as _Buffer
from nkibench.nkisim.tensor import NkiTensor as _NkiTensor
from nkibench.nkisim.trace import compiler_placed

_Array = np.ndarray[Any, Any]


@_o.dst_first("nisa.tensor_tensor")
def tensor_tensor(
    dst: Any, data1: Any, data2: Any, op: Any, engine: Any = engine.unknown, name: Any = None
) -> None:
    api = "nisa.tensor_tensor"
    machine, _ = _state()
    name_ = op_name(op, f"{api} op")
    left = _o.read_tile(machine, data1, api, "data1")
    right = _o.read_tile(machine, data2, api, "data2")
    if left.source.alloc.buffer is _Buffer.PSUM and right.source.alloc.buffer is _Buffer.PSUM:
        raise _Violation(
            f"{api}: data1 `{left.source.alloc.name}` and data2 `{right.source.alloc.name}` "
            "are both in PSUM; at most one input may be (copy one to SBUF first)"
        )
    if _o.per_partition(tuple(left.values.shape)) != _o.per_partition(tuple(right.values.shape)):
        raise _Violation(
            f"{api}: data1 {list(left.values.shape)} and data2 {list(right.values.shape)} must "
            "have the same partitions and elements per partition (tensor_tensor does not "
            "broadcast; use nisa.tensor_scalar for a [P, 1] operand)"
        )
    target = _o.tensor(dst, api, "dst")
    integers = all(is_int(d) for d in (left.values.dtype, right.values.dtype, target.dtype))
    in_psum = any(t.alloc.buffer is _Buffer.PSUM for t in (left.source, right.source, target))
    default = "gpsimd" if (name_ == "power" or integers) and not in_psum else "vector"
    chosen = engine_name(engine, default, api, ("vector", "gpsimd"))
    no_psum_on_gpsimd(api, chosen, left.source, right.source)
    target = compute_dst(dst, api, chosen)
    a, b = flat(left), flat(right)
    if name_ in BITVEC:
        if not integers:
            raise _Violation(f"{api}: {name_} works on integer tiles only")
        values = binary(name_, api)(a, b)
    elif integers:
        values = binary(name_, api)(a.astype(np.int64), b.astype(np.int64))
    else:
        values = binary(name_, api)(_o.as_f32(a), _o.as_f32(b))
    _o.emit(
        machine,
        api,
        target,
        np.asarray(values),
        op="tensor_tensor",
        engine=chosen,
        inputs=[left, right],
        attrs={"op": name_},
    )


@_o.dst_first("nisa.tensor_scalar")
def tensor_scalar(
    dst: Any,
    data: Any,
    op0: Any,
    operand0: Any,
    reverse0: bool = False,
    op1: Any = None,
    operand1: Any = None,
    reverse1: bool = False,
    engine: Any = engine.unknown,
    name: Any = None,
) -> None:
    """(data op0 operand0) op1 operand1, operands scalars or (P, 1) tiles."""
    api = "nisa.tensor_scalar"
    machine, _ = _state()
    chosen = engine_name(engine, "vector", api, ("vector", "scalar", "gpsimd"))
    read = _o.read_tile(machine, data, api, "data")
    no_psum_on_gpsimd(api, chosen, read.source)
    target = compute_dst(dst, api, chosen)
    values = flat(read)
    partitions = values.shape[0]
    reads = [read]
    first = scalar_or_vector(machine, operand0, partitions, api, "operand0", reads=reads)
    name0 = op_name(op0, f"{api} op0")
    bitvec = name0 in BITVEC
    work = values if bitvec else _o.as_f32(values)
    result = apply(name0, work, first, reverse0, api)
    if op1 is not None:
        name1 = op_name(op1, f"{api} op1")
        if (name1 in BITVEC) != bitvec and name1 != "bypass":
            raise _Violation(f"{api}: op0 and op1 must both be bitvec or both arithmetic")
        second = scalar_or_vector(machine, operand1, partitions, api, "operand1", reads=reads)
        result = apply(name1, result, second, reverse1, api)
    elif operand1 is not None:
        raise _Violation(f"{api}: operand1 is given without op1")
    ops_used = [name0] + ([name1] if op1 is not None else [])
    _o.emit(
        machine,
        api,
        target,
        np.asarray(result),
        op="tensor_scalar",
        engine=chosen,
        inputs=reads,
        attrs={"ops": ops_used, **compiler_placed(chosen_by_compiler(engine))},
    )


@_o.dst_first("nisa.scalar_tensor_tensor")
def scalar_tensor_tensor(
    dst: Any,
    data: Any,
    op0: Any,
    operand0: Any,
    op1: Any,
    operand1: Any,
    reverse0: bool = False,
    reverse1: bool = False,
    name: Any = None,
) -> None:
    """(data op0 operand0) op1 operand1, operand0 a scalar or (P, 1), operand1 a tile."""
    api = "nisa.scalar_tensor_tensor"
    machine, _ = _state()
    read = _o.read_tile(machine, data, api, "data")
    other = _o.read_tile(machine, operand1, api, "operand1")
    if read.source.alloc.buffer is _Buffer.PSUM and other.source.alloc.buffer is _Buffer.PSUM:
        raise _Violation(f"{api}: data and operand1 are both in PSUM; at most one may be")
    values, second = flat(read), flat(other)
    if values.shape != second.shape:
        raise _Violation(
            f"{api}: operand1 {list(other.values.shape)} must have data's partitions and "
            f"elements per partition {list(read.values.shape)}"
        )
    target = compute_dst(dst, api, "vector")
    reads = [read, other]
    first = scalar_or_vector(machine, operand0, values.shape[0], api, "operand0", reads=reads)
    result = apply(op_name(op0, f"{api} op0"), _o.as_f32(values), first, reverse0, api)
    result = apply(op_name(op1, f"{api} op1"), result, _o.as_f32(second), reverse1, api)
    _o.emit(machine, api, target, result, op="scalar_tensor_tensor", engine="vector", inputs=reads)


@_o.dst_first("nisa.tensor_copy")
def tensor_copy(dst: Any, src: Any, engine: Any = engine.unknown, name: Any = None) -> None:
    """On-chip copy: bit-exact when dtypes match, through float32 when they differ."""
    api = "nisa.tensor_copy"
    machine, _ = _state()
    chosen = engine_name(engine, "vector", api, ("vector", "scalar", "gpsimd"))
    read = _o.read_tile(
        machine,
        src,
        api,
        "src",
        advice="tensor_copy moves data on chip; use nisa.dma_copy to or from HBM",
    )
    no_psum_on_gpsimd(api, chosen, read.source)
    target = compute_dst(dst, api, chosen)
    values = read.values if read.values.dtype == target.dtype else _o.as_f32(read.values)
    placed = compiler_placed(chosen_by_compiler(engine))
    _o.emit(
        machine, api, target, values, op="tensor_copy", engine=chosen, inputs=[read], attrs=placed
    )


@_o.dst_first("nisa.memset")
def memset(dst: Any, value: Any, engine: Any = engine.unknown, name: Any = None) -> None:
    api = "nisa.memset"
    machine, _ = _state()
    chosen = engine_name(engine, "vector", api, ("vector", "gpsimd"))
    target = compute_dst(dst, api, chosen)
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise _Violation(f"{api}: value is a compile-time constant, got {type(value).__name__}")
    values = np.full(target.shape, value).astype(target.dtype)
    _o.emit(machine, api, target, values, op="memset", engine=chosen, inputs=[])


def _reciprocal_values(values: _Array) -> _Array:
    return np.reciprocal(_o.as_f32(values))


@_o.dst_first("nisa.reciprocal")
def reciprocal(dst: Any, data: Any, name: Any = None) -> None:
    api = "nisa.reciprocal"
    machine, _ = _state()
    read = _o.read_tile(machine, data, api, "data")
    target = compute_dst(dst, api, "vector")
    _o.emit(
        machine,
        api,
        target,
        _reciprocal_values(read.values),
        op="reciprocal",
        engine="vector",
        inputs=[read],
    )


@_o.dst_first("nisa.tensor_tensor_scan")
def tensor_tensor_scan(
    dst: Any,
    data0: Any,
    data1: Any,
    initial: Any,
    op0: Any,
    op1: Any,
    reverse0: bool = False,
    reverse1: bool = False,
    name: Any = None,
) -> None:
    """r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i]), r[:, -1] = initial."""
    api = "nisa.tensor_tensor_scan"
    machine, _ = _state()
    first = _o.read_tile(machine, data0, api, "data0")
    second = _o.read_tile(machine, data1, api, "data1")
    if first.source.alloc.buffer is _Buffer.PSUM and second.source.alloc.buffer is _Buffer.PSUM:
        raise _Violation(f"{api}: data0 and data1 are both in PSUM; at most one may be")
    a, b = _o.as_f32(flat(first)), _o.as_f32(flat(second))
    if a.shape != b.shape:
        raise _Violation(f"{api}: data0 and data1 must have the same layout")
    target = compute_dst(dst, api, "vector")
    reads = [first, second]
    start = scalar_or_vector(machine, initial, a.shape[0], api, "initial", reads=reads)
    f0 = binary(op_name(op0, f"{api} op0"), api)
    f1 = binary(op_name(op1, f"{api} op1"), api)
    carry = np.broadcast_to(np.asarray(start, dtype=_F32).reshape(-1), (a.shape[0],)).copy()
    out = np.empty_like(a)
    for i in range(a.shape[1]):
        step = f0(carry, a[:, i]) if reverse0 else f0(a[:, i], carry)
        carry = f1(b[:, i], step) if reverse1 else f1(step, b[:, i])
        out[:, i] = carry
    _o.emit(machine, api, target, out, op="tensor_tensor_scan", engine="vector", inputs=reads)


# --- GpSimd patterns -----------------------------------------------------------------------------


def _affine(pattern: Any, offset: int, channel_multiplier: int, partitions: int, api: str) -> Any:
    """offset + p * channel_multiplier + Σ step_d * i_d, per partition, flattened."""
    if not isinstance(pattern, list | tuple) or not pattern:
        raise _Violation(f"{api}: pattern is a list of [step, num] pairs")
    values = np.zeros((1,), dtype=np.int64)
    for pair in pattern:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise _Violation(f"{api}: pattern entries are [step, num] pairs, got {pair!r}")
        step, count = int(pair[0]), int(pair[1])
        values = (values[:, None] + step * np.arange(count, dtype=np.int64)[None, :]).reshape(-1)
    channels = np.arange(partitions, dtype=np.int64)[:, None] * int(channel_multiplier)
    return int(offset) + channels + values[None, :]


@_o.dst_first("nisa.iota")
def iota(
    dst: Any, pattern: Any, offset: int = 0, channel_multiplier: int = 0, name: Any = None
) -> None:
    api = "nisa.iota"
    machine, _ = _state()
    target = compute_dst(dst, api, "gpsimd", sbuf_only=True)
    partitions, _ = _o.per_partition(target.shape)
    values = _affine(pattern, offset, channel_multiplier, partitions, api)
    _o.same_layout(api, target, tuple(values.shape), "the pattern")
    _o.emit(machine, api, target, values.astype(np.int32), op="iota", engine="gpsimd", inputs=[])


@_o.dst_first("nisa.affine_select")
def affine_select(
    dst: Any,
    pattern: Any,
    channel_multiplier: int,
    on_true_tile: Any,
    on_false_value: Any,
    cmp_op: Any = None,
    offset: int = 0,
    name: Any = None,
) -> None:
    """on_true_tile where cmp_op(affine value, 0), else on_false_value (causal masks)."""
    api = "nisa.affine_select"
    machine, _ = _state()
    true = _o.read_tile(machine, on_true_tile, api, "on_true_tile", allowed=_o.SBUF_ONLY)
    target = compute_dst(dst, api, "gpsimd", sbuf_only=True)
    values = flat(true)
    affine = _affine(pattern, offset, channel_multiplier, values.shape[0], api)
    if affine.shape != values.shape:
        raise _Violation(
            f"{api}: the pattern gives {affine.shape[1]} elements per partition, on_true_tile "
            f"has {values.shape[1]}"
        )
    compare = binary("equal" if cmp_op is None else op_name(cmp_op, f"{api} cmp_op"), api)
    keep = np.asarray(compare(affine, 0), dtype=bool)
    result = np.where(keep, _o.as_f32(values), np.float32(on_false_value))
    _o.emit(machine, api, target, result, op="affine_select", engine="gpsimd", inputs=[true])


@_o.dst_first("nisa.tensor_copy_predicated")
def tensor_copy_predicated(
    dst: Any, src: Any, predicate: Any, reverse_pred: bool = False, name: Any = None
) -> None:
    """dst = src where predicate (uint8/16/32) is true; elsewhere dst keeps its values."""
    api = "nisa.tensor_copy_predicated"
    machine, _ = _state()
    pred = _o.read_tile(machine, predicate, api, "predicate")
    if pred.values.dtype not in (np.uint8, np.uint16, np.uint32):
        raise _Violation(
            f"{api}: predicate must be uint8, uint16 or uint32, not {pred.values.dtype}"
        )
    target = compute_dst(dst, api, "vector")
    reads = [pred]
    if isinstance(src, _NkiTensor | _Access):
        source = _o.read_tile(machine, src, api, "src")
        if source.source.alloc.buffer is _Buffer.PSUM and pred.source.alloc.buffer is _Buffer.PSUM:
            raise _Violation(f"{api}: src and predicate cannot both be in PSUM")
        if source.values.dtype != target.dtype:
            raise _Violation(f"{api}: src is {source.values.dtype} and dst is {target.dtype}")
        values: Any = flat(source)
        reads.append(source)
    else:
        values = np.asarray(src).astype(target.dtype)
    mask = flat(pred).astype(bool)
    if reverse_pred:
        mask = ~mask
    kept = machine.read(target, f"{api} dst", tile=False, check=False)
    reads.append(kept)
    previous = kept.values.reshape(mask.shape)
    if np.shape(values) not in ((), mask.shape):
        raise _Violation(f"{api}: src, predicate and dst must have the same layout")
    result = np.where(mask, values, previous).astype(target.dtype)
    _o.emit(machine, api, target, result, op="tensor_copy", engine="vector", inputs=reads)


@_o.dst_first("nisa.nc_n_gather")
def nc_n_gather(dst: Any, data: Any, indices: Any, name: Any = None) -> None:
    """Per partition, dst[p, j] = data[p, :].flat[indices[p, j]] on GpSimd (SBUF only)."""
    api = "nisa.nc_n_gather"
    machine, _ = _state()
    source = _o.read_tile(machine, data, api, "data", allowed=_o.SBUF_ONLY)
    where = _o.read_tile(machine, indices, api, "indices", allowed=_o.SBUF_ONLY)
    if where.values.dtype != np.uint32:
        raise _Violation(f"{api}: indices must be uint32, not {where.values.dtype}")
    target = compute_dst(dst, api, "gpsimd", sbuf_only=True)
    values, index = flat(source), flat(where).astype(np.int64)
    if index.shape[0] != values.shape[0]:
        raise _Violation(f"{api}: data and indices must have the same partitions")
    if target.dtype != values.dtype:
        raise _Violation(f"{api}: dst is {target.dtype}, data is {values.dtype}; they match")
    if index.size and (index.min() < 0 or index.max() >= values.shape[1]):
        raise _OutOfBounds(
            f"{api}: indices reach {int(index.max())}, outside the {values.shape[1]} elements "
            "per partition of data"
        )
    result = np.take_along_axis(values, index, axis=1)
    _o.emit(machine, api, target, result, op="nc_n_gather", engine="gpsimd", inputs=[source, where])
