"""Engine registers (`nisa.register_alloc` and friends) and the values a kernel may use where
current NKI accepts a runtime scalar: a VirtualRegister, or a one-element SBUF tensor.

nkisim runs kernels eagerly, so a register simply holds an int. Like NKI's tracer, it refuses
to turn into a Python int (`range(reg)`, `if reg:`, `t[reg]`): on the device its value is not
known while the kernel is built; it is read by dynamic loops and `.ap(scalar_offset=...)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nkibench.nkisim.errors import ConstraintViolation
from nkibench.nkisim.machine import current
from nkibench.nkisim.tensor import Access, NkiTensor

__all__ = ["VirtualRegister", "runtime_int"]


class VirtualRegister:
    """`nisa.register_alloc()`: a 32-bit engine register."""

    __slots__ = ("_value",)

    def __init__(self, value: int | None = None) -> None:
        self._value = value

    def _refuse(self, what: str) -> Any:
        raise ConstraintViolation(
            f"a VirtualRegister cannot be used as {what}: its value exists only on the "
            "device; use it as a dynamic loop bound (nl.fori_loop, nl.dynamic_range), as "
            ".ap(scalar_offset=reg), or store it with nisa.register_store"
        )

    def __index__(self) -> int:
        return int(self._refuse("a Python integer (indexing, range(), int())"))

    def __int__(self) -> int:
        return int(self._refuse("a Python integer (int())"))

    def __bool__(self) -> bool:
        return bool(self._refuse("a Python condition (if/while)"))

    def _arithmetic(self, _other: Any) -> Any:
        return self._refuse("a number in Python arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arithmetic
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = _arithmetic

    def __repr__(self) -> str:
        return "<VirtualRegister>"

    @property
    def value(self) -> int:
        if self._value is None:
            raise ConstraintViolation(
                "a VirtualRegister is read before any value was put into it (register_alloc() "
                "without a value, then no register_move/register_load)"
            )
        return self._value

    def set(self, value: int) -> None:
        self._value = int(value) & 0xFFFFFFFF
        if self._value >= 1 << 31:  # registers are 32-bit; loop bounds are signed
            self._value -= 1 << 32


def runtime_int(value: Any, what: str) -> int:
    """An int from a compile-time int, a VirtualRegister, or a one-element on-chip tensor."""
    if isinstance(value, VirtualRegister):
        return value.value
    if isinstance(value, bool):
        raise ConstraintViolation(f"{what}: expected an integer, got a bool")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, NkiTensor | Access):
        read = current().read(value, what, on_chip=True, hbm=True, tile=False)
        if read.values.size != 1:
            raise ConstraintViolation(
                f"{what}: a runtime scalar is a tensor of one element, `{value.alloc.name}` "
                f"has shape {list(value.shape)}"
            )
        return int(read.values.reshape(-1)[0])
    raise ConstraintViolation(
        f"{what}: expected an integer, a VirtualRegister or a one-element tensor, got "
        f"{type(value).__name__}"
    )
