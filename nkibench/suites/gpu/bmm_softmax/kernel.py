"""Baseline Triton batched matmul + row softmax, bfloat16 in and out, float32 math.

One program owns BLOCK_M full rows of one batch and sweeps N twice:
  pass 1 computes each BLOCK_M x BLOCK_N block of scores and keeps a running row max and a
         running sum of exp(score - max) (online softmax), writing nothing;
  pass 2 recomputes the scores block by block (K is short, so this is cheap) and stores
         exp(score - max) / sum.
The output is written exactly once and never read back.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scores_block(
    a_ptr,
    b_ptr,
    rows,
    cols,
    row_ok,
    col_ok,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def bmm_softmax_kernel(
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
):
    tile_m = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    a_ptr += batch * stride_ab
    b_ptr += batch * stride_bb
    c_ptr += batch * stride_cb

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    offs_n = tl.arange(0, BLOCK_N)

    # pass 1: row max and sum of exponentials
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + offs_n
        col_ok = cols < N
        s = scores_block(
            a_ptr,
            b_ptr,
            rows,
            cols,
            row_ok,
            col_ok,
            K,
            stride_am,
            stride_ak,
            stride_bk,
            stride_bn,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
        )
        s = tl.where(col_ok[None, :], s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(s - new_max[:, None]), axis=1)
        row_max = new_max

    # pass 2: normalised probabilities
    inv_sum = 1.0 / row_sum
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + offs_n
        col_ok = cols < N
        s = scores_block(
            a_ptr,
            b_ptr,
            rows,
            cols,
            row_ok,
            col_ok,
            K,
            stride_am,
            stride_ak,
            stride_bk,
            stride_bn,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
        )
        p = tl.exp(s - row_max[:, None]) * inv_sum[:, None]
        c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
        tl.store(c_ptrs, p.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(lhs, rhs):
    B, M, K = lhs.shape
    B2, K2, N = rhs.shape
    assert B == B2 and K == K2
    out = torch.empty((B, M, N), dtype=lhs.dtype, device=lhs.device)
    BM, BN, BK = block(128, M), block(128, N), block(64, K)
    grid = (triton.cdiv(M, BM), B)
    bmm_softmax_kernel[grid](
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
        num_warps=8,
        num_stages=3,
    )
    return out
