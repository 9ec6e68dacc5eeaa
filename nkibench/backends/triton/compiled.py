"""What Triton's compiler reported of each kernel it built in this process (child side): its
registers per thread, spilled registers, shared memory and launch shape, for the planner beside
the hardware counters (nkibench.backends.triton.nsight). Installed only in the counters child:
the hook costs a Python call per launch, which no timed run should pay."""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["REPORTED", "compiled_kernels", "record_compiled_kernels"]

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
