"""What Triton's compiler reported of each kernel it built in this process (child side): its
registers per thread, spilled registers, shared memory and launch shape, for the planner beside
the hardware counters (nkibench.backends.triton.nsight). Installed only in the counters child:
the hook costs a Python call per launch, which no timed run should pay. And where Triton keeps
what it compiles when a session shares it between a kernel's child and its counters' child."""

from __future__ import annotations

import os
import weakref
from typing import Any

__all__ = [
    "COMPILE_CACHE_FIELD",
    "REPORTED",
    "compiled_kernels",
    "record_compiled_kernels",
    "share_compile_cache",
]

COMPILE_CACHE_FIELD = "compile_cache"
"""A kernel or counters request's field: the session's compile cache (share_compile_cache)."""

_built: weakref.WeakSet[Any] = weakref.WeakSet()
FIELDS = {"n_regs": "registers_per_thread", "n_spills": "spilled_registers"}
METADATA = {"shared": "shared_bytes", "num_warps": "num_warps", "num_stages": "num_stages"}
REPORTED = (*FIELDS.values(), *METADATA.values())
"""What compiled_kernels() reports of each kernel, besides its name (the parent reads these
names, nkibench.backends.triton.nsight.merge_compiled)."""


def record_compiled_kernels() -> None:
    """Keep every kernel Triton loads from now on."""
    from triton.compiler.compiler import CompiledKernel  # noqa: PLC0415 (a GPU's child only)

    init = CompiledKernel._init_handles

    def initialised(self: Any) -> Any:
        result = init(self)
        _built.add(self)
        return result

    CompiledKernel._init_handles = initialised


def compiled_kernels() -> list[dict[str, Any]]:
    """Each kernel loaded since record_compiled_kernels(), by name, as its compile reported it."""
    found = []
    for kernel in list(_built):
        entry: dict[str, Any] = {"kernel": str(getattr(kernel, "name", "?"))}
        for attribute, name in FIELDS.items():
            value = getattr(kernel, attribute, None)
            if isinstance(value, int):
                entry[name] = value
        metadata = getattr(kernel, "metadata", None)
        for attribute, name in METADATA.items():
            value = getattr(metadata, attribute, None)
            if isinstance(value, int):
                entry[name] = value
        found.append(entry)
    return sorted(found, key=lambda e: e["kernel"])


def share_compile_cache(request: dict[str, Any]) -> None:
    """Where the session shares a compile cache (the task's own kernel, which its counters'
    child runs again: TritonBackend.begin), Triton keeps what it compiles there rather than
    under the child's own home: the kernel's child writes it, and the counters' child of the
    same kernel in the same session alone reads it. Called before anything compiles."""
    folder = request.get(COMPILE_CACHE_FIELD)
    if isinstance(folder, str) and folder:
        os.environ["TRITON_CACHE_DIR"] = folder  # Triton reads it at each compile
