"""Reductions: tensor_reduce, the engines' reduce registers and the instructions that feed
them (activation, exponential, tensor_scalar_reduce, select_reduce, range_select), bn_stats /
bn_aggr and max8."""

# The NKI API's own signatures: documented positional parameters.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nkibench.nkisim import ops as _ops
from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.current.instructions.alu import (
    BITVEC,
    IDENTITY,
    apply,
    binary,
    compute_dst,
    flat,
    op_name,
    scalar_or_vector,
)
from nkibench.nkisim.current.instructions.enums import (
    CMD,
    reduce_cmd,
)
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.machine import F32 as _F32
from nkibench.nkisim.machine import Machine as _Machine
from nkibench.nkisim.tensor import Buffer as _Buffer

_Array = np.ndarray[Any, Any]


def _reduce_axes(axis: Any, ndim: int, api: str) -> tuple[int, ...]:
    items = list(axis) if isinstance(axis, list | tuple) else [axis]
    axes = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | np.integer):
            raise _Violation(f"{api}: axis must be integers, got {axis!r}")
        axes.append(int(item) + ndim if item < 0 else int(item))
    if 0 in axes:
        raise _Violation(
            f"{api}: axis 0 is the partition dimension; reductions run along free axes only "
            "(transpose first with nisa.nc_transpose, or matmul with a ones vector)"
        )
    ordered = tuple(sorted(set(axes)))
    if not ordered or ordered != tuple(range(ndim - len(ordered), ndim)) or ordered[-1] >= ndim:
        raise _Violation(
            f"{api}: axis {axis!r} must be the last contiguous free axes of a {ndim}-D tile "
            f"(e.g. {ndim - 1}, or {tuple(range(1, ndim))})"
        )
    return ordered


@_o.dst_first("nisa.tensor_reduce")
def tensor_reduce(
    dst: Any,
    op: Any,
    data: Any,
    axis: Any,
    negate: bool = False,
    keepdims: bool = False,
    name: Any = None,
) -> None:
    api = "nisa.tensor_reduce"
    machine, _ = _state()
    name_ = op_name(op, f"{api} op")
    if name_ not in _ops.REDUCTIONS:
        raise _Violation(f"{api}: {name_} is not a reduction operator")
    read = _o.read_tile(machine, data, api, "data")
    axes = _reduce_axes(axis, read.values.ndim, api)
    target = compute_dst(dst, api, "vector")
    values = (
        read.values if name_ in BITVEC or name_.startswith("bitwise") else (_o.as_f32(read.values))
    )
    result = np.asarray(_ops.REDUCTIONS[name_](values, axis=axes, keepdims=True))
    if negate:
        result = -result
    _o.emit(
        machine,
        api,
        target,
        result,
        op="tensor_reduce",
        engine="vector",
        inputs=[read],
        attrs={"op": name_},
    )


# --- reduce registers ----------------------------------------------------------------------------


def update_registers(
    st: Any,
    engine_name: str,
    partial: _Array | None,
    op_name: str,
    command: Any,
    api: str,
    init: Any = None,
) -> _Array | None:
    """Apply a reduce command to an engine's per-partition registers; returns their value."""
    if not isinstance(command, CMD):
        raise _Violation(f"{api}: reduce_cmd must be a nisa.reduce_cmd member, got {command!r}")
    registers = st.accumulators.get(engine_name)
    if partial is not None:
        partitions = partial.shape[0]
    elif registers is not None:
        partitions = registers.shape[0]
    else:
        partitions = 0
    if command in (CMD.reset, CMD.reset_reduce):
        registers = np.full(partitions, IDENTITY.get(op_name, 0.0), dtype=_F32)
    elif command is CMD.load_reduce:
        registers = np.broadcast_to(np.asarray(init, dtype=_F32).reshape(-1), (partitions,)).astype(
            _F32
        )
    if command in (CMD.reduce, CMD.reset_reduce, CMD.load_reduce):
        if partial is None:
            raise _Violation(f"{api}: reduce_cmd={command.name} needs a reduce_op")
        if registers is None:
            raise _Violation(
                f"{api}: reduce_cmd=reduce accumulates onto the {engine_name} engine's reduce "
                "registers, which no instruction has reset (use reduce_cmd.reset_reduce first)"
            )
        if registers.shape[0] != partial.shape[0]:
            raise _Violation(
                f"{api}: the reduce registers hold {registers.shape[0]} partitions, this "
                f"instruction reduces {partial.shape[0]}"
            )
        registers = np.asarray(binary(op_name, api)(registers, partial), dtype=_F32)
    st.accumulators[engine_name] = registers
    result: _Array | None = registers
    return result


