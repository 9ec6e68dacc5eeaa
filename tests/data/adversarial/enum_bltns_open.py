# dialect: triton
# family: the standard library's modules through an allowed one (enum.bltns is builtins)
# task: gpu/silu
# expect: rejected
# message: `enum.bltns` is the module builtins, which a kernel may not use
# enum may be imported; the modules it holds are not a kernel's (no name list knows
# `bltns`: the kernel's child follows the chain on the real modules).
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


def run(x):
    enum.bltns.open("/tmp/pwned", "w").write("pwned")
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
