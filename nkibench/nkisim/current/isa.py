"""`nki.isa` (nisa) of current NKI under nkisim: every instruction writes an explicit `dst`
passed first, with the operand rules of the NKI ISA reference (nki/api/nki/isa), per
Trainium generation (trn2 = NeuronCore-v3, trn3 = NeuronCore-v4).

This module is the namespace kernels see (nkibench.nkisim.current.frontend publishes its
public names); the instructions live in nkibench.nkisim.current.instructions, by engine.
"""

from __future__ import annotations

from typing import Any

from nkibench.nkisim.current.instructions.dma import dma_copy, dma_transpose
from nkibench.nkisim.current.instructions.enums import (
    dge_mode,
    dma_engine,
    engine,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)
from nkibench.nkisim.current.instructions.reductions import (
    activation,
    activation_reduce,
    bn_aggr,
    bn_stats,
    exponential,
    max8,
    range_select,
    select_reduce,
    tensor_partition_reduce,
    tensor_reduce,
    tensor_scalar_cumulative,
    tensor_scalar_reduce,
)
from nkibench.nkisim.current.instructions.registers import (
    register_alloc,
    register_load,
    register_move,
    register_store,
)
from nkibench.nkisim.current.instructions.tensor_engine import nc_matmul, nc_transpose
from nkibench.nkisim.current.instructions.vector import (
    affine_select,
    iota,
    memset,
    nc_n_gather,
    reciprocal,
    scalar_tensor_tensor,
    tensor_copy,
    tensor_copy_predicated,
    tensor_scalar,
    tensor_tensor,
    tensor_tensor_scan,
)
from nkibench.nkisim.current.registers import VirtualRegister
from nkibench.nkisim.current.state import state as _state
from nkibench.nkisim.errors import UnsupportedApi as _Unsupported

__all__ = [
    "VirtualRegister",
    "activation",
    "activation_reduce",
    "affine_select",
    "bn_aggr",
    "bn_stats",
    "dge_mode",
    "dma_copy",
    "dma_engine",
    "dma_transpose",
    "engine",
    "exponential",
    "get_nc_sub_version",
    "get_nc_version",
    "gpsimd_engine",
    "iota",
    "matmul_perf_mode",
    "max8",
    "memset",
    "nc_matmul",
    "nc_n_gather",
    "nc_transpose",
    "nc_version",
    "oob_mode",
    "range_select",
    "reciprocal",
    "reduce_cmd",
    "register_alloc",
    "register_load",
    "register_move",
    "register_store",
    "scalar_engine",
    "scalar_tensor_tensor",
    "select_reduce",
    "tensor_copy",
    "tensor_copy_predicated",
    "tensor_engine",
    "tensor_partition_reduce",
    "tensor_reduce",
    "tensor_scalar",
    "tensor_scalar_cumulative",
    "tensor_scalar_reduce",
    "tensor_tensor",
    "tensor_tensor_scan",
    "unknown_engine",
    "vector_engine",
]


def get_nc_version() -> nc_version:
    """The NeuronCore version of the target the kernel runs on (trn2: gen3, trn3: gen4)."""
    return nc_version(_state()[1].limits.nc_version)


def get_nc_sub_version() -> int:
    return 0


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise _Unsupported(
        f"nisa.{name} is not implemented by nkisim (see nkibench.nkisim.current.UNSUPPORTED)"
    )