def read_out(
    machine: _Machine,
    st: Any,
    api: str,
    engine_name: str,
    reduce_res: Any,
    registers: _Array | None,
    partitions: int,
    negate: bool = False,
) -> None:
    if reduce_res is None:
        return
    target = _o.tensor(reduce_res, api, "reduce_res")
    _o.check_buffer(target, api, "reduce_res", _o.ON_CHIP)
    if registers is None:
        raise _Violation(
            f"{api}: reduce_res reads the {engine_name} engine's reduce registers, which hold "
            "nothing yet: pass reduce_cmd=nisa.reduce_cmd.reset_reduce (reduce_cmd.idle leaves "
            "them untouched)"
        )
    if _o.per_partition(target.shape) != (partitions, 1):
        raise _Violation(
            f"{api}: reduce_res `{target.alloc.name}` must have shape ({partitions}, 1), got "
            f"{list(target.shape)}"
        )
    values = -registers if negate else registers
    _o.emit(
        machine,
        api,
        target,
        values.reshape(partitions, 1),
        op="reduce_readout",
        engine=engine_name,
        inputs=[],
    )


def reduce_partial(values: _Array, op_name: str, api: str) -> _Array:
    if op_name not in _ops.REDUCTIONS:
        raise _Violation(f"{api}: {op_name} is not a reduction operator")
    return np.asarray(_ops.REDUCTIONS[op_name](values, axis=1), dtype=_F32)


@_o.dst_first("nisa.activation")
def activation(
    dst: Any,
    op: Any,
    data: Any,
    bias: Any = None,
    scale: Any = 1.0,
    reduce_op: Any = None,
    reduce_res: Any = None,
    reduce_cmd: Any = reduce_cmd.idle,
    name: Any = None,
) -> None:
    """op(data * scale + bias) on ScalarE in float32, with an optional free-axis sum into
    ScalarE's reduce registers."""
    api = "nisa.activation"
    machine, st = _state()
    function = op_name(op, f"{api} op")
    if function not in _ops.ACTIVATIONS or function not in _ops.UNARY:
        raise _Violation(f"{api}: {function} is not an activation function of ScalarE")
    read = _o.read_tile(machine, data, api, "data")
    target = compute_dst(dst, api, "scalar")
    values = _o.as_f32(flat(read))
    partitions = values.shape[0]
    reads = [read]
    factor = scalar_or_vector(machine, scale, partitions, api, "scale", reads=reads)
    offset = scalar_or_vector(machine, bias, partitions, api, "bias", reads=reads)
    work = values * factor
    if offset is not None:
        work = work + offset
    result = np.asarray(_ops.UNARY[function](work), dtype=_F32)
    _o.emit(
        machine,
        api,
        target,
        result,
        op="activation",
        engine="scalar",
        inputs=reads,
        attrs={"function": function},
    )
    partial = None
    reduce_name = "add"
    if reduce_op is not None:
        reduce_name = op_name(reduce_op, f"{api} reduce_op")
        if reduce_name != "add":
            raise _Violation(f"{api}: reduce_op must be nl.add, got {reduce_name}")
        partial = reduce_partial(result, "add", api)
    registers = update_registers(st, "scalar", partial, reduce_name, reduce_cmd, api)
    read_out(machine, st, api, "scalar", reduce_res, registers, partitions)


@_o.dst_first("nisa.activation_reduce")
def activation_reduce(
    dst: Any,
    op: Any,
    data: Any,
    reduce_op: Any,
    reduce_res: Any,
    bias: Any = None,
    scale: Any = 1.0,
    name: Any = None,
) -> None:
    activation(
        dst,
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        reduce_cmd=CMD.reset_reduce,
    )


