"""TensorE instructions: nc_matmul (with PSUM accumulation flags) and nc_transpose."""

# The NKI API's own signatures: documented positional parameters.
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.current.instructions.alu import (
    flat,
)
from nkibench.nkisim.current.instructions.enums import (
    engine,
    engine_name,
    matmul_perf_mode,
)
from nkibench.nkisim.current.state import MATMUL_WRITTEN as _MATMUL
from nkibench.nkisim.current.state import NEVER_WRITTEN as _NEVER
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.machine import F32 as _F32
from nkibench.nkisim.machine import Machine as _Machine
from nkibench.nkisim.machine import Read as _Read
from nkibench.nkisim.tensor import Buffer as _Buffer

_Array = np.ndarray[Any, Any]

# --- TensorE -------------------------------------------------------------------------------------

_MATMUL_DTYPES = ("float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "float32")
_MATMUL_DTYPE_OBJECTS = frozenset(
    np.dtype(getattr(ml_dtypes, name) if hasattr(ml_dtypes, name) else name)
    for name in _MATMUL_DTYPES
)
"""The same as dtype objects: compared on every operand of every matmul."""


def _matmul_operand(machine: _Machine, x: Any, api: str, role: str) -> _Read:
    tile = _o.tensor(x, api, role)
    if tile.alloc.buffer is not _Buffer.SBUF:
        raise _Violation(
            f"{api}: {role} `{tile.alloc.name}` is in {tile.alloc.buffer.value}; TensorE reads "
            "its operands from SBUF"
            + (
                " (copy the PSUM tile to SBUF with nisa.tensor_copy first)"
                if tile.alloc.buffer is _Buffer.PSUM
                else " (load it with nisa.dma_copy first)"
            )
        )
    read = machine.read(tile, f"{api} {role}")
    if read.values.dtype not in _MATMUL_DTYPE_OBJECTS:
        raise _Violation(
            f"{api}: {role} has dtype {read.values.dtype}; TensorE multiplies fp8, bf16, fp16, "
            "tf32 or fp32 tiles"
        )
    return read


@_o.dst_first("nisa.nc_matmul")
def nc_matmul(
    dst: Any,
    stationary: Any,
    moving: Any,
    is_stationary_onezero: bool = False,
    is_moving_onezero: bool = False,
    is_transpose: bool = False,
    accumulate: Any = None,
    tile_position: Any = (),
    tile_size: Any = (),
    perf_mode: Any = matmul_perf_mode.none,
    name: Any = None,
) -> None:
    """dst = stationary.T @ moving on TensorE, overwriting or accumulating in PSUM."""
    api = "nisa.nc_matmul"
    machine, st = _state()
    limits = st.limits
    target = _o.tensor(dst, api, "dst")
    if target.alloc.buffer is not _Buffer.PSUM:
        raise _Violation(
            f"{api}: dst `{target.alloc.name}` is in {target.alloc.buffer.value}; TensorE "
            "writes PSUM (allocate dst with buffer=nl.psum, then copy it out with "
            "nisa.tensor_copy)"
        )
    left = _matmul_operand(machine, stationary, api, "stationary")
    right = _matmul_operand(machine, moving, api, "moving")
    a, b = left.values, right.values
    double_row = perf_mode is matmul_perf_mode.double_row
    if double_row:
        if limits.nc_version < 3:
            raise _Violation(f"{api}: perf_mode=double_row needs NeuronCore-v3 or newer")
        for role, x in (("stationary", a), ("moving", b)):
            if x.ndim != 3 or x.shape[1] != 2 or not str(x.dtype).startswith("float8"):
                raise _Violation(
                    f"{api}: double_row takes fp8 operands of shape [K, 2, F]; {role} is "
                    f"{list(x.shape)} {x.dtype}"
                )
        a = a.transpose(1, 0, 2).reshape(-1, a.shape[2])
        b = b.transpose(1, 0, 2).reshape(-1, b.shape[2])
        k = a.shape[0] // 2
    else:
        a, b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
        k = a.shape[0]
    if a.shape[0] != b.shape[0]:
        raise _Violation(
            f"{api}: the contraction (partition) sizes differ: stationary has {a.shape[0]} "
            f"partitions, moving has {b.shape[0]}; both operands hold K on the partition axis"
        )
    rows, columns = _tiling(api, tile_position, tile_size, limits.pmax)
    if k > rows:
        raise _Violation(f"{api}: contraction size {k} exceeds the {rows} PE rows in use")
    stationary_max = min(columns, limits.gemm_stationary_fmax)
    if a.shape[1] > stationary_max:
        raise _Violation(
            f"{api}: stationary free size {a.shape[1]} exceeds the limit of {stationary_max} "
            "(nl.tile_size.gemm_stationary_fmax)"
        )
    moving_max = limits.moving_fmax(target.dtype)
    if b.shape[1] > moving_max:
        raise _Violation(
            f"{api}: moving free size {b.shape[1]} exceeds the limit of {moving_max} on "
            f"{limits.target} (nl.tile_size.gemm_moving_fmax): one matmul writes "
            + ("one PSUM bank" if limits.nc_version < 4 else "at most the whole PSUM")
            + "; split the moving tile"
        )
    if (a.dtype == _F32) != (b.dtype == _F32):
        raise _Violation(
            f"{api}: operands are {a.dtype} and {b.dtype}; a float32 operand needs a float32 "
            "partner (cast the other with nisa.tensor_copy into a float32 tile)"
        )
    allowed = limits.matmul_dst_dtypes
    if is_transpose:
        allowed = (*allowed, left.values.dtype)
    if target.dtype not in allowed:
        names = " or ".join(str(d) for d in allowed)
        raise _Violation(
            f"{api}: dst `{target.alloc.name}` is {target.dtype}; on {limits.target} "
            f"(NeuronCore-v{limits.nc_version}) a matmul writes {names} into PSUM"
        )
    product = _o.as_f32(a).T @ _o.as_f32(b)
    _o.same_layout(api, target, tuple(product.shape), f"the product [{a.shape[1]}, {b.shape[1]}]")
    values, accumulated = _accumulate(
        machine, st, target, product.reshape(target.shape), accumulate, api
    )
    _o.emit(
        machine,
        api,
        target,
        values,
        op="nc_matmul",
        engine="tensor",
        inputs=[left, right],
        attrs={
            "transpose": bool(is_transpose),
            "accumulate": accumulated,
            "k": int(k),
            "m": int(a.shape[1]),
            "n": int(b.shape[1]),
            "dtype": str(left.values.dtype),
        },
    )
    st.mark(target, _MATMUL)


def _tiling(api: str, position: Any, size: Any, pmax: int) -> tuple[int, int]:
    """The PE rows and columns a tiled matmul may use (all 128 without tiling)."""
    position, size = tuple(position or ()), tuple(size or ())
    if not position and not size:
        return pmax, pmax
    if len(position) != 2 or len(size) != 2:
        raise _Violation(f"{api}: tile_position and tile_size are both (row, column) pairs")
    for value, what in ((size[0], "row"), (size[1], "column")):
        if value not in (32, 64, 128):
            raise _Violation(f"{api}: tile_size {what} size must be 32, 64 or 128, got {value}")
    for start, step, what in ((position[0], size[0], "row"), (position[1], size[1], "column")):
        if start % step or not 0 <= start < pmax:
            raise _Violation(
                f"{api}: tile_position {what} {start} must be a multiple of the tile size {step} "
                "inside the 128x128 array"
            )
    return int(size[0]), int(size[1])


def _accumulate(
    machine: _Machine, st: Any, target: _o.Tile, product: _Array, accumulate: Any, api: str
) -> tuple[_Array, bool]:
    """The values a matmul leaves in dst: accumulate=False overwrites, True adds onto what an
    earlier matmul wrote, None overwrites where no matmul wrote yet and adds elsewhere."""
    if accumulate is not None and not isinstance(accumulate, bool | np.bool_):
        raise _Violation(f"{api}: accumulate is True, False or None, got {accumulate!r}")
    if machine.config.reverse_affine is not None:
        # The order check runs affine loops backwards; `accumulate=(k > 0)` names the
        # iteration that starts an accumulation, which is order by design: a sum is
        # associative, so in the reordered run the first write overwrites wherever it lands.
        accumulate = None
    if accumulate is False:
        return product, False
    marks = st.marks_view(target)
    if isinstance(marks, int):  # the whole tile carries one mark
        onto: _Array | None = None
        everywhere = somewhere = marks == _MATMUL
        never = product.size if marks == _NEVER else 0
        values_only = 0 if everywhere else product.size
    else:
        onto = (marks == _MATMUL).reshape(product.shape)
        everywhere, somewhere = bool(onto.all()), bool(onto.any())
        never = int(np.count_nonzero(marks == _NEVER))
        values_only = int(np.count_nonzero(~onto))
    if accumulate:
        if never:
            raise _Violation(
                f"{api}: accumulate=True onto {never} element(s) of PSUM `{target.alloc.name}` "
                "that no matmul has written (undefined on hardware): the first matmul into a "
                "PSUM location overwrites (accumulate=False, or leave accumulate=None)"
            )
        if values_only and st.limits.nc_version < 4:
            raise _Violation(
                f"{api}: accumulate=True onto PSUM `{target.alloc.name}` initialised by a "
                f"non-matmul instruction (memset, copy): undefined on NeuronCore-v"
                f"{st.limits.nc_version}; start the accumulation with accumulate=False"
            )
        everywhere = somewhere = True
    if not somewhere:
        return product, False
    current = _o.as_f32(machine.read(target, f"{api} dst", tile=False, check=False).values)
    current = current.reshape(product.shape)
    if everywhere:
        product += current  # the product is this call's own array
        return product, True
    assert onto is not None  # marks per element: some, not all, written by a matmul
    return np.where(onto, current + product, product), True


@_o.dst_first("nisa.nc_transpose")
def nc_transpose(dst: Any, data: Any, engine: Any = engine.unknown, name: Any = None) -> None:
    """Swap partition and (flattened) free axes on TensorE (<=128x128, SBUF to PSUM) or
    VectorE (<=32x32)."""
    api = "nisa.nc_transpose"
    machine, st = _state()
    target = _o.tensor(dst, api, "dst")
    read = _o.read_tile(machine, data, api, "data")
    values = flat(read)
    rows, columns = values.shape
    small = max(rows, columns) <= st.limits.vector_transpose_max
    chosen = engine_name(engine, "vector" if small else "tensor", api, ("tensor", "vector"))
    source = read.source
    if chosen == "tensor":
        if source.alloc.buffer is not _Buffer.SBUF:
            raise _Violation(
                f"{api}: a TensorE transpose reads SBUF; data `{source.alloc.name}` is in "
                f"{source.alloc.buffer.value}"
            )
        _o.check_buffer(target, api, "dst", _o.PSUM_ONLY, "a TensorE transpose writes PSUM")
        if columns > st.limits.gemm_stationary_fmax:
            raise _Violation(
                f"{api}: free size {columns} exceeds the TensorE transpose limit of "
                f"{st.limits.gemm_stationary_fmax}"
            )
    else:
        if max(rows, columns) > st.limits.vector_transpose_max:
            raise _Violation(
                f"{api}: a VectorE transpose handles at most 32x32, got {rows}x{columns}"
            )
        _o.check_buffer(target, api, "dst", _o.ON_CHIP)
    if target.dtype != read.values.dtype:
        raise _Violation(
            f"{api}: dst `{target.alloc.name}` is {target.dtype} but data is "
            f"{read.values.dtype}; a transpose keeps the dtype"
        )
    _o.emit(
        machine,
        api,
        target,
        np.ascontiguousarray(values.T),
        op="nc_transpose",
        engine=chosen,
        inputs=[read],
        attrs={"k": rows, "m": columns, "n": rows, "dtype": str(values.dtype)},
    )
