"""What an NKI kernel may not touch of nkisim, read by the static check through the NKI
dialects' records (nkibench.dialects).

nkisim's tensors keep their storage and bookkeeping in attributes that are not NKI: a kernel
that reads them computes with NumPy where the simulator counts no instruction.
"""

from __future__ import annotations

__all__ = ["NKISIM_INTERNALS", "NKISIM_INTERNALS_PROBLEM"]

NKISIM_INTERNALS = frozenset(
    {"data", "alloc", "box", "dims", "producer", "valid", "base", "arrays"}
)
"""nkisim's storage and bookkeeping behind an NKI tensor (not part of NKI), refused on any
object in an NKI kernel."""
NKISIM_INTERNALS_PROBLEM = (
    "is nkisim's own storage behind a tensor, not NKI: move data with nl.load / nl.store (or "
    "nisa.dma_copy) and compute with nl.* / nisa.*"
)
"""Why one is refused (after the attribute's name)."""