@_o.dst_first("nisa.exponential")
def exponential(
    dst: Any,
    src: Any,
    max_value: Any = 0.0,
    reduce_res: Any = None,
    reduce_cmd: Any = reduce_cmd.idle,
    reduce_init: Any = 0.0,
    name: Any = None,
) -> None:
    """exp(src - max_value) on VectorE (NeuronCore-v4+), optionally summed into registers."""
    api = "nisa.exponential"
    machine, st = _state()
    if st.limits.nc_version < 4:
        raise _Violation(
            f"{api} is available on NeuronCore-v4 (trn3) and newer, not {st.limits.target}; "
            "use nisa.activation(op=nl.exp, bias=-max)"
        )
    read = _o.read_tile(machine, src, api, "src")
    target = compute_dst(dst, api, "vector")
    values = _o.as_f32(flat(read))
    partitions = values.shape[0]
    reads = [read]
    shift = scalar_or_vector(machine, max_value, partitions, api, "max_value", reads=reads)
    result = np.exp(values - shift).astype(_F32)
    _o.emit(machine, api, target, result, op="exponential", engine="vector", inputs=reads)
    partial = None if reduce_cmd is CMD.idle else reduce_partial(result, "add", api)
    init = scalar_or_vector(machine, reduce_init, partitions, api, "reduce_init", reads=reads)
    registers = update_registers(st, "vector", partial, "add", reduce_cmd, api, init)
    read_out(machine, st, api, "vector", reduce_res, registers, partitions)


@_o.dst_first("nisa.tensor_scalar_reduce")
def tensor_scalar_reduce(
    dst: Any,
    data: Any,
    op0: Any,
    operand0: Any,
    reduce_op: Any,
    reduce_res: Any = None,
    reverse0: bool = False,
    reduce_cmd: Any = reduce_cmd.reset_reduce,
    reduce_init: Any = None,
    reduce_res_negate: bool = False,
    name: Any = None,
) -> None:
    api = "nisa.tensor_scalar_reduce"
    machine, st = _state()
    read = _o.read_tile(machine, data, api, "data")
    target = compute_dst(dst, api, "vector")
    values = _o.as_f32(flat(read))
    partitions = values.shape[0]
    reads = [read]
    operand = scalar_or_vector(machine, operand0, partitions, api, "operand0", reads=reads)
    result = apply(op_name(op0, f"{api} op0"), values, operand, reverse0, api)
    _o.emit(machine, api, target, result, op="tensor_scalar", engine="vector", inputs=reads)
    reduce_name = op_name(reduce_op, f"{api} reduce_op")
    partial = reduce_partial(np.asarray(result), reduce_name, api)
    init = scalar_or_vector(machine, reduce_init, partitions, api, "reduce_init", reads=reads)
    registers = update_registers(st, "vector", partial, reduce_name, reduce_cmd, api, init)
    read_out(
        machine, st, api, "vector", reduce_res, registers, partitions, negate=reduce_res_negate
    )


@_o.dst_first("nisa.select_reduce")
def select_reduce(
    dst: Any,
    predicate: Any,
    on_true: Any,
    on_false: Any,
    reduce_res: Any = None,
    reduce_cmd: Any = reduce_cmd.idle,
    reduce_op: Any = None,
    reverse_pred: bool = False,
    name: Any = None,
) -> None:
    api = "nisa.select_reduce"
    machine, st = _state()
    pred = _o.read_tile(machine, predicate, api, "predicate")
    true = _o.read_tile(machine, on_true, api, "on_true")
    if pred.source.alloc.buffer is _Buffer.PSUM and true.source.alloc.buffer is _Buffer.PSUM:
        raise _Violation(f"{api}: on_true and predicate cannot both be in PSUM")
    values, mask = flat(true), flat(pred)
    if values.shape != mask.shape:
        raise _Violation(f"{api}: predicate and on_true must have the same layout")
    target = compute_dst(dst, api, "vector")
    reads = [pred, true]
    otherwise = scalar_or_vector(machine, on_false, values.shape[0], api, "on_false", reads=reads)
    chosen = mask.astype(bool)
    if reverse_pred:
        chosen = ~chosen
    result = np.where(chosen, _o.as_f32(values), otherwise).astype(_F32)
    _o.emit(machine, api, target, result, op="select_reduce", engine="vector", inputs=reads)
    reduce_name = "maximum" if reduce_op is None else op_name(reduce_op, f"{api} reduce_op")
    partial = None if reduce_cmd is CMD.idle else reduce_partial(result, reduce_name, api)
    registers = update_registers(st, "vector", partial, reduce_name, reduce_cmd, api)
    read_out(machine, st, api, "vector", reduce_res, registers, values.shape[0])


_FP32_MIN = float(np.finfo(np.float32).min)


