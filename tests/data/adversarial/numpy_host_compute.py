# dialect: triton
# family: NumPy compute on the host (.numpy(): no aten op for the guard to see)
# task: gpu/silu
# expect: rejected
# message: `.numpy` reads PyTorch tensor data on the host
# On a CPU tensor (the interpreter's) .numpy() shares its memory without an aten op, and
# NumPy's arithmetic is outside torch: refused statically, the one layer that sees it.
import math

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def silu(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out


def run(x):
    # bfloat16 as its bits, widened and computed with NumPy's own arithmetic
    wide = (x.view(torch.int16).numpy().astype("int32") << 16).view("float32")
    y = wide / (1.0 + math.e ** (-wide))
    out = torch.empty_like(x)
    out.view(torch.int16).numpy()[...] = (y.view("int32") >> 16).astype("int16")
    silu(x[:1])  # a launch, for the count
    return out
