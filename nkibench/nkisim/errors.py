"""Errors a kernel can raise under nkisim (KernelError and ConstraintViolation, shared with
the other backends, live in nkibench.errors)."""

from __future__ import annotations

from typing import ClassVar

from nkibench.errors import ConstraintViolation, ErrorKind, KernelError

__all__ = [
    "ConstraintViolation",
    "KernelError",
    "OrderDependence",
    "OutOfBounds",
    "UninitializedRead",
    "UnsupportedApi",
]


class OrderDependence(ConstraintViolation):
    """An affine_range loop whose result depends on the order of its iterations."""


class UnsupportedApi(KernelError):
    """Valid NKI that nkisim does not implement; not a bug of the kernel."""

    kind: ClassVar[ErrorKind] = "unsupported"


class OutOfBounds(KernelError):
    """An access outside a tensor without a mask covering it."""


class UninitializedRead(KernelError):
    """A read of memory no instruction has written (it holds garbage on hardware)."""
