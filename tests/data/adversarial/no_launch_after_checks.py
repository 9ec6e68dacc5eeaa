# dialect: triton
# family: Triton while checked, PyTorch once timed (allow_torch_compute)
# task: local/silu_torch
# run: profile
# gpu_expect: incorrect
# gpu_message: run() launched no Triton kernel (in the runs that close the timing)
# expect: measurement
# message: no GPU here
# Launches Triton for the three seeds a check runs, then answers with PyTorch: the
# device-synchronised runs that close the timing count launches too.
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)

CALLS = [0]


def run(x):
    CALLS[0] += 1
    if CALLS[0] > 3:
        return x * torch.sigmoid(x)
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
