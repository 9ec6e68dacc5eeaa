# dialect: triton
# family: a PyTorch fallback that does run (a flag nothing the harness controls sets)
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.silu
# gpu_expect: cheat
# gpu_message: run() computed with PyTorch: aten.silu
# The static check leaves torch compute to the run-time guard: a fallback whose condition
# holds everywhere (a module flag that nothing sets) runs on every host, and is refused
# where it runs.
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


USE_TRITON = False


def run(x):
    if not USE_TRITON:
        return torch.nn.functional.silu(x)
    return silu(x)
