"""The `neuronxcc.nki` package as kernels import it (jit, trace, typing), and the shadow
modules that make `import neuronxcc.nki.language as nl` resolve to nkisim.

`install_shadow_modules` is called only inside the sandboxed child that runs a kernel:
nothing is ever installed into site-packages, and the parent process never imports it.

A kernel sees `nl` and `nisa` through stand-ins that hold NKI's names only: the modules
nkibench.nkisim.language and .isa import (numpy as `np`, the simulator's `current()` machine,
its trace) are nkisim's own, and a kernel that reached them could compute with NumPy beside
the simulator, or edit the trace the cost model estimates from.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from nkibench.errors import KernelError
from nkibench.nkisim import isa, language
from nkibench.nkisim.errors import UnsupportedApi
from nkibench.nkisim.machine import _current

__all__ = ["InternalApi", "JitKernel", "install_shadow_modules", "jit", "public_module", "trace"]

SIMULATOR_MODULES = (
    "nkibench.nkisim.machine",
    "nkibench.nkisim.trace",
    "nkibench.nkisim.runtime",
    "nkibench.nkisim.frontend",
)
"""Where the simulator's own state lives: nothing defined there is NKI."""
SIMULATOR_NAMES = frozenset({"NkiTensor", "Access", "Any", "annotations"})
"""Names nkisim's NKI modules import for themselves (its tensor classes, typing helpers)."""


class InternalApi(KernelError):
    """A kernel reached for nkisim's own machinery through an NKI module."""

    kind = "rejected"


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


def _hidden(key: str, value: Any) -> bool:
    return (
        isinstance(value, types.ModuleType)
        or key in SIMULATOR_NAMES
        or getattr(value, "__module__", None) in SIMULATOR_MODULES
    )


def public_module(module: types.ModuleType, name: str, short: str) -> types.ModuleType:
    """A stand-in for `module` as NKI's `name` (written `short.` in kernels): its NKI names;
    the simulator's own (modules, its machine and trace, its tensor classes) refused; a name
    it lacks left to the module's own __getattr__ (nkisim's "not implemented")."""
    proxy = types.ModuleType(name, module.__doc__)
    hidden = set()
    for key, value in vars(module).items():
        if key.startswith("_"):
            continue
        if _hidden(key, value):
            hidden.add(key)
        else:
            setattr(proxy, key, value)

    def missing(attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        if attribute in hidden:
            raise InternalApi(
                f"{short}.{attribute} is nkisim's own, not part of NKI: a kernel uses only NKI's "
                f"names (nkisim's internals would let it work beside the simulator)"
            )
        return getattr(module, attribute)

    proxy.__getattr__ = missing  # type: ignore[method-assign]
    return proxy


def _package(
    name: str, typing_module: types.ModuleType, nl: types.ModuleType, nisa: types.ModuleType
) -> types.ModuleType:
    module = types.ModuleType(name)
    attributes: dict[str, Any] = {
        "jit": jit,
        "trace": trace,
        "language": nl,
        "isa": nisa,
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
    """Make the legacy NKI import names (`neuronxcc.nki.*`) resolve to nkisim in this
    (child) process. The current `nki` package's names are another dialect's
    (nkibench.nkisim.current): a legacy kernel cannot reach them."""
    legacy_typing = _typing_module("neuronxcc.nki.typing")
    legacy_nl = public_module(language, "neuronxcc.nki.language", "nl")
    legacy_nisa = public_module(isa, "neuronxcc.nki.isa", "nisa")
    legacy = _package("neuronxcc.nki", legacy_typing, legacy_nl, legacy_nisa)
    root = types.ModuleType("neuronxcc")
    root.nki = legacy  # type: ignore[attr-defined]
    root.__path__ = []
    sys.modules.update(
        {
            "neuronxcc": root,
            "neuronxcc.nki": legacy,
            "neuronxcc.nki.language": legacy_nl,
            "neuronxcc.nki.isa": legacy_nisa,
            "neuronxcc.nki.typing": legacy_typing,
        }
    )
