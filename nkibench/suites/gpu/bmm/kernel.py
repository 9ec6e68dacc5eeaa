"""Baseline Triton batched matmul: out[b] = lhs[b] @ rhs[b], bfloat16, float32 accumulation.

Grid: axis 0 walks the output tiles of one batch (grouped for L2 reuse), axis 1 the batch.
Each program computes one BLOCK_M x BLOCK_N tile, walking K in BLOCK_K steps.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def bmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_row = (pid // per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - group_row, GROUP_M)
    in_group = pid % per_group
    tile_m = group_row + in_group % rows_here
    tile_n = in_group // rows_here

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    a_ptrs = a_ptr + batch * stride_ab + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(lhs, rhs):
    B, M, K = lhs.shape
    B2, K2, N = rhs.shape
    assert B == B2 and K == K2
    out = torch.empty((B, M, N), dtype=lhs.dtype, device=lhs.device)
    BM, BN, BK = block(128, M), block(128, N), block(64, K)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), B)
    bmm_kernel[grid](
        lhs,
        rhs,
        out,
        M,
        N,
        K,
        lhs.stride(0),
        lhs.stride(1),
        lhs.stride(2),
        rhs.stride(0),
        rhs.stride(1),
        rhs.stride(2),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_K=BK,
        GROUP_M=8,
        num_warps=8,
        num_stages=3,
    )
    return out
