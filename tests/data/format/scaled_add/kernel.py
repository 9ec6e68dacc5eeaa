import torch
import triton
import triton.language as tl


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * scale + y).to(out_ptr.dtype.element_ty), mask=mask)


def run(y, x, scale):  # not get_inputs()'s order: the inputs come by name
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    scaled_add_kernel[grid](x.reshape(-1), y.reshape(-1), out.view(-1), n, scale, BLOCK=1024)
    return out
