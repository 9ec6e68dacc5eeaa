# dialect: triton
# family: zeroing or editing inputs (torch in place)
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.zero_
# The static check leaves torch compute to the run-time guard, which refuses the first
# aten op that computes, wherever Python spelled it, in every checked run.
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    x.zero_()
    return out
