"""`nki.language` (nl) of current NKI under nkisim: allocation, `load`/`store`, the element-wise
and reduction functions (legacy nkisim's, without `mask=`), loops (static ones as range
aliases, dynamic ones on registers), SPMD queries and the tile-size constants per target.

Legacy names that NKI 0.2+ removed (`arange`, `mgrid`, `par_dim`, `mask=`) are refused with
the replacement to use.
"""

# The NKI API's own signatures: documented positional parameters.
from __future__ import annotations

import math
from collections.abc import Callable as _Callable
from collections.abc import Iterator as _Iterator
from contextlib import AbstractContextManager as _ContextManager
from contextlib import nullcontext as _nullcontext
from contextlib import suppress as _suppress
from typing import Any

from nkibench.dtypes import DTYPES as _DTYPES
from nkibench.nkisim import language as _legacy
from nkibench.nkisim import loops as _loops
from nkibench.nkisim import ops as _ops
from nkibench.nkisim.current.limits import Limits as _Limits
from nkibench.nkisim.current.limits import limits_of as _limits_of
from nkibench.nkisim.current.registers import VirtualRegister as _VirtualRegister
from nkibench.nkisim.current.registers import runtime_int as _runtime_int
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.errors import UnsupportedApi as _Unsupported
from nkibench.nkisim.machine import TARGETS as _TARGETS
from nkibench.nkisim.machine import Config as _Config
from nkibench.nkisim.machine import Machine as _Machine
from nkibench.nkisim.machine import _current
from nkibench.nkisim.tensor import Access as _Access
from nkibench.nkisim.tensor import Buffer as _Buffer
from nkibench.nkisim.tensor import NkiTensor as _NkiTensor
from nkibench.nkisim.tensor import ds

__all__ = ["ds"]

# --- buffers and dtypes --------------------------------------------------------------------------

sbuf = _Buffer.SBUF
psum = _Buffer.PSUM
hbm = _Buffer.HBM
private_hbm = _Buffer.HBM
shared_hbm = _Buffer.SHARED_HBM


def is_hbm(buffer: Any) -> bool:
    return buffer in (_Buffer.HBM, _Buffer.SHARED_HBM)


def is_on_chip(buffer: Any) -> bool:
    return buffer in (_Buffer.SBUF, _Buffer.PSUM)


def is_psum(buffer: Any) -> bool:
    return buffer is _Buffer.PSUM


def is_sbuf(buffer: Any) -> bool:
    return buffer is _Buffer.SBUF


float32 = _DTYPES["float32"]
float16 = _DTYPES["float16"]
bfloat16 = _DTYPES["bfloat16"]
tfloat32 = _DTYPES["tfloat32"]
float8_e4m3 = _DTYPES["float8_e4m3"]
float8_e4m3fn = _DTYPES["float8_e4m3"]  # nkisim stores both fp8 e4m3 kinds as OCP e4m3fn
float8_e5m2 = _DTYPES["float8_e5m2"]
int8, int16, int32 = _DTYPES["int8"], _DTYPES["int16"], _DTYPES["int32"]
uint8, uint16, uint32 = _DTYPES["uint8"], _DTYPES["uint16"], _DTYPES["uint32"]
bool_ = _DTYPES["bool_"]


# --- classes kernels name ------------------------------------------------------------------------


class NKIObject:
    """Base of kernel-side configuration objects (plain attributes)."""

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)


class _TensorMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, _NkiTensor | _Access)


