# dialect: triton
# family: Triton while checked, PyTorch once timed (the torch guard in the runs that close the timing)
# task: gpu/silu
# run: profile
# expect: measurement
# message: no GPU here
# gpu_expect: cheat
# gpu_message: run() computed with PyTorch: aten.sigmoid
# Launches Triton for the first three calls of each child (a check runs three seeds), then
# answers with PyTorch: the timed runs carry no guard, but the device-synchronised runs that
# close the timing do.
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

CALLS = [0]


def run(x):
    CALLS[0] += 1
    if CALLS[0] > 3:
        return x * torch.sigmoid(x)
    return silu(x)
