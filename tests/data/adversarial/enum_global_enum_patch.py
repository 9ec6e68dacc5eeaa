# dialect: triton
# family: patching module attributes through enum.global_enum (a class's __module__)
# task: gpu/silu
# expect: rejected
# message: `enum.global_enum` is not allowed in a kernel
# global_enum writes an enum's members into sys.modules[cls.__module__]: with
# __module__ = "torch", into torch.
import enum

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


@enum.global_enum
class Patch(enum.Enum):
    __module__ = "torch"
    empty_like = 1


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
