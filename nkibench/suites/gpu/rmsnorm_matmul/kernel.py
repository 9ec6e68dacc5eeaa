import torch
import triton
import triton.language as tl

# H100 tiles for the full shape; they shrink (down to 16) for small problems
TILE_M = 128
TILE_N = 256
TILE_K = 64
GROUP_M = 8
ROW_BLOCK = 4096


@triton.jit
def inv_rms_kernel(x_ptr, inv_ptr, K, stride_xm, BLOCK_K: tl.constexpr):
    # one program per row: inv[row] = 1 / sqrt(mean(x[row, :]^2))
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride_xm
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        v = tl.load(base + cols, mask=cols < K, other=0.0).to(tl.float32)
        acc += v * v
    mean_square = tl.sum(acc, axis=0) / K
    tl.store(inv_ptr + row, 1.0 / tl.sqrt(mean_square))


@triton.jit
def matmul_rowscale_kernel(
    x_ptr,
    w_ptr,
    scale_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
):
    # out[m, n] = scale[m] * sum_k x[m, k] w[k, n]; tiles visited in groups of GROUP row
    # tiles so that neighbouring programs share x and w tiles in L2
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    group_rows = tl.minimum(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m.to(tl.int64)[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n.to(tl.int64)[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    scale = tl.load(scale_ptr + offs_m, mask=mask_m, other=0.0)
    acc = acc * scale[:, None]
    out_ptrs = out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def tile(limit, dim):
    return max(16, min(limit, triton.next_power_of_2(dim)))


def run(x, w):
    m, k = x.shape
    n = w.shape[1]
    inv_rms = torch.empty((m,), dtype=torch.float32, device=x.device)
    row_block = min(ROW_BLOCK, triton.next_power_of_2(k))
    inv_rms_kernel[(m,)](x, inv_rms, k, x.stride(0), BLOCK_K=row_block, num_warps=4)

    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    bm, bn, bk = tile(TILE_M, m), tile(TILE_N, n), tile(TILE_K, k)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_rowscale_kernel[grid](
        x,
        w,
        inv_rms,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP=GROUP_M,
        num_warps=8,
        num_stages=3,
    )
    return out
