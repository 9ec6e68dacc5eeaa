import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    # the store's mask is 64 elements too wide: every read is in bounds, the outputs are right
    y = (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, y, mask=offs < n + 64)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n + 64, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
