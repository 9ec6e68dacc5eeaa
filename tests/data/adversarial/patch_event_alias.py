# dialect: triton
# family: patching the timer (torch.cuda.Event, through an alias)
# task: local/silu_torch
# expect: rejected
# message: `cuda.Event` may not be replaced
# The timer makes its CUDA events when it runs; a fake Event would report any time at all.
# An alias hides the module from a check that looks for `torch.cuda.Event = ...`; every
# attribute assignment is refused instead (even where the task allows torch compute).
import torch
import triton
import triton.language as tl


class FakeEvent:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args):
        pass

    def elapsed_time(self, other):
        return 0.001


cuda = torch.cuda
cuda.Event = FakeEvent


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
