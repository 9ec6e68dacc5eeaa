# dialect: triton
# family: threads that defer work past the timer
# task: gpu/silu
# expect: rejected
# message: import of 'threading' is not allowed
import threading

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
    launch = lambda: silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    threading.Timer(0.001, launch).start()
    return out
