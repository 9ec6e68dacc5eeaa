import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    block = min(BLOCK, triton.next_power_of_2(n))
    grid = (triton.cdiv(n, block),)
    silu_kernel[grid](x.reshape(-1), out.view(-1), n, BLOCK_SIZE=block, num_warps=8)
    return out
