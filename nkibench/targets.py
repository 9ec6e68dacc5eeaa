"""The Trainium generations: each one's name, NeuronCore version, on-chip memory sizes and the
dtypes a matmul may write to PSUM.

The interpreter (nkibench.nkisim) checks kernels against these sizes and the cost model
(nkibench.cost) prices their traces on the same generations; both read them here, so neither
imports the other for them. Sources as in nkibench.cost.tables (ARCH1-3, ISA4, TILE).
"""

from __future__ import annotations

from dataclasses import dataclass

from nkibench.policy.provenance import Sourced

__all__ = ["TRAINIUM", "TrainiumGeneration", "with_neuron_cores"]


@dataclass(frozen=True)
class TrainiumGeneration:
    name: str
    nc_version: int
    """The NeuronCore version (trn1: NC-v2, trn2: NC-v3, trn3: NC-v4)."""
    sbuf_bytes_per_partition: Sourced
    psum_bytes_per_partition: Sourced
    psum_bank_bytes: Sourced
    psum_tile_bytes: Sourced
    """The most PSUM bytes per partition one tile (one matmul's output) may span."""
    matmul_psum_dtypes: tuple[str, ...]
    """What nki.isa nc_matmul may write to PSUM: float32 on NC-v2/v3; NC-v4 adds bfloat16."""


PSUM_PARTITION = Sourced(
    16 * 1024, "ARCH1: 2 MiB PSUM = 128 partitions x 16 KiB; ARCH2: unchanged on NC-v3"
)
PSUM_BANK = Sourced(
    2 * 1024, "ISA4 nc_matmul: a PSUM bank holds 512 fp32 per partition; TILE: 8 banks"
)
PSUM_TILE_ONE_BANK = Sourced(
    2 * 1024, "ISA4 nc_matmul: on NC-v2/v3 the moving free size is at most 512, one fp32 bank"
)

TRAINIUM = {
    generation.name: generation
    for generation in (
        TrainiumGeneration(
            name="trn1",
            nc_version=2,
            sbuf_bytes_per_partition=Sourced(192 * 1024, "ARCH1: 24 MiB = 128 x 192 KiB"),
            psum_bytes_per_partition=PSUM_PARTITION,
            psum_bank_bytes=PSUM_BANK,
            psum_tile_bytes=PSUM_TILE_ONE_BANK,
            matmul_psum_dtypes=("float32",),
        ),
        TrainiumGeneration(
            name="trn2",
            nc_version=3,
            sbuf_bytes_per_partition=Sourced(224 * 1024, "ARCH2: 28 MiB = 128 x 224 KiB"),
            psum_bytes_per_partition=PSUM_PARTITION,
            psum_bank_bytes=PSUM_BANK,
            psum_tile_bytes=PSUM_TILE_ONE_BANK,
            matmul_psum_dtypes=("float32",),
        ),
        TrainiumGeneration(
            name="trn3",
            nc_version=4,
            sbuf_bytes_per_partition=Sourced(
                256 * 1024,
                "ARCH3 and CORE3: 32 MiB = 128 x 256 KiB (CHIP3: 256 MiB per chip of 8)",
            ),
            psum_bytes_per_partition=Sourced(
                16 * 1024, "ARCH3: PSUM stays 2 MiB = 128 partitions x 16 KiB on NC-v4"
            ),
            psum_bank_bytes=Sourced(
                2 * 1024, "ISA4 nc_matmul: 4096 fp32 fill the 8 PSUM banks of NC-v4, 2 KiB each"
            ),
            psum_tile_bytes=Sourced(
                16 * 1024,
                "ISA4 nc_matmul: from NC-v4 the moving free size may reach 4096 fp32 or 8192 "
                "bf16, all 8 banks (the whole 16 KiB PSUM partition)",
            ),
            matmul_psum_dtypes=("float32", "bfloat16"),
        ),
    )
}
"""By name, oldest first."""


def with_neuron_cores(*nc_versions: int) -> tuple[str, ...]:
    """The generations whose NeuronCore is one of these versions, oldest first (a kernel
    language runs on NeuronCore versions, nkibench.dialects)."""
    return tuple(name for name, g in TRAINIUM.items() if g.nc_version in nc_versions)
