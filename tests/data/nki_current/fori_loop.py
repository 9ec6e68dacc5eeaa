"""Rows doubled one by one in a dynamic loop: the bound comes from a register loaded from
HBM, the row from .ap(scalar_offset=i)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(data, count):
    rows, cols = data.shape
    out = nl.ndarray((rows, cols), dtype=data.dtype, buffer=nl.shared_hbm)
    count_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count_sb, src=count)
    upper = nisa.register_alloc()
    nisa.register_load(upper, count_sb)
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)
    doubled = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=row, src=data.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0))
        nisa.tensor_scalar(dst=doubled, data=row, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(
            dst=out.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0), src=doubled
        )

    nl.fori_loop(0, upper, body)
    return out
