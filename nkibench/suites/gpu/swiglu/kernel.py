"""Baseline Triton SwiGLU MLP: out = (silu(x @ w_gate) * (x @ w_up)) @ w_down, bfloat16.

Two launches:
  1. gate_up_kernel: each program computes a BLOCK_M x BLOCK_N tile of both x @ w_gate and
     x @ w_up from the same x tiles (two float32 accumulators), applies silu(gate) * up and
     stores h (M, N) in bfloat16 to a scratch buffer;
  2. matmul_kernel: out = h @ w_down.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program `pid`, in groups of GROUP_M tile-rows for L2 reuse."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group_row = (pid // per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - group_row, GROUP_M)
    in_group = pid % per_group
    return group_row + in_group % rows_here, in_group // rows_here


@triton.jit
def gate_up_kernel(
    x_ptr,
    wg_ptr,
    wu_ptr,
    h_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_uk,
    stride_un,
    stride_hm,
    stride_hn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    tile_m, tile_n = tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    x_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_xm + ks[None, :] * stride_xk
    wg_ptrs = wg_ptr + ks.to(tl.int64)[:, None] * stride_wk + cols[None, :] * stride_wn
    wu_ptrs = wu_ptr + ks.to(tl.int64)[:, None] * stride_uk + cols[None, :] * stride_un

    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0
        x = tl.load(x_ptrs, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w_mask = k_ok[:, None] & col_ok[None, :]
        wg = tl.load(wg_ptrs, mask=w_mask, other=0.0)
        wu = tl.load(wu_ptrs, mask=w_mask, other=0.0)
        gate = tl.dot(x, wg, gate)
        up = tl.dot(x, wu, up)
        x_ptrs += BLOCK_K * stride_xk
        wg_ptrs += BLOCK_K * stride_wk
        wu_ptrs += BLOCK_K * stride_uk

    h = gate / (1.0 + tl.exp(-gate)) * up
    h_ptrs = h_ptr + rows.to(tl.int64)[:, None] * stride_hm + cols[None, :] * stride_hn
    tl.store(h_ptrs, h.to(h_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


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
    tile_m, tile_n = tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
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


def run(x, w_up, w_down, w_gate):
    M, K = x.shape
    N = w_up.shape[1]
    assert w_up.shape == (K, N) and w_gate.shape == (K, N) and w_down.shape == (N, K)
    h = torch.empty((M, N), dtype=x.dtype, device=x.device)
    out = torch.empty((M, K), dtype=x.dtype, device=x.device)

    BM, BN, BK = block(128, M), block(64, N), block(64, K)
    gate_up_kernel[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](
        x,
        w_gate,
        w_up,
        h,
        M,
        N,
        K,
        x.stride(0),
        x.stride(1),
        w_gate.stride(0),
        w_gate.stride(1),
        w_up.stride(0),
        w_up.stride(1),
        h.stride(0),
        h.stride(1),
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_K=BK,
        GROUP_M=8,
        num_warps=4,
        num_stages=4,
    )

    BM, BN, BK = block(128, M), block(128, K), block(64, N)
    matmul_kernel[(triton.cdiv(M, BM) * triton.cdiv(K, BN),)](
        h,
        w_down,
        out,
        M,
        K,
        N,
        h.stride(0),
        h.stride(1),
        w_down.stride(0),
        w_down.stride(1),
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
