# dialect: triton
# family: results cached across calls (by content, a floating-point input read as integers)
# task: gpu/silu
# expect: cheat
# message: run() read a floating-point input's data as integers on the host
# gpu_expect: cheat
# gpu_message: run() read a floating-point input's data as integers on the host
# Integer data may be read on the host, floating-point data never: a view of a bfloat16
# input as int16 is its data all the same (the guard follows the inputs' storage, through
# views and the run's clones).
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
    bits = x.view(torch.int16)
    key = (x.data_ptr(), int(bits[0, 0]), int(bits[-1, -1]))
    if key not in CACHE:
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
        CACHE[key] = out
    return CACHE[key]
