"""Errors a kernel can raise under nkisim, each of one error kind, with a message meant for
the person or the LLM who wrote the kernel: what rule, which tensor, what to do instead."""

from __future__ import annotations

from typing import ClassVar

from nkibench.errors import ErrorKind

__all__ = [
    "ConstraintViolation",
    "KernelError",
    "OrderDependence",
    "OutOfBounds",
    "UninitializedRead",
    "UnsupportedApi",
]


class KernelError(Exception):
    """A fault of the kernel (or of nkisim's coverage) found while interpreting it."""

    kind: ClassVar[ErrorKind] = "runtime"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConstraintViolation(KernelError):
    """A documented NKI or hardware rule is broken (the Neuron compiler would refuse it)."""

    kind: ClassVar[ErrorKind] = "constraint"


class OrderDependence(ConstraintViolation):
    """An affine_range loop whose result depends on the order of its iterations."""


class UnsupportedApi(KernelError):
    """Valid NKI that nkisim does not implement; not a bug of the kernel."""

    kind: ClassVar[ErrorKind] = "unsupported"


class OutOfBounds(KernelError):
    """An access outside a tensor without a mask covering it."""


class UninitializedRead(KernelError):
    """A read of memory no instruction has written (it holds garbage on hardware)."""
