"""DMA instructions: dma_copy and dma_transpose (HBM and SBUF only, casts through float32)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nkibench.dtypes import is_float as _is_float
from nkibench.nkisim.current import operands as _o
from nkibench.nkisim.current.instructions.enums import (
    DGE,
    OOB,
    dge_mode,
    engine,
    oob_mode,
)
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.errors import UnsupportedApi as _Unsupported
from nkibench.nkisim.machine import F32 as _F32
from nkibench.nkisim.tensor import Buffer as _Buffer

_Array = np.ndarray[Any, Any]

# --- data movement -------------------------------------------------------------------------------


def _cast(values: _Array, dtype: np.dtype[Any]) -> _Array:
    """DMA casts go through float32 (nisa.dma_copy, "Data types")."""
    if values.dtype == dtype:
        return values
    if _is_float(values.dtype) or _is_float(dtype):
        return values.astype(_F32).astype(dtype)
    return values.astype(dtype)


def _dma_operand(x: Any, api: str, role: str) -> _o.Tile:
    tile = _o.tensor(x, api, role)
    if tile.alloc.buffer is _Buffer.PSUM:
        raise _Violation(
            f"{api}: {role} `{tile.alloc.name}` is in psum; DMA moves data between HBM and SBUF "
            "only (move PSUM to SBUF with nisa.tensor_copy first)"
        )
    return tile


def _same_count(api: str, dst: _o.Tile, src: _o.Tile, shape: tuple[int, ...]) -> None:
    """A DMA walks src and dst in element order: only their element counts must match."""
    if math.prod(dst.shape) != math.prod(shape):
        raise _Violation(
            f"{api}: src `{src.alloc.name}` {list(shape)} holds {math.prod(shape)} elements, "
            f"dst `{dst.alloc.name}` {list(dst.shape)} holds {math.prod(dst.shape)}; they "
            "must match"
        )


@_o.dst_first("nisa.dma_copy")
def dma_copy(
    dst: Any,
    src: Any,
    priority: Any = None,
    oob_mode: Any = oob_mode.error,
    dge_mode: Any = dge_mode.unknown,
    engine: Any = engine.unknown,
    name: Any = None,
) -> None:
    api = "nisa.dma_copy"
    machine, _ = _state()
    target = _dma_operand(dst, api, "dst")
    source = _dma_operand(src, api, "src")
    if oob_mode is not OOB.error:
        raise _Unsupported(f"{api}: oob_mode=skip is not supported by nkisim")
    read = machine.read(source, f"{api} src", on_chip=True, hbm=True, tile=False)
    _same_count(api, target, source, read.values.shape)
    values = _cast(read.values, target.dtype).reshape(target.shape)
    out, picked = machine._target(target, api, None)
    machine.record("dma_copy", "dma", [read], (out, target.alloc.block_of(out.box)))
    machine._store_values(target, values, None, picked)


_DMA_TRANSPOSES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


@_o.dst_first("nisa.dma_transpose")
def _check_hardware_dge(api: str, shape: tuple[int, ...], itemsize: int) -> None:
    """The Hardware-DGE transpose's own limits (the dma_transpose docs, "DMA Direct Transpose
    Constraints")."""
    first = shape[0]
    if len(shape) == 2 and first != 16:
        problem = f"a 2-D src has 16 rows, not {first}"
    elif len(shape) > 2 and (first not in (1, 2, 4, 8, 16) or first * shape[-2] % 16):
        problem = (
            f"a {len(shape)}-D src has 1, 2, 4, 8 or 16 rows, and rows x shape[-2] a multiple "
            f"of 16, not {list(shape)}"
        )
    elif shape[-1] > 128:
        problem = f"src.shape[-1] is at most 128, not {shape[-1]}"
    elif itemsize != 2:
        problem = f"src is a 2-byte dtype, not {itemsize}-byte"
    else:
        return
    raise _Violation(f"{api}: with dge_mode=hwdge (a Hardware DGE transpose) {problem}")


def dma_transpose(
    dst: Any,
    src: Any,
    axes: Any = None,
    priority: Any = None,
    dge_mode: Any = dge_mode.unknown,
    oob_mode: Any = oob_mode.error,
    name: Any = None,
) -> None:
    api = "nisa.dma_transpose"
    machine, _ = _state()
    target = _dma_operand(dst, api, "dst")
    _o.check_buffer(target, api, "dst", _o.SBUF_ONLY)
    source = _dma_operand(src, api, "src")
    read = machine.read(source, f"{api} src", on_chip=True, hbm=True, tile=False)
    values = read.values
    order = _DMA_TRANSPOSES.get(values.ndim)
    if order is None:
        raise _Violation(f"{api}: src must be 2-D, 3-D or 4-D, got {list(values.shape)}")
    if axes is not None and tuple(axes) != order:
        raise _Violation(f"{api}: axes {tuple(axes)} is not supported; use {order}")
    if source.dtype != target.dtype:
        raise _Violation(f"{api}: src is {source.dtype} and dst is {target.dtype}; they match")
    if dge_mode == DGE.hwdge:
        _check_hardware_dge(api, values.shape, source.dtype.itemsize)
    elif dge_mode not in (DGE.unknown, None):
        raise _Violation(f"{api}: a direct transpose takes dge_mode unknown or hwdge")
    moved = np.ascontiguousarray(values.transpose(order))
    _same_count(api, target, source, moved.shape)
    out, picked = machine._target(target, api, None)
    machine.record(
        "dma_copy",
        "dma",
        [read],
        (out, target.alloc.block_of(out.box)),
        {"api": api, "transpose": True},
    )
    machine._store_values(target, moved.reshape(target.shape), None, picked)
