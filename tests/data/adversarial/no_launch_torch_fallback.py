# dialect: triton
# family: a PyTorch fallback instead of Triton (allow_torch_compute, no launch)
# task: local/silu_torch
# expect: incorrect
# message: run() launched no Triton kernel
# allow_torch_compute lets run() compute with PyTorch beside Triton launches, never
# instead of them: the fallback real kernels carry for hosts without CUDA runs under the
# interpreter, gives the right answer, and launches nothing.
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
    if not x.is_cuda or x.device.type != "cuda":
        return x * torch.sigmoid(x)
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
