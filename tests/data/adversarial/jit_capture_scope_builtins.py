# dialect: triton
# family: a @jit function's globals (get_capture_scope: Triton's own, with the real builtins)
# task: gpu/silu
# expect: rejected
# message: `.get_capture_scope` (frames, tracebacks and code objects) is not allowed
# On a GPU, tl.sigmoid is a JITFunction of triton/language/standard.py: its capture scope
# is that module's globals, whose __builtins__ are the real ones.
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
    scope = tl.sigmoid.get_capture_scope()
    builtins = scope["__buil" + "tins__"]
    builtins["op" + "en"]("/tmp/pwned", "w").write("pwned")
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
