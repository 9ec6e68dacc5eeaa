"""Baseline Triton matmul with a transposed lhs: out = lhs_t.T @ rhs, float32.

lhs_t is (K, M) row-major, so a BLOCK_K x BLOCK_M tile of it is contiguous along M; it is
loaded as stored and transposed in registers for tl.dot. tl.dot on float32 uses tf32 tensor
cores on the GPU (float32 accumulation). One program per BLOCK_M x BLOCK_N output tile, in
grouped order for L2 reuse.

Neither operand is K-major here (lhs_t is M-major, rhs N-major), and Hopper's tf32 wgmma takes
only K-major operands from shared memory, so this straightforward kernel runs well below the
tf32 peak.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_matmul_kernel(
    at_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_ak,
    stride_am,
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

    at_ptrs = at_ptr + ks.to(tl.int64)[:, None] * stride_ak + rows[None, :] * stride_am
    b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        at = tl.load(at_ptrs, mask=k_ok[:, None] & row_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(tl.trans(at), b, acc)
        at_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(lhs_t, rhs):
    K, M = lhs_t.shape
    K2, N = rhs.shape
    assert K == K2
    out = torch.empty((M, N), dtype=lhs_t.dtype, device=lhs_t.device)
    BM, BN, BK = block(128, M), block(256, N), block(32, K)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    transpose_matmul_kernel[grid](
        lhs_t,
        rhs,
        out,
        M,
        N,
        K,
        lhs_t.stride(0),
        lhs_t.stride(1),
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
