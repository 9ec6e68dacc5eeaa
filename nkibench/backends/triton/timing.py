"""Timing on the GPU (child side): CUDA events around each run, an L2 flush before each,
inputs rotated among several sets, warm-up first, the median of many runs, taken as two
blocks whose medians must agree.

Also the timer's own cheat check: the median of event-timed runs must match what a
device-wide synchronisation sees (less the cost of launching an empty kernel); a kernel
whose work escapes the current stream looks fast to events and slow to the device.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

__all__ = ["Timer", "TimingPlan"]


@triton.jit
def empty_kernel(out_ptr):
    pid = tl.program_id(0)
    if pid < 0:  # never true: a launch that does nothing, for the launch overhead
        tl.store(out_ptr, pid)


@dataclass(frozen=True)
class TimingPlan:
    warmup_ms: float = 50.0
    block_ms: float = 400.0
    """Device time each of the two blocks aims at."""
    min_runs: int = 10
    max_runs: int = 1000
    sync_runs: int = 10


class Timer:
    def __init__(self, device: torch.device, plan: TimingPlan | None = None) -> None:
        self.device = device
        self.plan = plan or TimingPlan()
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20))
        # writing twice the L2's size evicts whatever the last run left there
        self.flush_buffer = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=device)
        self.null_out = torch.empty(1, dtype=torch.int32, device=device)

    def flush(self) -> None:
        self.flush_buffer.zero_()

    def _events(
        self, call: Callable[[int], Any], runs: int, before: Callable[[int], None]
    ) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            before(i)
            self.flush()
            starts[i].record()
            call(i)
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]

    def _synchronised(self, call: Callable[[int], Any], runs: int) -> float:
        """Median host time of launch + device-wide synchronisation, in ms."""
        times = []
        for i in range(runs):
            self.flush()
            torch.cuda.synchronize()
            started = time.perf_counter()
            call(i)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - started) * 1e3)
        return statistics.median(times)

    def measure(
        self, call: Callable[[int], Any], before: Callable[[int], None] | None = None
    ) -> dict[str, float]:
        """Time `call(i)` (run i; `before(i)`, untimed, prepares its inputs)."""
        prepare = before or (lambda _i: None)
        plan = self.plan
        warm: list[float] = []
        while len(warm) < 3 or sum(warm) < plan.warmup_ms:
            warm += self._events(call, 1, prepare)
            if len(warm) > 1000:
                break
        estimate = max(statistics.median(warm), 1e-3)
        runs = int(min(plan.max_runs, max(plan.min_runs, plan.block_ms / estimate)))
        first = self._events(call, runs, prepare)
        second = self._events(call, runs, prepare)
        a, b = statistics.median(first), statistics.median(second)
        every = first + second
        return {
            "p50": statistics.median(every),
            "mean": statistics.fmean(every),
            "min": min(every),
            "max": max(every),
            "runs": float(len(every)),
            "block_p50_a": a,
            "block_p50_b": b,
            "rel_spread": abs(a - b) / min(a, b),
        }

    def launch_overhead_ms(self) -> float:
        def launch(_i: int) -> None:
            empty_kernel[(1,)](self.null_out)

        launch(0)
        return self._synchronised(launch, self.plan.sync_runs)

    def synchronised_ms(self, call: Callable[[int], Any]) -> float:
        return self._synchronised(call, self.plan.sync_runs)
