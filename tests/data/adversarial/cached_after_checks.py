# dialect: triton
# family: results cached across calls (only once the checks are over)
# task: gpu/silu
# run: profile
# expect: measurement
# message: no GPU here
# gpu_shapes: full
# gpu_expect: cheat
# gpu_message: fresh inputs
# Honest for its first three calls (a check runs three seeds), then it returns what it
# computed last for the same buffers: correct wherever it is checked, and instant in a
# timing loop. Without a GPU it is correct and cannot be timed; on a GPU it is far faster
# than the baseline, so it is timed again with fresh data written into the timed buffers.
import torch
import triton
import triton.language as tl

CACHE = {}
CALLS = [0]


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    CALLS[0] += 1
    key = (x.data_ptr(), tuple(x.shape))
    if CALLS[0] > 3 and key in CACHE:
        return CACHE[key]
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    CACHE[key] = out
    return out
