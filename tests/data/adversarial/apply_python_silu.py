# dialect: triton
# family: Python compute on every element (Tensor.apply_: no aten op for the guard to see)
# task: gpu/silu
# expect: rejected
# message: `.apply_` reads PyTorch tensor data on the host
# apply_ runs a Python function on each element of a CPU tensor in place, without an aten
# op: refused statically.
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
    out = x.clone()
    out.apply_(lambda v: v / (1.0 + math.exp(-v)))
    silu(x[:1])  # a launch, for the count
    return out
