# dialect: triton
# family: work on a side stream
# task: gpu/silu
# expect: rejected
# message: `torch.cuda.streams` is not allowed in a kernel
# gpu_expect: rejected
# gpu_message: `torch.cuda.streams` is not allowed in a kernel
# torch.cuda.Stream is refused by name; the same class through torch.cuda.streams, made
# current with torch.accelerator.set_stream and switched back before run() returns.
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
    out = torch.empty_like(x)
    n = x.numel()
    side = torch.cuda.streams.Stream()
    torch.accelerator.set_stream(side)
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    torch.accelerator.set_stream(torch.cuda.default_stream())
    return out
