"""The `neuronxcc.nki` package as kernels import it (jit, trace, typing), and the shadow
modules that make `import neuronxcc.nki.language as nl` resolve to nkisim.

`install_shadow_modules` is called only inside the sandboxed child that runs a kernel:
nothing is ever installed into site-packages, and the parent process never imports it.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from nkibench.nkisim import isa, language
from nkibench.nkisim.errors import UnsupportedApi
from nkibench.nkisim.machine import _current

__all__ = ["JitKernel", "install_shadow_modules", "jit", "trace"]


class JitKernel:
    """What `@nki.jit` makes of a kernel function; `kernel[g0, g1]` sets an SPMD grid."""

    def __init__(self, fn: Callable[..., Any], grid: tuple[int, ...] = ()) -> None:
        self.fn = fn
        self.grid = grid
        self.__name__ = getattr(fn, "__name__", "kernel")

    def __getitem__(self, grid: Any) -> JitKernel:
        dims = grid if isinstance(grid, tuple) else (grid,)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise UnsupportedApi("an SPMD grid is positive integers, like kernel[2, 4]")
        return JitKernel(self.fn, tuple(dims))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _current.get() is None:
            raise UnsupportedApi("nkisim runs kernels itself (accelopt check); do not call them")
        return self.fn(*args, **kwargs)  # a sub-kernel called from a running kernel


def jit(func: Callable[..., Any] | None = None, mode: str = "auto", **_options: Any) -> Any:
    if func is None:
        return JitKernel
    return JitKernel(func)


def trace(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    if func is None:
        return lambda f: f
    return func


def _hardware_only(name: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise UnsupportedApi(f"nki.{name} needs a Neuron device; nkisim runs kernels itself")

    return refuse


class _Annotation:
    """nki.typing's tensor annotations (`nt.tensor[128, 512]`, `nt.mutable_tensor`)."""

    def __getitem__(self, _shape: Any) -> _Annotation:
        return self


def _typing_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.tensor = _Annotation()  # type: ignore[attr-defined]
    module.mutable_tensor = _Annotation()  # type: ignore[attr-defined]
    return module


def _unsupported_getattr(prefix: str) -> Callable[[str], Any]:
    def missing(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise UnsupportedApi(f"{prefix}.{name} is not implemented by nkisim")

    return missing


def _package(name: str, typing_module: types.ModuleType) -> types.ModuleType:
    module = types.ModuleType(name)
    attributes: dict[str, Any] = {
        "jit": jit,
        "trace": trace,
        "language": language,
        "isa": isa,
        "typing": typing_module,
        "baremetal": _hardware_only("baremetal"),
        "benchmark": _hardware_only("benchmark"),
        "profile": _hardware_only("profile"),
        "simulate_kernel": _hardware_only("simulate_kernel"),
        "__getattr__": _unsupported_getattr(name),
        "__path__": [],
    }
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def install_shadow_modules() -> None:
    """Make the NKI import names resolve to nkisim in this (child) process."""
    legacy_typing = _typing_module("neuronxcc.nki.typing")
    legacy = _package("neuronxcc.nki", legacy_typing)
    root = types.ModuleType("neuronxcc")
    root.nki = legacy  # type: ignore[attr-defined]
    root.__path__ = []
    standalone_typing = _typing_module("nki.typing")
    standalone = _package("nki", standalone_typing)
    sys.modules.update(
        {
            "neuronxcc": root,
            "neuronxcc.nki": legacy,
            "neuronxcc.nki.language": language,
            "neuronxcc.nki.isa": isa,
            "neuronxcc.nki.typing": legacy_typing,
            "nki": standalone,
            "nki.language": language,
            "nki.isa": isa,
            "nki.typing": standalone_typing,
        }
    )
