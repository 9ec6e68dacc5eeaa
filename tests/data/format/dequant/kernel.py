import torch
import triton
import triton.language as tl


@triton.jit
def dequant_kernel(x_ptr, scale_ptr, keep_ptr, out_ptr, kept_ptr, N, shift, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.load(keep_ptr + row * N + offs, mask=mask, other=0) != 0
    s = tl.load(scale_ptr + row)
    y = tl.where(keep, x * s, 0.0)
    tl.store(out_ptr + row * N + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
    count = tl.sum(keep.to(tl.int32), axis=0) + shift
    tl.store(kept_ptr + row, count)


def run(x, scale, keep, shift):
    M, N = x.shape
    out = torch.empty((M, N), dtype=torch.bfloat16, device=x.device)
    kept = torch.empty(M, dtype=torch.int32, device=x.device)
    dequant_kernel[(M,)](x, scale, keep, out, kept, N, shift, BLOCK=triton.next_power_of_2(N))
    return {"out": out, "kept": kept}
