# dialect: triton
# family: a PyTorch fallback for CPU tensors (runs under the interpreter, never on a GPU)
# task: gpu/silu
# expect: cheat
# message: Under Triton's CPU interpreter the inputs are CPU tensors
# gpu_expect: none
# What real kernels carry for hosts without CUDA: under the interpreter the inputs are CPU
# tensors, so the branch runs and the run-time guard refuses its torch compute (saying why);
# on a GPU it never runs, and the kernel is correct.
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
    if not x.is_cuda:
        return torch.nn.functional.silu(x)
    return silu(x)
