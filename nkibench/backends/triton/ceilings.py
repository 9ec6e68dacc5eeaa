"""The device's ceilings, measured once per device (child side): what the GPU roofline and
"% of peak" divide by, instead of datasheet numbers.

- bandwidth: a large device-to-device copy, counting the bytes read and the bytes written;
- matmul rate per dtype: a large square product through PyTorch (cuBLAS); "float32" is the
  tf32 rate (Triton's default for a float32 `tl.dot`, which the float32 tolerance admits),
  "float32_ieee" the strict one;
- vector rate: float32 fused multiply-adds in registers, from a Triton kernel.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from nkibench.backends.triton.timing import Timer, TimingPlan

__all__ = ["measure_ceilings"]

COPY_BYTES = 1 << 30
MATMUL_N = 8192
FMA_ITERATIONS = 4096
FMA_BLOCK = 1024


@triton.jit
def fma_kernel(out_ptr, ITERATIONS: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x0 = offsets.to(tl.float32) * 1e-7
    x1 = x0 + 1.0
    x2 = x0 + 2.0
    x3 = x0 + 3.0
    for _ in range(ITERATIONS):  # four independent chains keep the FMA pipes busy
        x0 = x0 * 0.9999 + 1e-4
        x1 = x1 * 0.9999 + 1e-4
        x2 = x2 * 0.9999 + 1e-4
        x3 = x3 * 0.9999 + 1e-4
    tl.store(out_ptr + offsets, x0 + x1 + x2 + x3)


def _matmul_rate(timer: Timer, dtype: torch.dtype, tf32: bool) -> float:
    a = torch.randn(MATMUL_N, MATMUL_N, device=timer.device).to(dtype)
    b = torch.randn(MATMUL_N, MATMUL_N, device=timer.device).to(dtype)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        stats = timer.measure(lambda _i: torch.matmul(a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return 2 * MATMUL_N**3 / (stats["p50"] * 1e-3)


def measure_ceilings(device: torch.device) -> dict[str, Any]:
    timer = Timer(device, TimingPlan(warmup_ms=100.0, block_ms=300.0, min_runs=5))
    source = torch.randint(0, 255, (COPY_BYTES,), dtype=torch.uint8, device=device)
    destination = torch.empty_like(source)
    copy = timer.measure(lambda _i: destination.copy_(source))
    bandwidth = 2 * COPY_BYTES / (copy["p50"] * 1e-3)
    properties = torch.cuda.get_device_properties(device)
    programs = 64 * properties.multi_processor_count
    out = torch.empty(programs * FMA_BLOCK, dtype=torch.float32, device=device)
    fma = timer.measure(
        lambda _i: fma_kernel[(programs,)](out, ITERATIONS=FMA_ITERATIONS, BLOCK=FMA_BLOCK)
    )
    vector = 2 * 4 * FMA_ITERATIONS * FMA_BLOCK * programs / (fma["p50"] * 1e-3)
    matmul = {
        "bfloat16": _matmul_rate(timer, torch.bfloat16, tf32=False),
        "float16": _matmul_rate(timer, torch.float16, tf32=False),
        "float32": _matmul_rate(timer, torch.float32, tf32=True),
        "float32_ieee": _matmul_rate(timer, torch.float32, tf32=False),
    }
    return {
        "bandwidth_bytes_per_s": bandwidth,
        "vector_flops": vector,
        "matmul_flops": matmul,
        "method": {
            "bandwidth": f"copy_ of {COPY_BYTES} bytes, read + written, median of events",
            "matmul": f"torch.matmul {MATMUL_N}^3 on random data, median of events",
            "vector": f"Triton float32 FMA chains, {programs} programs of {FMA_BLOCK}",
        },
        "spread": {"copy": copy["rel_spread"], "fma": fma["rel_spread"]},
    }
