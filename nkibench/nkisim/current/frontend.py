"""The `nki` package of current NKI (0.3-0.7) as kernels import it: `nki.jit`, `nki.language`,
`nki.isa`, `nki.typing`, installed as shadow modules inside the sandboxed child that runs a
kernel (never in the parent, never in site-packages).

Only the current names are installed: a kernel that also imports `neuronxcc.nki` (legacy NKI)
fails to import it.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from nkibench.nkisim.current import isa, language
from nkibench.nkisim.current.state import prepare
from nkibench.nkisim.errors import ConstraintViolation, UnsupportedApi
from nkibench.nkisim.frontend import JitKernel, public_module
from nkibench.nkisim.machine import Machine

__all__ = ["SHADOWED", "Kernel", "install_shadow_modules", "jit"]

SHADOWED = ("nki", "nki.language", "nki.isa", "nki.typing")


class Kernel(JitKernel):
    """What `@nki.jit` makes of a kernel: `kernel[2]` launches it on two logical cores (LNC2),
    which nkisim runs one after the other with nl.program_id(0) = 0, 1."""

    def __getitem__(self, grid: Any) -> Kernel:
        launched = super().__getitem__(grid)
        return Kernel(launched.fn, launched.grid)

    @staticmethod
    def prepare_machine(machine: Machine) -> None:
        prepare(machine)


def jit(fn: Callable[..., Any] | None = None, mode: str = "auto", **options: Any) -> Any:
    if "platform_target" in options:
        raise ConstraintViolation(
            "nki.jit: platform_target= was removed; the target comes from "
            "NEURON_PLATFORM_TARGET_OVERRIDE (nkisim: the task's target)"
        )
    if fn is None:
        return Kernel
    return Kernel(fn)


def _host_only(name: str, advice: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise UnsupportedApi(f"nki.{name} {advice}")

    refuse.__name__ = name
    return refuse


class _Annotation:
    """nki.typing's annotations (`nt.tensor[128, 512]`, `nt.mutable_tensor`...): inert."""

    def __getitem__(self, _item: Any) -> _Annotation:
        return self

    def __call__(self, *_args: Any, **_kwargs: Any) -> _Annotation:
        return self


def _typing_module() -> types.ModuleType:
    module = types.ModuleType("nki.typing", "nki.typing's annotations (inert under nkisim)")
    annotation = _Annotation()

    def annotations(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return annotation

    module.__getattr__ = annotations  # type: ignore[method-assign]
    return module


def _missing(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise UnsupportedApi(f"nki.{name} is not implemented by nkisim")


def install_shadow_modules() -> None:
    """Make `import nki`, `nki.language`, `nki.isa` and `nki.typing` resolve to nkisim's
    current-NKI front in this (child) process."""
    typing_module = _typing_module()
    nl = public_module(language, "nki.language", "nl")
    nl.NkiTensor = language.TensorType  # type: ignore[attr-defined]  # public_module hides the name
    del nl.TensorType
    nisa = public_module(isa, "nki.isa", "nisa")
    package = types.ModuleType("nki", "NKI (current) under nkisim")
    attributes: dict[str, Any] = {
        "jit": jit,
        "language": nl,
        "isa": nisa,
        "typing": typing_module,
        "simulate": _host_only(
            "simulate", "runs a kernel on the host; nkisim runs the kernel itself (accelopt check)"
        ),
        "benchmark": _host_only("benchmark", "needs a Neuron device; nkisim runs kernels itself"),
        "baremetal": _host_only("baremetal", "is legacy NKI; nkisim runs kernels itself"),
        "profile": _host_only("profile", "needs a Neuron device; nkisim runs kernels itself"),
        "__getattr__": _missing,
        "__path__": [],
    }
    for key, value in attributes.items():
        setattr(package, key, value)
    sys.modules.update(
        {"nki": package, "nki.language": nl, "nki.isa": nisa, "nki.typing": typing_module}
    )
