"""Baseline Triton embedding lookup: program (t, j) copies columns [j * BLOCK_H, (j + 1) *
BLOCK_H) of row ids[t] of the table into row t of the output."""

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(
    table_ptr,
    ids_ptr,
    out_ptr,
    H,
    stride_tv,
    stride_ot,
    BLOCK_H: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    cols = j * BLOCK_H + tl.arange(0, BLOCK_H)
    col_ok = cols < H
    row = tl.load(ids_ptr + t).to(tl.int64)
    values = tl.load(table_ptr + row * stride_tv + cols, mask=col_ok, other=0.0)
    tl.store(out_ptr + t * stride_ot + cols, values, mask=col_ok)


def run(table, ids):
    V, H = table.shape
    (T,) = ids.shape
    assert table.stride(1) == 1
    out = torch.empty((T, H), dtype=table.dtype, device=table.device)
    block_h = min(1024, triton.next_power_of_2(H))
    grid = (T, triton.cdiv(H, block_h))
    embedding_kernel[grid](
        table, ids, out, H, table.stride(0), out.stride(0), BLOCK_H=block_h, num_warps=4
    )
    return out