@_o.dst_first("nisa.range_select")
def range_select(
    dst: Any,
    on_true_tile: Any,
    comp_op0: Any,
    comp_op1: Any,
    bound0: Any,
    bound1: Any,
    reduce_cmd: Any = reduce_cmd.reset_reduce,
    reduce_res: Any = None,
    reduce_op: Any = None,
    range_start: int = 0,
    on_false_value: Any = _FP32_MIN,
    name: Any = None,
) -> None:
    """Keep elements whose free index (+ range_start) passes both bound comparisons."""
    api = "nisa.range_select"
    machine, st = _state()
    true = _o.read_tile(machine, on_true_tile, api, "on_true_tile")
    target = compute_dst(dst, api, "vector")
    values = _o.as_f32(flat(true))
    partitions, elements = values.shape
    reads = [true]
    low = scalar_or_vector(machine, bound0, partitions, api, "bound0", reads=reads)
    high = scalar_or_vector(machine, bound1, partitions, api, "bound1", reads=reads)
    index = (range_start + np.arange(elements, dtype=_F32)).reshape(1, -1)
    keep = np.asarray(binary(op_name(comp_op0, f"{api} comp_op0"), api)(index, low)) & np.asarray(
        binary(op_name(comp_op1, f"{api} comp_op1"), api)(index, high)
    )
    result = np.where(keep, values, np.float32(on_false_value)).astype(_F32)
    _o.emit(machine, api, target, result, op="range_select", engine="vector", inputs=reads)
    reduce_name = "maximum" if reduce_op is None else op_name(reduce_op, f"{api} reduce_op")
    partial = None if reduce_cmd is CMD.idle else reduce_partial(result, reduce_name, api)
    registers = update_registers(st, "vector", partial, reduce_name, reduce_cmd, api)
    read_out(machine, st, api, "vector", reduce_res, registers, partitions)


# --- statistics ----------------------------------------------------------------------------------


@_o.dst_first("nisa.bn_stats")
def bn_stats(dst: Any, data: Any, name: Any = None) -> None:
    """Per partition (count, mean, variance*count) of the even and of the odd elements."""
    api = "nisa.bn_stats"
    machine, st = _state()
    read = _o.read_tile(machine, data, api, "data")
    values = _o.as_f32(flat(read))
    if values.shape[1] > st.limits.bn_stats_fmax:
        raise _Violation(
            f"{api}: {values.shape[1]} elements per partition exceed nl.tile_size.bn_stats_fmax "
            f"({st.limits.bn_stats_fmax}); call bn_stats per 512-element tile and bn_aggr once"
        )
    target = compute_dst(dst, api, "vector")
    columns = []
    for half in (values[:, 0::2], values[:, 1::2]):
        count = half.shape[1]
        mean = half.mean(axis=1) if count else np.zeros(values.shape[0], dtype=_F32)
        m2 = ((half - mean[:, None]) ** 2).sum(axis=1) if count else mean * 0
        columns += [np.full(values.shape[0], count, dtype=_F32), mean, m2]
    result = np.stack(columns, axis=1).astype(_F32)
    _o.emit(machine, api, target, result, op="bn_stats", engine="vector", inputs=[read])


@_o.dst_first("nisa.bn_aggr")
def bn_aggr(dst: Any, data: Any, name: Any = None) -> None:
    """Mean and variance per partition from (count, mean, variance*count) triples."""
    api = "nisa.bn_aggr"
    machine, _ = _state()
    read = _o.read_tile(machine, data, api, "data")
    values = _o.as_f32(flat(read)).astype(np.float64)
    if values.shape[1] % 3:
        raise _Violation(f"{api}: data holds (count, mean, variance*count) triples per partition")
    triples = values.reshape(values.shape[0], -1, 3)
    count, mean, m2 = triples[..., 0], triples[..., 1], triples[..., 2]
    total = count.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    grand = (count * mean).sum(axis=1) / safe
    spread = (m2 + count * (mean - grand[:, None]) ** 2).sum(axis=1) / safe
    target = compute_dst(dst, api, "vector")
    result = np.stack([grand, spread], axis=1).astype(_F32)
    _o.emit(machine, api, target, result, op="bn_aggr", engine="vector", inputs=[read])