class TensorType(metaclass=_TensorMeta):
    """`nl.NkiTensor` as kernels see it: for annotations and isinstance, not construction."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> TensorType:
        raise _Violation("nl.NkiTensor(...) is not how tensors are made: use nl.ndarray")


# --- tile sizes ----------------------------------------------------------------------------------


class _TileSize:
    """`nl.tile_size`: the limits of the target the kernel runs on (trn2's outside a run)."""

    def _limits(self) -> _Limits:
        machine = _current.get()
        if machine is None:  # outside a run (a constant at a kernel module's top level)
            target = "trn2" if "trn2" in _TARGETS else next(iter(_TARGETS))
            return _limits_of(_Machine(_Config(target=target)))
        return _state()[1].limits

    pmax = property(lambda self: self._limits().pmax)
    psum_fmax = property(lambda self: self._limits().psum_bank_fmax)
    psum_bank_fmax = property(lambda self: self._limits().psum_bank_fmax)
    psum_bank_fmax_bytes = property(lambda self: self._limits().psum_bank_bytes)
    psum_num_banks = property(lambda self: self._limits().psum_banks)
    gemm_stationary_fmax = property(lambda self: self._limits().gemm_stationary_fmax)
    gemm_moving_fmax = property(lambda self: self._limits().gemm_moving_fmax)
    bn_stats_fmax = property(lambda self: self._limits().bn_stats_fmax)
    sbuf_fmax_bytes = property(lambda self: self._limits().sbuf_bytes_per_partition)
    sbuf_fmax = property(lambda self: self._limits().sbuf_bytes_per_partition // 4)
    total_available_sbuf_size = property(lambda self: self._limits().sbuf_bytes_per_partition)
    sbuf_size_bytes = property(
        lambda self: self._limits().sbuf_bytes_per_partition * self._limits().pmax
    )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise _Unsupported(f"nl.tile_size.{name} is not known to nkisim")


tile_size = _TileSize()


# --- allocation ----------------------------------------------------------------------------------


def _buffer(buffer: Any, api: str) -> _Buffer:
    if isinstance(buffer, str) and buffer in _Buffer._value2member_map_:
        raise _Violation(f"{api}: buffer is an object (nl.{buffer}), not the string {buffer!r}")
    if not isinstance(buffer, _Buffer):
        raise _Violation(f"{api}: buffer must be nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")
    return buffer


def _allocate(
    shape: Any, dtype: Any, buffer: Any, name: str, api: str, fill: Any = None
) -> _NkiTensor:
    machine, st = _state()
    where = _buffer(buffer, api)
    dims = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    tensor = machine.allocate(
        dims,
        dtype,
        where,
        str(name or ""),
        fill=fill,
        api=api,
        psum_tile_bytes=st.limits.psum_tile_bytes,
    )
    if where is _Buffer.SBUF:
        per_partition = math.prod(tensor.shape[1:]) * tensor.itemsize
        if per_partition > st.limits.sbuf_bytes_per_partition:
            raise _Violation(
                f"{api}: SBUF tensor `{tensor.alloc.name}` {list(tensor.shape)} needs "
                f"{per_partition} bytes per partition, more than the "
                f"{st.limits.sbuf_bytes_per_partition} of {st.limits.target}"
            )
    return tensor


def ndarray(
    shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "", address: Any = None
) -> _NkiTensor:
    return _allocate(shape, dtype, buffer, name, "nl.ndarray")


def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> _NkiTensor:
    return _allocate(shape, dtype, buffer, name, "nl.zeros", fill=0)


def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> _NkiTensor:
    return _allocate(shape, dtype, buffer, name, "nl.ones", fill=1)


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = sbuf, name: str = "") -> _NkiTensor:
    return _allocate(shape, dtype, buffer, name, "nl.full", fill=fill_value)


def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> _NkiTensor:
    return zeros(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def empty_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> _NkiTensor:
    return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def shared_constant(constant: Any) -> _NkiTensor:
    return _legacy.shared_constant(constant)


def shared_identity_matrix(n: int, dtype: Any = uint8, dst: Any = None) -> _NkiTensor:
    if dst is not None:
        raise _Unsupported("nl.shared_identity_matrix: dst= is not supported by nkisim")
    return _legacy.shared_identity_matrix(n, dtype)


# --- removed legacy arguments ----------------------------------------------------------------


def _refuse_mask(api: str, kwargs: dict[str, Any]) -> None:
    if "mask" in kwargs:
        raise _Unsupported(
            f"{api}: mask= was removed in NKI 0.2+; bound the slice instead (e.g. "
            "t[start:min(n, start + 128), :])"
        )


def _current_form(function: _Callable[..., Any], api_name: str) -> _Callable[..., Any]:
    """Legacy nkisim's nl function, refusing the legacy-only mask=."""

    def call(*args: Any, **kwargs: Any) -> Any:
        _refuse_mask(f"nl.{api_name}", kwargs)
        _state()
        return function(*args, **kwargs)

    call.__name__ = call.__qualname__ = api_name
    call.__doc__ = f"nl.{api_name} (see the NKI language reference)"
    with _suppress(_Unsupported):  # also usable as op=nl.x where it names an operation
        _ops.register_op(call, _ops.op_name(function, api_name))
    return call


_ELEMENTWISE = sorted((set(_ops.UNARY) | set(_ops.BINARY)) - {"copy"})
for _name in _ELEMENTWISE:
    if hasattr(_legacy, _name):
        globals()[_name] = _current_form(getattr(_legacy, _name), _name)
for _name in (
    "copy",
    "sum",
    "max",
    "min",
    "mean",
    "prod",
    "var",
    "all",
    "where",
    "matmul",
    "transpose",
    "load_transpose2d",
    "expand_dims",
    "device_print",
):
    globals()[_name] = _current_form(getattr(_legacy, _name), _name)
del _name


def _op_only(name: str) -> _Callable[..., Any]:
    def op(*_args: Any, **_kwargs: Any) -> Any:
        raise _Unsupported(
            f"nl.{name} is supported by nkisim only as an instruction's op (op=nl.{name})"
        )

    op.__name__ = name
    _ops.register_op(op, name)
    return op


bypass = _op_only("bypass")
abs_max = _op_only("abs_max")
abs_min = _op_only("abs_min")
gelu_dx = _op_only("gelu_dx")
average = _op_only("average")


def load(src: Any, dtype: Any = None, **kwargs: Any) -> _NkiTensor:
    _refuse_mask("nl.load", kwargs)
    _state()
    return _legacy.load(src, dtype=dtype)


def store(dst: Any, value: Any, **kwargs: Any) -> None:
    _refuse_mask("nl.store", kwargs)
    _state()
    _legacy.store(dst, value=value)


def broadcast_to(x: Any, shape: Any, dtype: Any = None) -> _NkiTensor:
    """The current signature: the shape positional or by keyword, and an optional dtype."""
    _state()
    result: _NkiTensor = _legacy.broadcast_to(x, shape=shape)
    return result if dtype is None else result.astype(dtype)


def no_reorder() -> _ContextManager[None]:
    return _nullcontext()


# --- loops ---------------------------------------------------------------------------------------


def _range_args(start: Any, stop: Any, step: Any) -> tuple[Any, ...]:
    return (0, start, step) if stop is None else (start, stop, step)


def affine_range(start: Any, stop: Any = None, step: int = 1) -> _Iterator[int]:
    """A range (current NKI unrolls every static loop); nkisim can still run it backwards to
    catch iterations that depend on each other."""
    _state()
    return _loops.affine_range(*_range_args(start, stop, step))


def sequential_range(start: Any, stop: Any = None, step: int = 1) -> _Iterator[int]:
    _state()
    return _loops.sequential_range(*_range_args(start, stop, step))


def static_range(start: Any, stop: Any = None, step: int = 1) -> _Iterator[int]:
    _state()
    return _loops.static_range(*_range_args(start, stop, step))


def _bounds(lower: Any, upper: Any, step: Any, api: str) -> range:
    if isinstance(step, _VirtualRegister | bool) or not isinstance(step, int):
        raise _Violation(f"{api}: step must be a compile-time positive integer")
    if step <= 0:
        raise _Violation(f"{api}: step must be positive, got {step}")
    return range(_runtime_int(lower, f"{api} lower"), _runtime_int(upper, f"{api} upper"), step)


def dynamic_range(start: Any, stop: Any = None, step: int = 1) -> _Iterator[_VirtualRegister]:
    """A loop run on the device: its variable is a register (bounds may be registers)."""
    _state()
    lower, upper = (0, start) if stop is None else (start, stop)
    for value in _bounds(lower, upper, step, "nl.dynamic_range"):
        yield _VirtualRegister(value)


def fori_loop(lower: Any, upper: Any, body_fun: Any, step: int = 1) -> None:
    """body_fun(i) for i in range(lower, upper, step); i is a VirtualRegister."""
    _state()
    if not callable(body_fun):
        raise _Violation("nl.fori_loop: body_fun must be a function of the loop register")
    for value in _bounds(lower, upper, step, "nl.fori_loop"):
        body_fun(_VirtualRegister(value))


_WHILE_LOOP_LIMIT = 1 << 20


def while_loop(init: Any, body_fun: Any) -> None:
    """r = init; while r != 0: r = body_fun(r), with r a VirtualRegister."""
    _state()
    if not isinstance(init, _VirtualRegister):
        raise _Violation("nl.while_loop: init is a VirtualRegister (nisa.register_alloc)")
    register = init
    for _ in range(_WHILE_LOOP_LIMIT):
        if register.value == 0:
            return
        result = body_fun(_VirtualRegister(register.value))
        if not isinstance(result, _VirtualRegister):
            raise _Violation(
                "nl.while_loop: body_fun must return the next condition register, got "
                f"{type(result).__name__}"
            )
        register = result
    raise _Violation(f"nl.while_loop: still running after {_WHILE_LOOP_LIMIT} iterations")


# --- SPMD ----------------------------------------------------------------------------------------


def program_id(axis: int = 0) -> int:
    machine, _ = _state()
    if not machine.program_ids and axis == 0:
        return 0  # launched without a grid: one program
    return _legacy.program_id(axis)


def num_programs(axes: Any = 0) -> int:
    machine, _ = _state()
    if not machine.grid:
        return 1
    return _legacy.num_programs(axes)


def program_ndim() -> int:
    machine, _ = _state()
    return len(machine.grid)


# --- names NKI 0.2+ removed ---------------------------------------------------------------------

_REMOVED = {
    "arange": "index with slices (t[i * 128:(i + 1) * 128, :]), nl.ds(start, size) or "
    "t.ap(pattern=[[stride, count], ...])",
    "mgrid": "index with slices, nl.ds(start, size) or t.ap(pattern=...)",
    "par_dim": "the partition dimension is always the first one: nl.ndarray((128, 512), ...)",
}
_NOT_CURRENT = {
    "loop_reduce": "accumulate explicitly, e.g. with nisa.tensor_tensor in the loop",
    "static_cast": "copy with a cast: nisa.tensor_copy(dst=<tile of the new dtype>, src=t)",
    "ones_like": "nl.full(t.shape, 1, t.dtype, buffer=...)",
    "float32r": "use nl.float32",
}


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _REMOVED:
        raise _Unsupported(f"nl.{name} was removed in NKI 0.2+: {_REMOVED[name]}")
    if name in _NOT_CURRENT:
        raise _Unsupported(
            f"nl.{name} is legacy NKI, not part of current NKI: {_NOT_CURRENT[name]}"
        )
    raise _Unsupported(
        f"nl.{name} is not implemented by nkisim (see nkibench.nkisim.current.UNSUPPORTED)"
    )
