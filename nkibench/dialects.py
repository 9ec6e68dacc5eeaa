"""Kernel languages: one record per dialect says everything that differs between them.

A task's dialect is the language its kernel.py is written in. Everything that depends on it
reads this record: the task loader (the kernel's entry-point names), the static check and
the kernel loader (which modules a kernel may import, and which only as `module.<name>`), the
comparison (whether the reference's output transform applies), nkisim (which shadow modules
stand in for the real package), and the agents (which prompt folder they read).
"""

from __future__ import annotations

from dataclasses import dataclass

from nkibench.errors import TaskError

__all__ = ["DIALECTS", "Dialect", "get_dialect"]

COMMON_MODULES = ("math", "typing", "functools", "itertools")


@dataclass(frozen=True)
class Dialect:
    name: str
    language: str
    """What people call it."""
    entry_points: tuple[str, ...]
    """Kernel function names kernel.py may define, the preferred one first."""
    allowed_modules: tuple[str, ...]
    """What a kernel may import (the static check and the kernel loader refuse the rest)."""
    guarded_modules: tuple[str, ...]
    """Modules a kernel may only use as `module.<name>`, never pass around as values (a module
    held in a variable would hide its attributes from the static check)."""
    output_transform: bool
    """The reference may define AccelOpt's transform_nki_outputs, applied before comparing."""
    package_roots: tuple[str, ...]
    """Packages whose every submodule a kernel may reach through attributes (`np.random`,
    `tl.extra.cuda`); any other module it reaches (`typing.sys`) is refused."""
    shadow_front: str | None
    """"module:function" that installs nkisim's stand-ins for the dialect's modules (None:
    nkisim does not run this dialect)."""
    prompt_folder: str
    """The agents' prompt folder (agents/prompts/<folder>)."""
    default_backend: str
    """The backend that runs it on any host (an interpreter: nkisim, or Triton's)."""


NKI_MODULES = (
    "numpy",
    "neuronxcc",
    "neuronxcc.nki",
    "neuronxcc.nki.language",
    "neuronxcc.nki.isa",
    "neuronxcc.nki.typing",
    "nki",
    "nki.language",
    "nki.isa",
    "nki.typing",
)
NKI = Dialect(
    name="nki",
    language="NKI (neuronxcc.nki)",
    entry_points=("kernel", "optimized_kernel"),
    allowed_modules=(*COMMON_MODULES, *NKI_MODULES),
    guarded_modules=(*COMMON_MODULES, *NKI_MODULES),
    package_roots=("numpy", "neuronxcc", "nki"),
    output_transform=True,
    shadow_front="nkibench.nkisim.frontend:install_shadow_modules",
    prompt_folder="nki",
    default_backend="nkisim",
)
TRITON_MODULES = (
    "torch",
    "triton",
    "triton.language",
    "triton.language.extra",
    "triton.language.extra.libdevice",
    "triton.language.math",
)
TRITON = Dialect(
    name="triton",
    language="Triton (NVIDIA GPUs)",
    entry_points=("run",),
    allowed_modules=(*COMMON_MODULES, *TRITON_MODULES),
    guarded_modules=(*COMMON_MODULES, *TRITON_MODULES),
    package_roots=("torch", "triton"),
    output_transform=False,
    shadow_front=None,
    prompt_folder="triton",
    default_backend="triton",
)
DIALECTS: dict[str, Dialect] = {d.name: d for d in (NKI, TRITON)}


def get_dialect(name: str) -> Dialect:
    """The record of a dialect by name; an unknown name is a TaskError that lists them."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise TaskError(
            f"no kernel dialect named {name!r}; the dialects are {', '.join(DIALECTS)}"
        ) from None
