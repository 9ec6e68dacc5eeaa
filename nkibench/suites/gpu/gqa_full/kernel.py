"""Baseline Triton grouped-query attention (no causal mask), flash-attention style, bfloat16.

q (B, N, QH, D), k/v (B, N, KH, D), out (B, QH, N, D). Grid: axis 0 the query blocks of
BLOCK_M rows, axis 1 the (batch, query head) pairs. Each program keeps its query block in
registers and streams the keys and values of its key/value head (h // (QH // KH)) in blocks
of BLOCK_N, with an online softmax (running max and sum, base-2 exponentials) and a float32
output accumulator, normalised once at the end.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def gqa_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    N,
    QH,
    KH,
    D,
    qk_scale,
    stride_qb,
    stride_qn,
    stride_qh,
    stride_qd,
    stride_kb,
    stride_kn,
    stride_kh,
    stride_kd,
    stride_vb,
    stride_vn,
    stride_vh,
    stride_vd,
    stride_ob,
    stride_oh,
    stride_on,
    stride_od,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tile_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // QH).to(tl.int64)
    h = bh % QH
    kvh = h // (QH // KH)

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    row_ok = rows < N
    dim_ok = dims < D

    q_ptrs = (
        q_ptr
        + b * stride_qb
        + h * stride_qh
        + rows[:, None] * stride_qn
        + dims[None, :] * stride_qd
    )
    q = tl.load(q_ptrs, mask=row_ok[:, None] & dim_ok[None, :], other=0.0)

    k_base = k_ptr + b * stride_kb + kvh * stride_kh
    v_base = v_ptr + b * stride_vb + kvh * stride_vh
    offs_n = tl.arange(0, BLOCK_N)

    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        keys = n0 + offs_n
        key_ok = keys < N
        # k block loaded transposed: (BLOCK_D, BLOCK_N)
        kt = tl.load(
            k_base + dims[:, None] * stride_kd + keys[None, :] * stride_kn,
            mask=dim_ok[:, None] & key_ok[None, :],
            other=0.0,
        )
        v = tl.load(
            v_base + keys[:, None] * stride_vn + dims[None, :] * stride_vd,
            mask=key_ok[:, None] & dim_ok[None, :],
            other=0.0,
        )
        # scores in base-2 units: s * log2(e) / sqrt(D)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(key_ok[None, :], s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.exp2(s - new_max[:, None])
        correction = tl.exp2(row_max - new_max)
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        row_max = new_max

    out = acc / row_sum[:, None]
    o_ptrs = (
        o_ptr
        + b * stride_ob
        + h * stride_oh
        + rows[:, None] * stride_on
        + dims[None, :] * stride_od
    )
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=row_ok[:, None] & dim_ok[None, :])


def block(size, dim):
    """The block size for a dimension: `size`, shrunk for small dims, never below 16."""
    return max(16, min(size, triton.next_power_of_2(dim)))


def run(q, k, v):
    B, N, QH, D = q.shape
    KH = k.shape[2]
    assert k.shape == (B, N, KH, D) and v.shape == (B, N, KH, D) and QH % KH == 0
    out = torch.empty((B, QH, N, D), dtype=q.dtype, device=q.device)
    BM, BN, BD = block(128, N), block(64, N), max(16, triton.next_power_of_2(D))
    qk_scale = math.log2(math.e) / math.sqrt(D)
    grid = (triton.cdiv(N, BM), B * QH)
    gqa_kernel[grid](
        q,
        k,
        v,
        out,
        N,
        QH,
        KH,
        D,
        qk_scale,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        q.stride(3),
        k.stride(0),
        k.stride(1),
        k.stride(2),
        k.stride(3),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        v.stride(3),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        out.stride(3),
        BLOCK_M=BM,
        BLOCK_N=BN,
        BLOCK_D=BD,
        num_warps=8,
        num_stages=3,
    )
    return out
