# dialect: triton
# family: reading uninitialised memory (torch.empty returning a recycled buffer)
# task: gpu/silu
# expect: incorrect
# message: never written
# gpu_expect: incorrect
# gpu_message: never written
# The answer is computed into a scratch buffer that is then freed; the output is a fresh
# torch.empty of the same size, which the caching allocator hands back at the same address,
# still holding the answer. Every allocation inside run() is poisoned first, so it holds
# the poison instead, and no element of it was written.
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
    n = x.numel()
    scratch = torch.empty_like(x)
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), scratch.view(-1), n, BLOCK=1024)
    del scratch
    return torch.empty_like(x)
