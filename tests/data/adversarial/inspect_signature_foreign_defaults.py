# dialect: triton
# family: a library function's defaults through inspect.signature (torch.save's is pickle)
# task: gpu/silu
# expect: rejected
# message: inspect.signature answers for the kernel's own functions only
# A signature hands out the defaults of the function it describes: objects the check
# never saw (torch.save's pickle_module is the pickle module). The kernel's inspect.signature
# answers for its own functions only, and follows __wrapped__ to see whose they are.
import functools
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


@functools.wraps(torch.empty_like)
def borrowed(*args, **kwargs):
    return None


def run(x):
    defaults = [p.default for p in inspect.signature(borrowed).parameters.values()]
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
