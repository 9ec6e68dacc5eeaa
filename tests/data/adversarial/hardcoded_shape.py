# dialect: triton
# family: hard-coded shapes
# task: gpu/silu
# shapes: medium
# expect: incorrect
# message: never written
# gpu_expect: incorrect
# gpu_message: never written
# The element count of the small shape set (48 x 100) written in: right there, and short of
# every other shape.
import torch
import triton
import triton.language as tl

N_ELEMENTS = 48 * 100


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)
    silu_kernel[(triton.cdiv(N_ELEMENTS, 1024),)](x.view(-1), out.view(-1), N_ELEMENTS, BLOCK=1024)
    return out
