"""SiLU as LLM agents write Triton for FlashInfer-Bench definitions (issue 25): autotuned
and with heuristics, an argument binder built with inspect.signature, getattr on
triton.language for what the installed Triton has, host queries and no-op moves, a
synchronize at the end, and a self-test that never runs here."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect

import torch
import triton
import triton.language as tl

EXP = getattr(tl, "exp", None)
HAS_EXP2 = hasattr(tl, "exp2")


class Mode(enum.Enum):
    ELEMENTWISE = enum.auto()


@dataclasses.dataclass(frozen=True)
class Launch:
    mode: Mode = Mode.ELEMENTWISE
    warps: int = 4


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=2),
        triton.Config({"BLOCK": 256}, num_warps=4),
    ],
    key=["n"],
)
@triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x / (1.0 + tl.exp(-x))).to(out_ptr.dtype.element_ty), mask=mask)


@functools.lru_cache(maxsize=None)
def plan(numel: int) -> Launch:
    return dataclasses.replace(Launch(), warps=4 if numel < 1 << 20 else 8)


def _silu(x):
    x = x.contiguous().to(x.device)
    out = torch.empty_like(x)
    n = x.numel()
    if x.device.type == "cuda" and x.is_cuda:
        torch.cuda.current_device()
    plan(n)

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK"]),)

    silu_kernel[grid](x.view(-1), out.view(-1), n)
    torch.cuda.synchronize()
    return out


def run(*args, **kwargs):
    bound = inspect.signature(_silu).bind(*args, **kwargs)
    bound.apply_defaults()
    return _silu(**bound.arguments)


if __name__ == "__main__":
    import sys
    import time

    import numpy as np

    x = torch.randn(4096, device="cuda")
    started = time.perf_counter()
    y = run(x)
    print(np.allclose(y.cpu().numpy(), (x * torch.sigmoid(x)).cpu().numpy()), sys.argv)
    print(f"{(time.perf_counter() - started) * 1e3:.3f} ms")
