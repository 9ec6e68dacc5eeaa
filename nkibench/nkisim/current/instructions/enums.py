"""The enums of nki.isa (engines, reduce commands, DMA modes, matmul modes, NeuronCore
versions) and how an instruction picks its engine."""

from __future__ import annotations

from enum import Enum as _Enum
from typing import Any

from nkibench.nkisim.errors import ConstraintViolation as _Violation
from nkibench.nkisim.tensor import Buffer as _Buffer

# --- enums -------------------------------------------------------------------------------------


class engine(_Enum):
    tensor = 1
    vector = 5
    scalar = 2
    gpsimd = 3
    dma = 4
    sync = 6
    unknown = 0


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd(_Enum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(_Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(_Enum):
    error = 0
    skip = 1


class matmul_perf_mode(_Enum):
    none = "none"
    double_row = "double_row"


class nc_version(_Enum):
    """NeuronCore versions, ordered (kernels branch on `get_nc_version() >= nc_version.gen3`)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4

    def _rank(self, other: Any) -> tuple[int, int]:
        if not isinstance(other, nc_version):
            raise TypeError(f"cannot compare nc_version with {type(other).__name__}")
        return int(self.value), int(other.value)

    def __lt__(self, other: Any) -> bool:
        mine, theirs = self._rank(other)
        return mine < theirs

    def __le__(self, other: Any) -> bool:
        mine, theirs = self._rank(other)
        return mine <= theirs

    def __gt__(self, other: Any) -> bool:
        mine, theirs = self._rank(other)
        return mine > theirs

    def __ge__(self, other: Any) -> bool:
        mine, theirs = self._rank(other)
        return mine >= theirs


class dma_engine(_Enum):
    dma = 1
    gpsimd_dma = 2


# The enums by other names: instructions' parameters share their names.
CMD = reduce_cmd
OOB = oob_mode
DGE = dge_mode


ENGINE_NAMES = {
    engine.tensor: "tensor",
    engine.vector: "vector",
    engine.scalar: "scalar",
    engine.gpsimd: "gpsimd",
}


def chosen_by_compiler(value: Any) -> bool:
    """No engine named: the compiler places the instruction."""
    return value is None or value is engine.unknown


def engine_name(value: Any, default: str, api: str, allowed: tuple[str, ...]) -> str:
    if chosen_by_compiler(value):
        return default
    if not isinstance(value, engine):
        raise _Violation(f"{api}: engine must be a nisa.engine member, got {value!r}")
    name = ENGINE_NAMES.get(value)
    if name not in allowed:
        raise _Violation(
            f"{api}: runs on the {' or '.join(allowed)} engine, not engine.{value.name}"
        )
    return name


def no_psum_on_gpsimd(api: str, chosen: str, *tiles: Any) -> None:
    if chosen != "gpsimd":
        return
    for tile in tiles:
        if tile is not None and tile.alloc.buffer is _Buffer.PSUM:
            raise _Violation(
                f"{api}: the GpSimd engine cannot access PSUM (`{tile.alloc.name}`); use the "
                "vector engine or copy the tile to SBUF"
            )
