"""Baseline Triton paged grouped-query attention decode, bfloat16.

One program per (sequence, key/value head): it holds the GROUP = QH // KH query heads that
share the kv head as the rows of a (BLOCK_G, BLOCK_D) block (padded to 16 rows for tl.dot),
then walks the sequence's pages in page-table order, one page (PAGE_SIZE tokens) at a time,
masking the tokens at or past seq_lens[b]. Online softmax in float32 (running max and sum,
base-2 exponentials), float32 output accumulator, normalised once at the end. Simple, not
tuned: one page per iteration and no split of long sequences over several programs.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def paged_decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    page_table_ptr,
    seq_lens_ptr,
    o_ptr,
    GROUP,
    D,
    qk_scale,
    stride_qb,
    stride_qh,
    stride_qd,
    stride_kp,
    stride_ks,
    stride_kh,
    stride_kd,
    stride_vp,
    stride_vs,
    stride_vh,
    stride_vd,
    stride_ptb,
    stride_ptp,
    stride_ob,
    stride_oh,
    stride_od,
    PAGE_SIZE: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    kvh = tl.program_id(1)

    rows = tl.arange(0, BLOCK_G)
    heads = kvh * GROUP + rows
    head_ok = rows < GROUP
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < D
    slots = tl.arange(0, BLOCK_T)  # token within a page
    slot_ok = slots < PAGE_SIZE

    q = tl.load(
        q_ptr + b * stride_qb + heads[:, None] * stride_qh + dims[None, :] * stride_qd,
        mask=head_ok[:, None] & dim_ok[None, :],
        other=0.0,
    )

    seq_len = tl.load(seq_lens_ptr + b)
    num_pages = tl.cdiv(seq_len, PAGE_SIZE)

    row_max = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_G,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), dtype=tl.float32)
    for i in range(0, num_pages):
        page = tl.load(page_table_ptr + b * stride_ptb + i * stride_ptp).to(tl.int64)
        tokens = i * PAGE_SIZE + slots
        token_ok = slot_ok & (tokens < seq_len)
        k_base = k_ptr + page * stride_kp + kvh * stride_kh
        v_base = v_ptr + page * stride_vp + kvh * stride_vh
        # keys loaded transposed: (BLOCK_D, BLOCK_T)
        kt = tl.load(
            k_base + dims[:, None] * stride_kd + slots[None, :] * stride_ks,
            mask=dim_ok[:, None] & token_ok[None, :],
            other=0.0,
        )
        v = tl.load(
            v_base + slots[:, None] * stride_vs + dims[None, :] * stride_vd,
            mask=token_ok[:, None] & dim_ok[None, :],
            other=0.0,
        )
        # scores in base-2 units: s * log2(e) / sqrt(D)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(token_ok[None, :], s, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.exp2(s - new_max[:, None])
        correction = tl.exp2(row_max - new_max)
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(
        o_ptr + b * stride_ob + heads[:, None] * stride_oh + dims[None, :] * stride_od,
        out.to(o_ptr.dtype.element_ty),
        mask=head_ok[:, None] & dim_ok[None, :],
    )


def run(q, k_cache, v_cache, page_table, seq_lens):
    B, QH, D = q.shape
    _, page_size, KH, _ = k_cache.shape
    assert v_cache.shape == k_cache.shape and QH % KH == 0 and page_table.shape[0] == B
    group = QH // KH
    out = torch.empty((B, QH, D), dtype=q.dtype, device=q.device)
    block_t = max(16, triton.next_power_of_2(page_size))
    block_g = max(16, triton.next_power_of_2(group))
    block_d = max(16, triton.next_power_of_2(D))
    qk_scale = math.log2(math.e) / math.sqrt(D)
    paged_decode_kernel[(B, KH)](
        q,
        k_cache,
        v_cache,
        page_table,
        seq_lens,
        out,
        group,
        D,
        qk_scale,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        k_cache.stride(3),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        v_cache.stride(3),
        page_table.stride(0),
        page_table.stride(1),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        PAGE_SIZE=page_size,
        BLOCK_T=block_t,
        BLOCK_G=block_g,
        BLOCK_D=block_d,
        num_warps=4,
    )
    return out