@_o.dst_first("nisa.max8")
def max8(dst: Any, src: Any, name: Any = None) -> None:
    api = "nisa.max8"
    machine, _ = _state()
    read = _o.read_tile(machine, src, api, "src")
    values = _o.as_f32(flat(read))
    if not 8 <= values.shape[1] <= 16384:
        raise _Violation(f"{api}: reads 8 to 16384 elements per partition, got {values.shape[1]}")
    target = compute_dst(dst, api, "vector")
    top = -np.sort(-values, axis=1)[:, :8]
    _o.emit(machine, api, target, top, op="max8", engine="vector", inputs=[read])


_PARTITION_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "add": np.sum,
    "average": np.mean,
    "maximum": np.max,
    "bitwise_or": np.bitwise_or.reduce,
    "bitwise_and": np.bitwise_and.reduce,
}


@_o.dst_first("nisa.tensor_partition_reduce")
def tensor_partition_reduce(dst: Any, op: Any, data: Any, name: Any = None) -> None:
    """Reduce across partitions on GpSimd: dst has one partition."""
    api = "nisa.tensor_partition_reduce"
    machine, _ = _state()
    reduction = op_name(op, f"{api} op")
    function = _PARTITION_REDUCTIONS.get(reduction)
    if function is None:
        raise _Violation(f"{api}: op must be add, average, max, bitwise_or or bitwise_and")
    read = _o.read_tile(machine, data, api, "data", allowed=_o.SBUF_ONLY)
    target = compute_dst(dst, api, "gpsimd", sbuf_only=True)
    values = flat(read)
    work = values if reduction.startswith("bitwise") else _o.as_f32(values)
    result = np.asarray(function(work, axis=0)).reshape(1, -1)
    _o.emit(
        machine, api, target, result, op="tensor_partition_reduce", engine="gpsimd", inputs=[read]
    )


@_o.dst_first("nisa.tensor_scalar_cumulative")
def tensor_scalar_cumulative(
    dst: Any,
    src: Any,
    op0: Any,
    op1: Any,
    imm0: Any,
    imm1: Any = None,
    reduce_cmd: Any = reduce_cmd.reset_reduce,
    name: Any = None,
) -> None:
    """reg = op1(op0(src[:, i], imm0), reg); dst[:, i] = reg, along the free axis, on VectorE's
    reduce registers."""
    api = "nisa.tensor_scalar_cumulative"
    machine, st = _state()
    read = _o.read_tile(machine, src, api, "src")
    target = compute_dst(dst, api, "vector")
    values = _o.as_f32(flat(read))
    partitions = values.shape[0]
    reads = [read]
    first = scalar_or_vector(machine, imm0, partitions, api, "imm0", reads=reads)
    init = scalar_or_vector(machine, imm1, partitions, api, "imm1", reads=reads)
    name0, name1 = op_name(op0, f"{api} op0"), op_name(op1, f"{api} op1")
    if name1 not in ("add", "subtract", "multiply", "maximum", "minimum"):
        raise _Violation(f"{api}: op1 must be add, subtract, multiply, max or min")
    if not isinstance(reduce_cmd, CMD) or reduce_cmd in (CMD.idle, CMD.reset):
        raise _Violation(f"{api}: reduce_cmd must be reset_reduce, reduce or load_reduce")
    registers = st.accumulators.get("vector")
    if reduce_cmd is CMD.reset_reduce:
        carry = np.full(partitions, IDENTITY[name1], dtype=_F32)
    elif reduce_cmd is CMD.load_reduce:
        if init is None:
            raise _Violation(f"{api}: reduce_cmd=load_reduce loads imm1, which is missing")
        carry = np.broadcast_to(np.asarray(init, dtype=_F32).reshape(-1), (partitions,)).copy()
    elif registers is None or registers.shape[0] != partitions:
        raise _Violation(
            f"{api}: reduce_cmd=reduce continues VectorE's reduce registers, which hold no "
            f"{partitions}-partition value (reset them with reduce_cmd.reset_reduce)"
        )
    else:
        carry = registers.astype(_F32)
    step = apply(name0, values, first, False, api)
    combine = binary(name1, api)
    out = np.empty_like(values)
    for i in range(values.shape[1]):
        carry = np.asarray(combine(step[:, i], carry), dtype=_F32)
        out[:, i] = carry
    st.accumulators["vector"] = carry
    _o.emit(machine, api, target, out, op="tensor_scalar_cumulative", engine="vector", inputs=reads)
