# dialect: triton
# family: torch compute whose refusal run() catches (PyTorch where unwatched, Triton where watched)
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.sigmoid
# gpu_expect: cheat
# gpu_message: run() computed with PyTorch: aten.sigmoid
# The guard's refusal is an exception: caught, run() would compute with PyTorch wherever no
# guard watches (the timed runs) and in Triton where one does. The guard keeps its first
# refusal and raises it again when run() returns.
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


def run(x):
    try:
        return x * torch.sigmoid(x)
    except Exception:
        return silu(x)
