"""Counters named like neuron-profile's summary, computed from the trace and the schedule.

Byte counters follow the data: a DMA reads its source buffer and writes its destination; a
compute instruction reads its inputs and writes its output. Flops are TensorE's: a matmul of
a KxM stationary and a KxN moving tile is 2·K·M·N; a TensorE transpose is a matmul against
an identity and is also reported apart as `transpose_flops` (hardware flops count it, model
flops would not).

As in neuron-profile's summary, every `*_percent` counter is a fraction in [0, 1] despite its
name (AccelOpt's trn1 profiles show `hfu_estimated_percent` 0.36 for a kernel at 36%), so that
estimated and measured counters compare directly. fp32 matmuls count 2·K·M·N like any other;
neuron-profile appears to count them twice (AccelOpt's fp32 matmul profile has exactly 2x the
algorithmic flops), which this model does not copy because no document states it.
"""

from __future__ import annotations

from collections.abc import Collection

from nkibench.cost.buffers import BufferPlan
from nkibench.cost.costs import is_hbm
from nkibench.cost.schedule import Schedule
from nkibench.cost.tables import Generation
from nkibench.nkisim.trace import ENGINES, Instruction, Operand

__all__ = ["counters"]

PE_ROWS = PE_COLUMNS = 128


def _buffer_key(operand: Operand) -> str:
    return "hbm" if is_hbm(operand) else operand.buffer


def pe_peak_flops(generation: Generation) -> float:
    """The 128x128 array at one multiply-add per cell per cycle (bf16 rate)."""
    return 2.0 * PE_ROWS * PE_COLUMNS * generation.tensor_ghz.value * 1e9


def counters(
    instructions: list[Instruction],
    plan: Schedule,
    generation: Generation,
    resident: Collection[int] = (),
    buffers: BufferPlan | None = None,
) -> dict[str, float]:
    """`resident`: loads served from SBUF (nkibench.cost.compiler), which move no bytes;
    `buffers`: the SBUF buffers per tile and the spills (nkibench.cost.buffers)."""
    moved = {f"{b}_{d}_bytes": 0.0 for b in ("hbm", "sbuf", "psum") for d in ("read", "write")}
    flops = transpose = 0.0
    dma_bytes = small = descriptors = 0.0
    for instruction, cost in zip(instructions, plan.costs, strict=True):
        if instruction.index in resident:
            continue
        for operand in instruction.inputs:
            moved[f"{_buffer_key(operand)}_read_bytes"] += operand.bytes
        if instruction.output is not None:
            moved[f"{_buffer_key(instruction.output)}_write_bytes"] += instruction.output.bytes
        if instruction.engine == "tensor":
            a = instruction.attrs
            work = 2.0 * a["k"] * a["m"] * a["n"]
            flops += work
            if instruction.op == "nc_transpose" or a.get("transpose"):
                transpose += work
        elif instruction.engine == "dma":
            dma_bytes += max(
                [o.bytes for o in instruction.inputs]
                + ([instruction.output.bytes] if instruction.output else [0])
            )
            small += cost.small_run_bytes
            descriptors += cost.descriptors
    makespan = plan.makespan_ns
    seconds = makespan * 1e-9
    transfers = plan.instructions["dma"] - len(resident)
    hbm = moved["hbm_read_bytes"] + moved["hbm_write_bytes"]
    peak = pe_peak_flops(generation)
    bandwidth = generation.hbm_bytes_per_ns_per_core.value * 1e9
    result: dict[str, float] = {
        "total_time": seconds,
        **moved,
        "hardware_flops": flops,
        "transpose_flops": transpose,
        "mm_arithmetic_intensity": (flops - transpose) / hbm if hbm else 0.0,
        "peak_flops_bandwidth_ratio": peak / bandwidth,
        "hfu_estimated_percent": flops / (seconds * peak) if seconds else 0.0,
        "dma_transfer_count": float(transfers),
        "dma_queue_count": float(plan.dma_queues),
        "dma_transfer_total_bytes": dma_bytes,
        "dma_transfer_average_bytes": dma_bytes / transfers if transfers else 0.0,
        # not in neuron-profile: descriptors (contiguous runs) and the share of bytes moved in
        # runs under 512 B, the feedback the DMA guide's efficiency rules call for
        "dma_descriptor_count": descriptors,
        "dma_small_transfer_percent": small / dma_bytes if dma_bytes else 0.0,
        "instructions": float(len(instructions)),
    }
    if buffers is not None:
        # neuron-profile's names for the spill traffic, which it also counts as HBM traffic;
        # the buffer depth is this model's own
        result["spill_save_bytes"] = float(buffers.saved_bytes)
        result["spill_reload_bytes"] = float(buffers.reloaded_bytes)
        result["hbm_write_bytes"] += buffers.saved_bytes
        result["hbm_read_bytes"] += buffers.reloaded_bytes
        result["sbuf_buffers_per_tile"] = float(buffers.depth)
    for engine in ENGINES:
        name = (
            "dma_active_time_percent" if engine == "dma" else f"{engine}_engine_active_time_percent"
        )
        result[name] = plan.busy_ns[engine] / makespan if makespan else 0.0
    return result
