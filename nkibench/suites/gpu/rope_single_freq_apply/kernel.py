import torch
import triton
import triton.language as tl

BLOCK_TOKENS = 32


@triton.jit
def rope_kernel(
    x_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    N,
    HALF,
    n_token_blocks,
    BLOCK_N: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
):
    # one program: BLOCK_N tokens of one (batch, head) row, all of the head dim
    pid = tl.program_id(0)
    bh = pid // n_token_blocks
    nb = pid % n_token_blocks
    tokens = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_HALF)
    mask = (tokens < N)[:, None] & (cols < HALF)[None, :]
    d = 2 * HALF
    row = (bh.to(tl.int64) * N + tokens) * d  # int64: B*H*N*D may pass 2^31
    x_offs = row[:, None] + cols[None, :]
    t_offs = tokens[:, None] * HALF + cols[None, :]
    x0 = tl.load(x_ptr + x_offs, mask=mask, other=0.0).to(tl.float32)
    x1 = tl.load(x_ptr + x_offs + HALF, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + t_offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + t_offs, mask=mask, other=0.0).to(tl.float32)
    out0 = x0 * c - x1 * s
    out1 = x0 * s + x1 * c
    tl.store(out_ptr + x_offs, out0.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + x_offs + HALF, out1.to(out_ptr.dtype.element_ty), mask=mask)


def run(x, cos, sin):
    b, h, n, d = x.shape
    half = d // 2
    out = torch.empty_like(x)
    block_n = min(BLOCK_TOKENS, triton.next_power_of_2(n))
    n_token_blocks = triton.cdiv(n, block_n)
    grid = (b * h * n_token_blocks,)
    rope_kernel[grid](
        x,
        cos,
        sin,
        out,
        n,
        half,
        n_token_blocks,
        BLOCK_N=block_n,
        BLOCK_HALF=triton.next_power_of_2(half),
        num_warps=4,
    )
    return out
