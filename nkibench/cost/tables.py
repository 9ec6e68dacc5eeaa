"""The constants of the cost model, one table per Trainium generation, each number with its
source, so that reports can cite it (`Generation.constants`).

Sources, all in aws-neuron/aws-neuron-sdk:
- ARCH1: nki/guides/architecture/trainium_inferentia2_arch.rst (NeuronCore-v2, trn1)
- ARCH2: nki/guides/architecture/trainium2_arch.rst (NeuronCore-v3, trn2)
- ARCH3: nki/guides/architecture/trainium3_arch.rst (NeuronCore-v4, trn3)
- CORE3: about-neuron/arch/neuron-hardware/neuron-core-v4.rst
- ISA: the cost notes of the legacy nki.isa docstrings (nki/api/nki/isa/__init__.py, SDK 2.26)
- ISA4: the nc_matmul docstring of the current nki.isa (nki/api/nki/isa/__init__.py, 2.32 docs)
- TILE: nki/api/nki.language.tile_size.rst (psum_bank_fmax, psum_num_banks)
- PERF: the NKI performance guide (nki_perf_guide.rst), optimisation notes by number
- DMA: nki/deep-dives/nki-dma-bandwidth-guide.rst and nki/get-started/about/nki-dma-overview.rst
- CHIP: about-neuron/arch/neuron-hardware/trainium.rst and trainium2.rst
- CHIP3: about-neuron/arch/neuron-hardware/trainium3.rst and trn3-arch.rst
Cycle counts are stated for NeuronCore-v2; trn2 and trn3 reuse them at their own clocks. A
number marked ASSUMPTION is a model parameter no document gives, CALIBRATED one fitted to a
published measurement, and FITTED one fitted to AccelOpt's measured trn1 profiles of the tasks
in FITTED_TASKS (`accelopt bench fidelity` reports those apart from the predictions).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from nkibench.policy.provenance import Sourced
from nkibench.targets import TRAINIUM

__all__ = ["FITTED_TASKS", "GENERATIONS", "Generation"]

FITTED_TASKS: frozenset[str] = frozenset({"silu"})
"""The NKIBench tasks whose measured trn1 profiles (AccelOpt's) some constant marked FITTED was
fitted on: `accelopt bench fidelity` reports them apart from the predictions. At most half of
the 14, and never an optimized sample."""


@dataclass(frozen=True)
class Generation:
    name: str
    tensor_ghz: Sourced
    vector_ghz: Sourced
    scalar_ghz: Sourced
    gpsimd_ghz: Sourced
    matmul_init_cycles: Sourced
    """A matmul takes max(min(this, stationary free), moving free) cycles."""
    fp32_matmul_factor: Sourced
    min_ii_cycles: Sourced
    """Vector/Scalar/GpSimd: the shortest issue interval of one instruction."""
    vector_static_cycles: Sourced
    scalar_static_cycles: Sourced
    gpsimd_static_cycles: Sourced
    """Static overhead that a dependent instruction waits for, beyond the issue interval."""
    reciprocal_cycles_per_element: Sourced
    vector_elements_per_cycle_4byte: Sourced
    vector_elements_per_cycle_2byte: Sourced
    dma_engines: Sourced
    dma_partitions_per_engine: Sourced
    dma_bytes_per_ns_per_engine: Sourced
    dma_descriptor_ns: Sourced
    dma_transfer_ns: Sourced
    """The least time a transfer holds its DMA queue (transfers of one queue run in order)."""
    dma_engine_transfer_ns: Sourced
    """The part of a transfer's fixed cost that holds the DMA engines, shared by all queues."""
    dma_transpose_efficiency: Sourced
    hbm_bytes_per_ns_per_core: Sourced
    sbuf_bytes_per_partition: Sourced
    psum_bytes_per_partition: Sourced
    psum_bank_bytes: Sourced
    psum_tile_bytes: Sourced
    """The memory sizes, the generation's own (nkibench.targets), repeated here so that the
    constants a report cites are the model's whole table."""

    def constants(self) -> dict[str, dict[str, object]]:
        """Every constant with its source (for reports and the profile fingerprint)."""
        return {
            f.name: {"value": value.value, "source": value.source}
            for f in fields(self)
            if isinstance(value := getattr(self, f.name), Sourced)
        }


GIB = 1024**3
FULL_SPEED_RUN_BYTES = 2048
FULL_SPEED_EFFICIENCY = 0.9


def _descriptor_ns(bytes_per_ns: float) -> Sourced:
    """The fixed cost per descriptor that makes a 2 KiB run 90% efficient on one engine."""
    moving = FULL_SPEED_RUN_BYTES / bytes_per_ns
    return Sourced(
        round(moving * (1 / FULL_SPEED_EFFICIENCY - 1), 3),
        f"derived: DMA guide, >= {FULL_SPEED_RUN_BYTES} B per partition approaches peak and "
        "< 256 B is overhead-bound; taken as 90% of one engine's rate at 2 KiB",
    )


# Shared NeuronCore-v2 cycle counts (trn2 runs the same counts at its own clocks).
MATMUL_INIT = Sourced(64, "ISA nc_matmul: max(min(64, N_stationary), N_moving) cycles")
FP32_FACTOR = Sourced(4, "ISA nc_matmul: 4x for fp32; ARCH1: 92 vs 23 TFLOPS")
MIN_II = Sourced(64, "ISA activation/tensor_scalar/tensor_tensor: max(MIN_II ~64, N) cycles")
VECTOR_STATIC = Sourced(100, "ARCH1: static instruction overhead ~100 cycles for dependent work")
SCALAR_STATIC = Sourced(
    200, "PERF Opt #5a: dependent tiny activations issue every 264 cycles = MIN_II + 200"
)
GPSIMD_STATIC = Sourced(150, "ISA iota/affine_select: GPSIMD_START ~150 cycles")
RECIPROCAL = Sourced(
    2.8,
    "FITTED on silu (AccelOpt's trn1 profile, profile_results.csv): VectorE busy 0.985 ms for "
    "its reciprocal and multiply over 128 x 229,376 elements (its add goes to ScalarE), the "
    "multiply costed by this table; the docs' max(MIN_II, 8N) (nki.api.shared, engine "
    "selection) would alone take 1.64 ms there",
)
DMA_ENGINES = Sourced(16, "DMA: 16 DMA engines per NeuronCore")
DMA_PARTITIONS = Sourced(8, "DMA overview: each DMA engine serves 8 of the 128 partitions")
DMA_FIXED_NS = Sourced(
    1300,
    "DMA: ~1.3 us per transfer for descriptor setup, synchronisation and semaphores. Paid in "
    "series on a queue: the NKI matmul tutorial's hoisted and blocked kernels measured 1.31 and "
    "1.35 us per 128 KiB load issued from one statement",
)
DMA_ENGINE_FIXED_NS = Sourced(
    550,
    "CALIBRATED: fitted to the NKI matmul tutorial's tiled kernel (trn1, 51.8 ms for 65,536 "
    "loads from two statements, against 42.6 ms if only the per-queue 1.3 us were paid)",
)
TRN1_DMA_ENGINE = 27 * GIB / 1e9
TRN3_DMA_ENGINE = 33


def _kept(shared: Sourced) -> Sourced:
    """An NC-v2 number that trn3 reuses: no document gives NeuronCore-v4's own."""
    return Sourced(
        shared.value, f"ASSUMPTION: NC-v4 value taken as NC-v2's (none published); {shared.source}"
    )


GENERATIONS = {
    "trn1": Generation(
        name="trn1",
        tensor_ghz=Sourced(2.8, "ARCH1: TensorE 2.8 GHz"),
        vector_ghz=Sourced(1.12, "ARCH1: VectorE 1.12 GHz"),
        scalar_ghz=Sourced(1.4, "ARCH1: ScalarE 1.4 GHz"),
        gpsimd_ghz=Sourced(1.4, "ARCH1: GpSimd 1.4 GHz"),
        matmul_init_cycles=MATMUL_INIT,
        fp32_matmul_factor=FP32_FACTOR,
        min_ii_cycles=MIN_II,
        vector_static_cycles=VECTOR_STATIC,
        scalar_static_cycles=SCALAR_STATIC,
        gpsimd_static_cycles=GPSIMD_STATIC,
        reciprocal_cycles_per_element=RECIPROCAL,
        vector_elements_per_cycle_4byte=Sourced(1, "ARCH1: 128 lanes, one element per cycle"),
        vector_elements_per_cycle_2byte=Sourced(1, "ARCH1: no 2-byte speed-up on NC-v2"),
        dma_engines=DMA_ENGINES,
        dma_partitions_per_engine=DMA_PARTITIONS,
        dma_bytes_per_ns_per_engine=Sourced(
            TRN1_DMA_ENGINE,
            "ARCH1: 27 GiB/s per DMA engine. The newer DMA guide's 17 B/ns would cap a core "
            "at 272 GB/s, below the ~304 GB/s AccelOpt's best SiLU kernel reached on trn1",
        ),
        dma_descriptor_ns=_descriptor_ns(TRN1_DMA_ENGINE),
        dma_transfer_ns=DMA_FIXED_NS,
        dma_engine_transfer_ns=DMA_ENGINE_FIXED_NS,
        dma_transpose_efficiency=Sourced(
            0.5,
            "ASSUMPTION: PERF Opt #10 says load_transpose2d on the DMA has much lower "
            "bandwidth, without a number",
        ),
        hbm_bytes_per_ns_per_core=Sourced(410, "CHIP: 820 GB/s per trn1 chip of 2 cores"),
        sbuf_bytes_per_partition=TRAINIUM["trn1"].sbuf_bytes_per_partition,
        psum_bytes_per_partition=TRAINIUM["trn1"].psum_bytes_per_partition,
        psum_bank_bytes=TRAINIUM["trn1"].psum_bank_bytes,
        psum_tile_bytes=TRAINIUM["trn1"].psum_tile_bytes,
    ),
    "trn2": Generation(
        name="trn2",
        tensor_ghz=Sourced(2.4, "ARCH2: TensorE 2.4 GHz"),
        vector_ghz=Sourced(0.96, "ARCH2: VectorE 0.96 GHz"),
        scalar_ghz=Sourced(1.2, "ARCH2: ScalarE 1.2 GHz"),
        gpsimd_ghz=Sourced(1.2, "ARCH2: GpSimd 1.2 GHz"),
        matmul_init_cycles=MATMUL_INIT,
        fp32_matmul_factor=Sourced(4, "ARCH2: 20 fp32 vs 79 bf16 dense TFLOPS per TensorE"),
        min_ii_cycles=MIN_II,
        vector_static_cycles=VECTOR_STATIC,
        scalar_static_cycles=SCALAR_STATIC,
        gpsimd_static_cycles=GPSIMD_STATIC,
        reciprocal_cycles_per_element=RECIPROCAL,
        vector_elements_per_cycle_4byte=Sourced(2, "ARCH2: 256 elements/cycle over 128 lanes"),
        vector_elements_per_cycle_2byte=Sourced(4, "ARCH2: 512 elements/cycle for bf16/fp16"),
        dma_engines=DMA_ENGINES,
        dma_partitions_per_engine=DMA_PARTITIONS,
        dma_bytes_per_ns_per_engine=Sourced(23, "DMA: 23 B/ns per engine on trn2"),
        dma_descriptor_ns=_descriptor_ns(23),
        dma_transfer_ns=DMA_FIXED_NS,
        dma_engine_transfer_ns=DMA_ENGINE_FIXED_NS,
        dma_transpose_efficiency=Sourced(
            0.9, "ARCH2: HBM-to-SBUF DMA transpose up to 90% of copy throughput (SBUF-to-SBUF 50%)"
        ),
        hbm_bytes_per_ns_per_core=Sourced(
            362, "CHIP: 2.9 TB/s per trn2 chip of 8 cores (362.5, rounded down; ARCH2 says ~3)"
        ),
        sbuf_bytes_per_partition=TRAINIUM["trn2"].sbuf_bytes_per_partition,
        psum_bytes_per_partition=TRAINIUM["trn2"].psum_bytes_per_partition,
        psum_bank_bytes=TRAINIUM["trn2"].psum_bank_bytes,
        psum_tile_bytes=TRAINIUM["trn2"].psum_tile_bytes,
    ),
    "trn3": Generation(
        name="trn3",
        tensor_ghz=Sourced(2.4, "ARCH3: TensorE 2.4 GHz (as on NC-v3)"),
        vector_ghz=Sourced(1.2, "ARCH3: VectorE 1.2 GHz (0.96 on NC-v3)"),
        scalar_ghz=Sourced(1.2, "ARCH3: ScalarE 1.2 GHz"),
        gpsimd_ghz=Sourced(1.2, "ARCH3: GpSimd 1.2 GHz"),
        matmul_init_cycles=_kept(MATMUL_INIT),
        fp32_matmul_factor=Sourced(4, "ARCH3 and CORE3: 20 fp32 vs 79 bf16/fp16/tf32 TFLOPS"),
        min_ii_cycles=_kept(MIN_II),
        vector_static_cycles=_kept(VECTOR_STATIC),
        scalar_static_cycles=_kept(SCALAR_STATIC),
        gpsimd_static_cycles=_kept(GPSIMD_STATIC),
        reciprocal_cycles_per_element=_kept(RECIPROCAL),
        vector_elements_per_cycle_4byte=Sourced(
            2, "ARCH3: VectorE moves 256 elements/cycle of 4-byte types over 128 lanes"
        ),
        vector_elements_per_cycle_2byte=Sourced(
            4, "ARCH3: VectorE moves 512 bf16/fp16/fp8 elements/cycle over 128 lanes"
        ),
        dma_engines=Sourced(16, "DMA overview: 16 DMA engines per NeuronCore, v2 to v4"),
        dma_partitions_per_engine=DMA_PARTITIONS,
        dma_bytes_per_ns_per_engine=Sourced(
            TRN3_DMA_ENGINE,
            "DMA: 33 B/ns per engine on trn3, 528 GB/s per core (the overview's theoretical "
            "figure is 38.4 GB/s per NC-v4 engine; 33 follows trn2's use of the table)",
        ),
        dma_descriptor_ns=_descriptor_ns(TRN3_DMA_ENGINE),
        dma_transfer_ns=Sourced(
            DMA_FIXED_NS.value,
            "ASSUMPTION: the DMA guide's ~1.3 us per transfer names no generation; kept on "
            "NC-v4 (its DMA queues are now QoS-scheduled, DMA overview)",
        ),
        dma_engine_transfer_ns=_kept(DMA_ENGINE_FIXED_NS),
        dma_transpose_efficiency=Sourced(
            0.9,
            "ASSUMPTION: ARCH3 gives no DMA-transpose rate; NC-v3's ~90% of copy (ARCH2) kept",
        ),
        hbm_bytes_per_ns_per_core=Sourced(
            612.5,
            "CHIP3: 4.9 TB/s per trn3 chip of 8 cores (trn3-arch: 313.6 TB/s over 64 chips "
            "agrees; ARCH3's 4.7 TB/s would give 587.5)",
        ),
        sbuf_bytes_per_partition=TRAINIUM["trn3"].sbuf_bytes_per_partition,
        psum_bytes_per_partition=TRAINIUM["trn3"].psum_bytes_per_partition,
        psum_bank_bytes=TRAINIUM["trn3"].psum_bank_bytes,
        psum_tile_bytes=TRAINIUM["trn3"].psum_tile_bytes,
    ),
}
