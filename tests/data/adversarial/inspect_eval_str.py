# dialect: triton
# family: code from text through inspect's evaluator of string annotations (eval_str)
# task: gpu/silu
# expect: rejected
# message: `eval_str=` evaluates string annotations as code
# eval_str=True evaluates each string annotation: eval() of text the check never parsed.
import inspect

import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


def sink(a: "().__class__.__base__.__subclasses__()"):
    return a


def run(x):
    classes = inspect.signature(sink, eval_str=True).parameters["a"].annotation
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 1024),)](x.view(-1), out.view(-1), n, BLOCK=1024)
    return out
