"""How current NKI's instructions take their operands: the destination first, then tiles
checked for where they live and how they are shaped, and results written into `dst`.

Each instruction computes a fresh tile (the machine records the instruction) and then assigns
it to `dst`, which retargets that instruction to write `dst` directly: the trace holds one
instruction per call, writing the kernel's tensor, as on the hardware.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

from nkibench.nkisim.errors import ConstraintViolation, UnsupportedApi
from nkibench.nkisim.machine import F32, Machine, Read
from nkibench.nkisim.tensor import Access, Buffer, NkiTensor

__all__ = [
    "Tile",
    "check_buffer",
    "dst_first",
    "emit",
    "per_partition",
    "read_tile",
    "same_layout",
    "tensor",
]

Tile = NkiTensor | Access
Array = np.ndarray[Any, Any]
F = TypeVar("F", bound=Callable[..., Any])

ON_CHIP = frozenset({Buffer.SBUF, Buffer.PSUM})
SBUF_ONLY = frozenset({Buffer.SBUF})
PSUM_ONLY = frozenset({Buffer.PSUM})
DMA_BUFFERS = frozenset({Buffer.SBUF, Buffer.HBM, Buffer.SHARED_HBM})


def dst_first(api: str) -> Callable[[F], F]:
    """Give an instruction current NKI's calling convention and its errors: keyword or
    positional exactly as the documented signature, no `mask=` or `dtype=` (legacy NKI's),
    and a message naming the signature when the call does not fit it."""

    def decorate(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if "mask" in kwargs:
                raise UnsupportedApi(
                    f"{api}: mask= was removed in NKI 0.2+; bound the slice instead (e.g. "
                    "t[start:min(n, start + 128), :])"
                )
            if "dtype" in kwargs and "dtype" not in signature.parameters:
                raise UnsupportedApi(
                    f"{api}: dtype= was removed in NKI 0.2+; the result takes dst's dtype "
                    "(allocate dst with the dtype you want)"
                )
            try:
                return function(*args, **kwargs)
            except TypeError:
                try:  # only a call that does not fit the signature is the kernel's to fix
                    signature.bind(*args, **kwargs)
                except TypeError as e:
                    raise ConstraintViolation(
                        f"{api}: {e}; current NKI writes into a destination passed first and "
                        f"returns nothing: {api}{signature}"
                    ) from None
                raise

        del call.__wrapped__  # no way back to nkisim's code
        return call  # type: ignore[return-value]

    return decorate


def tensor(x: Any, api: str, role: str) -> Tile:
    if not isinstance(x, NkiTensor | Access):
        raise ConstraintViolation(f"{api}: {role} must be a tensor, got {type(x).__name__}")
    return x


def check_buffer(x: Tile, api: str, role: str, allowed: Iterable[Buffer], advice: str = "") -> None:
    allowed = frozenset(allowed)
    buffer = x.alloc.buffer
    if buffer in allowed or (buffer is Buffer.HBM and Buffer.SHARED_HBM in allowed):
        return
    names = " or ".join(sorted({"hbm" if b.value.endswith("hbm") else b.value for b in allowed}))
    raise ConstraintViolation(
        f"{api}: {role} `{x.alloc.name}` is in {buffer.value}; it must be in {names}"
        + (f" ({advice})" if advice else "")
    )


def per_partition(shape: tuple[int, ...]) -> tuple[int, int]:
    """(partitions, elements per partition) of an on-chip shape."""
    if not shape:
        return 1, 1
    return shape[0], math.prod(shape[1:])


def same_layout(api: str, dst: Tile, shape: tuple[int, ...], what: str = "the result") -> None:
    """dst holds as many partitions, and elements per partition, as the result."""
    if dst.alloc.on_chip:
        if per_partition(dst.shape) != per_partition(shape):
            raise ConstraintViolation(
                f"{api}: dst `{dst.alloc.name}` {list(dst.shape)} does not fit {what} "
                f"{list(shape)}: the number of partitions and of elements per partition must "
                "match"
            )
    elif math.prod(dst.shape) != math.prod(shape):
        raise ConstraintViolation(
            f"{api}: dst `{dst.alloc.name}` {list(dst.shape)} does not hold as many elements as "
            f"{what} {list(shape)}"
        )


def read_tile(
    machine: Machine,
    x: Any,
    api: str,
    role: str,
    *,
    allowed: Iterable[Buffer] = ON_CHIP,
    advice: str = "",
) -> Read:
    tile = tensor(x, api, role)
    allowed = frozenset(allowed)
    if not advice and not tile.alloc.on_chip and Buffer.HBM not in allowed:
        advice = "engines read on-chip memory: copy it into SBUF with nisa.dma_copy first"
    check_buffer(tile, api, role, allowed, advice)
    return machine.read(
        tile, f"{api} {role}", on_chip=True, hbm=not tile.alloc.on_chip, tile=tile.alloc.on_chip
    )


def _broadcast_view(dst: Tile) -> bool:
    if not isinstance(dst, NkiTensor):
        return False
    strides = dst.data.strides
    if 0 not in strides:  # the usual case, without a Python loop
        return False
    return any(s == 0 and n > 1 for s, n in zip(strides, dst.shape, strict=True))


def emit(
    machine: Machine,
    api: str,
    dst: Tile,
    values: Array,
    *,
    op: str,
    engine: str,
    inputs: list[Read],
    attrs: dict[str, Any] | None = None,
) -> None:
    """Record the instruction that computed `values` and write them into `dst` (cast to its
    dtype)."""
    if _broadcast_view(dst):
        raise ConstraintViolation(
            f"{api}: dst `{dst.alloc.name}` is a broadcast view; an instruction cannot write "
            "one element several times"
        )
    same_layout(api, dst, tuple(values.shape))
    machine.write_result(
        dst, values, op=op, engine=engine, inputs=inputs, attrs={"api": api, **(attrs or {})}
    )


def as_f32(values: Array) -> Array:
    return values.astype(F32, copy=False)
