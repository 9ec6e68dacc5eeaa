# dialect: triton
# family: zeroing or editing inputs
# task: gpu/silu
# expect: cheat
# message: modified its input(s) [0]
# gpu_expect: cheat
# gpu_message: modified its input(s) [0]
# Computes the answer, then zeroes its input (a timing loop over the same buffers would then
# run on zeros, which may be faster: denormals, early exits, compressible memory).
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def zero_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), dtype=x_ptr.dtype.element_ty), mask=offs < n)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    zero_kernel[(triton.cdiv(n, 1024),)](x.view(-1), n, BLOCK=1024)
    return out
