"""What one instruction costs on its engine, from the generation's table.

Pure functions of an instruction's operands and attributes; the scheduler decides when each
instruction runs. Times are nanoseconds.

LoadStationary has no cost of its own: the documented fast, background LoadStationary of at
most 128 columns takes at most 32 cycles and overlaps the matmul before it, which takes at
least 64.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from nkibench.cost.tables import Generation
from nkibench.nkisim.trace import Instruction, Operand

__all__ = ["Cost", "CostTable", "either_engine", "is_hbm", "placed_engine"]

ON_CHIP = frozenset({"sbuf", "psum"})
NARROW = frozenset({"bfloat16", "float16", "float8_e4m3", "float8_e5m2", "int8", "uint8"})
"""Dtypes of at most 2 bytes: VectorE's fast mode on trn2 needs every operand in one."""
FOUR_BYTE_MATMUL = frozenset({"float32", "int32", "uint32"})
SMALL_RUN_BYTES = 512
"""Bytes moved in runs shorter than this are reported as small transfers."""


def is_hbm(operand: Operand) -> bool:
    return operand.buffer not in ON_CHIP


def placed_engine(instruction: Instruction) -> str:
    """The engine an instruction runs on: the kernel's choice, or where the kernel left it to
    the compiler (nkisim marks it compiler-placed), the compiler's. The compiler evacuates PSUM
    on ScalarE: AccelOpt's trn1 profiles of matmul, bmm and transpose_matmul, whose only
    non-TensorE work is copying PSUM tiles out, show ScalarE busy 2.39, 1.72 and 0.36 ms and
    VectorE idle."""
    engine = instruction.engine
    if (
        engine == "vector"
        and instruction.op == "tensor_copy"
        and instruction.compiler_placed
        and any(o.buffer == "psum" for o in instruction.inputs)
    ):
        return "scalar"
    return engine


AFFINE = frozenset({"add", "subtract", "multiply", "bypass"})
"""What ScalarE's activation computes besides its function: data * scale + bias."""


def either_engine(instruction: Instruction) -> bool:
    """Whether the compiler may put this instruction on ScalarE as well as on VectorE: one it
    places itself, reading one SBUF tile, that an activation can express (an affine update by
    scalars). The schedule puts it on whichever of the two frees first: AccelOpt's trn1
    profiles show ScalarE busy on every kernel (silu 0.42 ms where its one exponential takes
    0.2), so the compiler spreads such work over both engines. A copy within SBUF stays on
    VectorE: the rope baseline, whose one difference in VectorE work from rope_optimized is
    such a copy, measured 0.3 ms more VectorE time."""
    if instruction.engine != "vector" or not instruction.compiler_placed:
        return False
    tiles = [o for o in instruction.inputs if o.elements > 1]
    if len(tiles) != 1 or tiles[0].buffer == "psum":
        return False
    op = instruction.op
    if op == "tensor_scalar":
        return set(instruction.attrs.get("ops", ())) <= AFFINE
    return op in AFFINE


@dataclass(slots=True)
class Cost:
    engine: str
    busy_ns: float
    """How long the instruction occupies its engine (for DMA: the DMA engines)."""
    duration_ns: float
    """From start until its result is written."""
    latency_ns: float = 0.0
    """Further delay before a dependent instruction can start (static overhead)."""
    queue_ns: float = 0.0
    """DMA: how long the transfer holds its queue (at least the fixed cost per transfer)."""
    small_run_bytes: int = 0
    descriptors: int = 0
    alternative: Cost | None = None
    """The same instruction on another engine, where the compiler may place it there."""


