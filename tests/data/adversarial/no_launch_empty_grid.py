# dialect: triton
# family: a launch of no program beside PyTorch (allow_torch_compute)
# task: local/silu_torch
# gpu_expect: incorrect
# gpu_message: run() launched no Triton kernel
# expect: incorrect
# message: run() launched no Triton kernel
# A grid of zero programs runs nothing: it is not counted as a launch, on the GPU's
# launcher or the interpreter's.
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
    silu_kernel[(0,)](x.view(-1), out.view(-1), 0, BLOCK=1024)
    return x * torch.sigmoid(x)
