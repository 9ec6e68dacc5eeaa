# dialect: triton
# family: results cached across calls (by pointer)
# task: gpu/silu
# expect: incorrect
# message: run() launched no Triton kernel
# gpu_expect: incorrect
# gpu_message: run() launched no Triton kernel
# Every seed runs in the first seed's buffers: the second seed gets the first one's answer,
# without a launch (which is what gives it away first; its values are wrong too).
import torch
import triton
import triton.language as tl

CACHE = {}


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def run(x):
    key = (x.data_ptr(), tuple(x.shape))
    if key not in CACHE:
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
        CACHE[key] = out
    return CACHE[key]
