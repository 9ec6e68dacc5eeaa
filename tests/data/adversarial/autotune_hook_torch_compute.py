# dialect: triton
# family: torch compute in an autotuner hook (Config pre_hook)
# task: gpu/silu
# expect: cheat
# message: run() computed with PyTorch: aten.
# triton.autotune is allowed; its configs' hooks are the kernel's code, which the torch
# guard watches like the rest of run(): the hook computes SiLU with operators, and the
# Triton launch itself writes nothing.
import math

import torch
import triton
import triton.language as tl


def compute(nargs):
    x = nargs["x_ptr"]
    nargs["out_ptr"][:] = x / (1.0 + math.e ** (-x))


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, pre_hook=compute),
        triton.Config({"BLOCK": 512}, pre_hook=compute),
    ],
    key=["n"],
)
@triton.jit
def nothing(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def run(x):
    out = torch.empty_like(x)
    nothing[(1,)](x.view(-1), out.view(-1), x.numel())
    return out