class CostTable:
    """A generation's constants turned into per-instruction costs."""

    def __init__(self, generation: Generation, resident: Collection[int] = ()) -> None:
        g = generation
        self.generation = g
        self._resident = resident
        """Loads served from SBUF (nkibench.cost.compiler): no transfer at all."""
        self._tensor_ns = 1 / g.tensor_ghz.value
        self._mm_init = g.matmul_init_cycles.value
        self._fp32_factor = g.fp32_matmul_factor.value
        self._per_cycle = {
            "vector": 1 / g.vector_ghz.value,
            "scalar": 1 / g.scalar_ghz.value,
            "gpsimd": 1 / g.gpsimd_ghz.value,
        }
        self._static = {
            "vector": g.vector_static_cycles.value,
            "scalar": g.scalar_static_cycles.value,
            "gpsimd": g.gpsimd_static_cycles.value,
        }
        self._min_ii = g.min_ii_cycles.value
        self._reciprocal = g.reciprocal_cycles_per_element.value
        self._vector_rate = g.vector_elements_per_cycle_4byte.value
        self._vector_rate_narrow = g.vector_elements_per_cycle_2byte.value
        self._dma_engines = int(g.dma_engines.value)
        self._partitions_per_engine = int(g.dma_partitions_per_engine.value)
        self._engine_rate = g.dma_bytes_per_ns_per_engine.value
        self._hbm_rate = g.hbm_bytes_per_ns_per_core.value
        self._descriptor = g.dma_descriptor_ns.value
        self._dma_fixed = g.dma_transfer_ns.value
        self._dma_engine_fixed = g.dma_engine_transfer_ns.value
        self._transpose_efficiency = g.dma_transpose_efficiency.value
        self._spill_rate = min(self._hbm_rate, self._dma_engines * self._engine_rate)

    def cost(self, instruction: Instruction) -> Cost:
        engine = placed_engine(instruction)
        if engine == "tensor":
            return Cost(engine, t := self._tensor(instruction), t)
        if engine == "dma":
            if instruction.index in self._resident:
                return Cost("dma", 0.0, 0.0)
            return self._dma(instruction)
        cost = self._elementwise(instruction, engine)
        if either_engine(instruction):
            cost.alternative = self._elementwise(instruction, "scalar")
        return cost

    def spill_ns(self, size: int) -> float:
        """How long a spill of `size` bytes (a save or a reload of a whole tile) holds the DMA
        engines: all of them at full rate, bounded by HBM, plus the same fixed cost per transfer
        as a kernel's own transfers, the compiler's spills being DMA transfers like them."""
        return self._dma_engine_fixed + size / self._spill_rate

    # --- TensorE ---------------------------------------------------------------------------

    def _tensor(self, instruction: Instruction) -> float:
        attrs = instruction.attrs
        factor = self._fp32_factor if attrs.get("dtype") in FOUR_BYTE_MATMUL else 1.0
        if instruction.op == "nc_transpose":
            # ISA nc_transpose on TensorE: max(P, min(64, F)) cycles
            cycles = max(float(attrs["k"]), min(self._mm_init, float(attrs["m"])))
        else:
            cycles = max(min(self._mm_init, float(attrs["m"])), float(attrs["n"]))
        return cycles * factor * self._tensor_ns

    # --- VectorE, ScalarE, GpSimd -----------------------------------------------------------

    def _elementwise(self, instruction: Instruction, engine: str) -> Cost:
        output = instruction.output
        # Per-partition scalars ([P, 1] operands) ride along; tiles stream through the engine.
        tiles = [o for o in instruction.inputs if o.elements > 1 and not is_hbm(o)]
        if tiles:
            n = max(o.elements for o in tiles)
        else:
            n = output.elements if output is not None else 1
        if instruction.op == "reciprocal" and engine == "vector":
            work = self._reciprocal * n
        elif len(tiles) >= 2 and not any(o.buffer == "psum" for o in tiles):
            work = 2.0 * n  # two SBUF tiles share the read port
        else:
            work = float(n)
        rate = 1.0
        if engine == "vector":
            operands = [*instruction.inputs, *([output] if output is not None else [])]
            narrow = all(o.dtype in NARROW for o in operands)
            rate = self._vector_rate_narrow if narrow else self._vector_rate
        per_cycle = self._per_cycle[engine]
        busy = max(self._min_ii, math.ceil(work / rate)) * per_cycle
        return Cost(engine, busy, busy, latency_ns=self._static[engine] * per_cycle)

    # --- DMA -------------------------------------------------------------------------------

    def _dma(self, instruction: Instruction) -> Cost:
        # One pass over the operands (this runs for every transfer of a kernel).
        moved = hbm_bytes = partitions = 0
        run = -1
        output = instruction.output
        for operand in [*instruction.inputs, output] if output else instruction.inputs:
            size = operand.bytes
            moved = max(moved, size)
            run = operand.contiguous_bytes if run < 0 else min(run, operand.contiguous_bytes)
            if operand.buffer in ON_CHIP:
                partitions = max(partitions, operand.partitions)
            else:
                hbm_bytes += size
        if not moved:
            return Cost("dma", 0.0, 0.0, queue_ns=self._dma_fixed)
        # A descriptor moves one contiguous run: bounded by the HBM side's contiguity and by
        # one partition row of the on-chip side.
        run = max(1, min(run, moved))
        descriptors = math.ceil(moved / run)
        work = descriptors * (self._descriptor + run / self._engine_rate)
        if instruction.attrs.get("transpose"):
            work /= self._transpose_efficiency
        # Each engine serves 8 partitions and tiles start at partition 0, so every transfer
        # needs the first engines: one on few partitions holds them longer, the next one waits.
        lanes = math.ceil(partitions / self._partitions_per_engine) if partitions else descriptors
        engines = max(1, min(self._dma_engines, descriptors, lanes))
        duration = max(work / engines, hbm_bytes / self._hbm_rate) + self._dma_engine_fixed
        return Cost(
            "dma",
            busy_ns=duration,
            duration_ns=duration,
            queue_ns=max(self._dma_fixed, duration),
            small_run_bytes=moved if run < SMALL_RUN_BYTES else 0,
            descriptors=descriptors,
        )
