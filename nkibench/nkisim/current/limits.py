"""The hardware limits current NKI checks, per Trainium generation.

Memory sizes, the largest PSUM tile (one matmul's output) and the dtypes a matmul may write
come from the machine's target (`machine.TARGETS`, built from nkibench.targets);
the rest are the NKI ISA reference's numbers, the same on trn2 and trn3 (nki.isa.nc_matmul,
"Tile size": stationary free <= 128, moving free <= one PSUM tile's worth of dst elements).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nkibench.dtypes import as_dtype
from nkibench.nkisim.machine import Machine
from nkibench.targets import TRAINIUM

__all__ = ["Limits", "limits_of"]


@dataclass(frozen=True)
class Limits:
    target: str
    nc_version: int
    pmax: int
    psum_bank_bytes: int
    psum_banks: int
    psum_tile_bytes: int
    """The largest PSUM tile per partition: one bank up to NeuronCore-v3, all 8 on v4."""
    sbuf_bytes_per_partition: int
    matmul_dst_dtypes: tuple[np.dtype[Any], ...]
    gemm_stationary_fmax: int = 128
    bn_stats_fmax: int = 512
    vector_transpose_max: int = 32

    @property
    def psum_bank_fmax(self) -> int:
        return self.psum_bank_bytes // 4

    @property
    def gemm_moving_fmax(self) -> int:
        """Moving free size of one matmul writing float32 (nl.tile_size.gemm_moving_fmax)."""
        return self.moving_fmax(np.dtype(np.float32))

    def moving_fmax(self, dst_dtype: np.dtype[Any]) -> int:
        """One matmul writes at most one PSUM tile: its moving free size is bounded by how many
        dst elements a tile holds (trn2: 512 float32; trn3: 4096 float32, 8192 bfloat16)."""
        itemsize = dst_dtype.itemsize if dst_dtype in self.matmul_dst_dtypes else 4
        return self.psum_tile_bytes // itemsize


def limits_of(machine: Machine) -> Limits:
    spec = machine.target
    bank = int(spec.psum_bank_bytes)
    return Limits(
        target=spec.name,
        # a target a test made up is taken as trn2's NeuronCore
        nc_version=TRAINIUM[spec.name].nc_version if spec.name in TRAINIUM else 3,
        pmax=128,
        psum_bank_bytes=bank,
        psum_banks=int(spec.psum_bytes_per_partition) // bank,
        psum_tile_bytes=spec.psum_tile_bytes,
        sbuf_bytes_per_partition=spec.sbuf_bytes_per_partition,
        matmul_dst_dtypes=tuple(as_dtype(name) for name in spec.matmul_psum_dtypes),
    )
