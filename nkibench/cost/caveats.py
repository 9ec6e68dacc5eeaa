"""Where the cost model's estimates are known to be weak, said beside the estimate to whoever
reads it (the planner receives these with the counters, so that it does not optimise against
a blind spot of the model).

Each caveat comes from `accelopt bench fidelity`: the model against AccelOpt's measured trn1
profiles of its own NKIBench kernels (bench/RESULTS.md has the figures).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ENGINE_SPLIT", "REREADS", "SPILLS", "caveats"]

ENGINE_SPLIT = (
    "vector_engine_active_time_percent and scalar_engine_active_time_percent: the model moves "
    "only PSUM copies and affine updates by scalars to ScalarE, where the compiler moves more "
    "(ScalarE busy is off by over 2x on 4 of AccelOpt's 14 measured kernels), so do not read "
    "an idle ScalarE as free capacity or a busy VectorE as certain"
)
SPILLS = (
    "latency and spill_save_bytes: more SBUF is live at once than a partition holds, so the "
    "compiler spills to HBM; the model spills whole tiles in program order and charges the "
    "transfers (its spill bytes were 0.6-2x the measured ones on AccelOpt's five spilling "
    "kernels), but the compiler chooses which tiles to spill, so cutting live SBUF may pay "
    "more or less than estimated"
)
REREADS = (
    "hbm_read_bytes: SBUF is nearly full, and under such pressure the hardware re-reads inputs "
    "the model reads once (measured 9.06 GB against 1.26 GB estimated on a matmul at 96%): "
    "smaller tiles or fewer live buffers may pay more than estimated"
)
PRESSURE = 0.9
"""Live SBUF over this share of a partition: re-reads are likely."""


def caveats(counters: Mapping[str, float]) -> list[str]:
    """The known weaknesses that apply to an estimate with these counters."""
    notes = [ENGINE_SPLIT]
    peak = counters.get("sbuf_peak_bytes_per_partition")
    capacity = counters.get("sbuf_bytes_per_partition")
    if peak is not None and capacity:
        if peak > capacity:
            notes.append(SPILLS)
        elif peak > PRESSURE * capacity:
            notes.append(REREADS)
    return notes
