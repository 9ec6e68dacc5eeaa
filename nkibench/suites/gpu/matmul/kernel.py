"""Baseline Triton matmul: out = lhs @ rhs, bfloat16 in and out, float32 accumulation.

One program computes one BLOCK_M x BLOCK_N tile of the output, walking K in BLOCK_K steps.
Programs are ordered in groups of GROUP_M tile-rows so that neighbouring programs share lhs
rows and rhs columns in L2.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # grouped order: GROUP_M tile-rows are swept column by column
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

    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(lhs, rhs):
    M, K = lhs.shape
    K2, N = rhs.shape
    assert K == K2
    out = torch.empty((M, N), dtype=lhs.dtype, device=lhs.device)
    BM, BN, BK = block(128, M), block(128, N), block(64, K)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](
        lhs,
        rhs,
        out,
        M,
        N,
        K,
        lhs.stride(0),
        lhs.stride(1),
        rhs.stride(0),
        rhs.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_K=BK,
        GROUP_M=8,
        num_warps=8,
        num_stages=3,
    )
    return out
