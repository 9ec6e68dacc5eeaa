# dialect: triton
# family: the L2 cache kept warm
# task: gpu/silu
# run: profile
# expect: measurement
# message: no GPU here
# gpu_shapes: medium
# gpu_expect: none
# gpu_not_faster_than: honest
# After its real work, run() reads its input once more so that the next run (on the same
# buffers, in a naive timing loop) finds it in L2. The timer writes twice the L2's size
# between runs and rotates the input sets: the trick buys nothing, and the kernel is correct
# and no faster than itself without the lines marked `# trick` (it does strictly more work).
# Not the suite's baseline: at medium shapes this kernel's smaller blocks fill more SMs, and
# that, not the L2, made it faster than the baseline on an H200.
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def touch_kernel(x_ptr, sink_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_last")
    tl.store(sink_ptr + tl.program_id(0), tl.sum(x.to(tl.float32), axis=0))


def run(x):
    out = torch.empty_like(x)
    n = x.numel()
    blocks = triton.cdiv(n, 1024)
    silu_kernel[(blocks,)](x.view(-1), out.view(-1), n, BLOCK=1024)
    sink = torch.empty((blocks,), dtype=torch.float32, device=x.device)  # trick
    touch_kernel[(blocks,)](x.view(-1), sink, n, BLOCK=1024)  # trick
    return out
