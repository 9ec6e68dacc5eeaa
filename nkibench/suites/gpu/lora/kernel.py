"""Baseline Triton LoRA layer: out = x @ w + (x @ a) @ b, bfloat16, float32 accumulation.

Two launches:
  1. xa = x @ a, (M, R), stored in bfloat16 in a scratch buffer (it is small: M x R);
  2. out = x @ w + xa @ b: each program accumulates its BLOCK_M x BLOCK_N tile over K for
     x @ w, then over R for xa @ b, into the same float32 accumulator, and stores once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def tile_matmul(
    acc,
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
    BLOCK_K: tl.constexpr,
):
    """acc + a[rows, :K] @ b[:K, cols], walking K in BLOCK_K steps."""
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + cols[None, :] * stride_bn
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def down_kernel(
    x_ptr,
    a_ptr,
    xa_ptr,
    M,
    R,
    K,
    stride_xm,
    stride_xk,
    stride_ak,
    stride_ar,
    stride_om,
    stride_or,
    BLOCK_M: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < M
    col_ok = cols < R
    acc = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    acc = tile_matmul(
        acc,
        x_ptr,
        a_ptr,
        rows,
        cols,
        row_ok,
        col_ok,
        K,
        stride_xm,
        stride_xk,
        stride_ak,
        stride_ar,
        BLOCK_K,
    )
    out_ptrs = xa_ptr + rows.to(tl.int64)[:, None] * stride_om + cols[None, :] * stride_or
    tl.store(out_ptrs, acc.to(xa_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def lora_kernel(
    x_ptr,
    w_ptr,
    xa_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    R,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_xam,
    stride_xar,
    stride_br,
    stride_bn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    BLOCK_R: tl.constexpr,
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
    row_ok = rows < M
    col_ok = cols < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = tile_matmul(
        acc,
        x_ptr,
        w_ptr,
        rows,
        cols,
        row_ok,
        col_ok,
        K,
        stride_xm,
        stride_xk,
        stride_wk,
        stride_wn,
        BLOCK_K,
    )
    acc = tile_matmul(
        acc,
        xa_ptr,
        b_ptr,
        rows,
        cols,
        row_ok,
        col_ok,
        R,
        stride_xam,
        stride_xar,
        stride_br,
        stride_bn,
        BLOCK_R,
    )

    out_ptrs = out_ptr + rows.to(tl.int64)[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(x, w, a, b):
    M, K = x.shape
    N = w.shape[1]
    R = a.shape[1]
    assert w.shape[0] == K and a.shape[0] == K and b.shape == (R, N)
    xa = torch.empty((M, R), dtype=x.dtype, device=x.device)
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)

    BM, BR, BK = block(64, M), block(128, R), block(64, K)
    down_kernel[(triton.cdiv(M, BM), triton.cdiv(R, BR))](
        x,
        a,
        xa,
        M,
        R,
        K,
        x.stride(0),
        x.stride(1),
        a.stride(0),
        a.stride(1),
        xa.stride(0),
        xa.stride(1),
        BLOCK_M=BM,
        BLOCK_R=BR,
        BLOCK_K=BK,
        num_warps=4,
        num_stages=3,
    )

    BM, BN, BK, BR = block(128, M), block(128, N), block(64, K), block(64, R)
    lora_kernel[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](
        x,
        w,
        xa,
        b,
        out,
        M,
        N,
        K,
        R,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        xa.stride(0),
        xa.stride(1),
        b.stride(0),
        b.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_K=BK,
        BLOCK_R=BR,
        GROUP_M=8,
        num_warps=8,
        num_stages=3,
    )
    return out
