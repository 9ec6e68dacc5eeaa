# dialect: triton
# family: finding the expected output through inspect (getmembers: every attribute by name)
# task: gpu/silu
# expect: rejected
# message: `inspect.getmembers` is not allowed
# getmembers reads every attribute by name, __globals__ among them: the module's
# globals, and their __builtins__.
import inspect

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
    members = dict(inspect.getmembers(silu_kernel.fn))
    builtins = members["__globals__"]["__buil" + "tins__"]
    builtins["op" + "en"]("/tmp/pwned", "w").write("pwned")
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
