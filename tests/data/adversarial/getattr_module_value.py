# dialect: triton
# family: a module held as a value through getattr (its attributes out of the check's sight)
# task: gpu/silu
# expect: rejected
# message: is the module triton.language, which a kernel may only use as
# The static check reads getattr(triton, "language") as triton.language, a path it
# allows; followed on the real modules in the kernel's child, it is a module held as a value.
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)

LANGUAGE = getattr(triton, "language")


def run(x):
    core = LANGUAGE.core
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
