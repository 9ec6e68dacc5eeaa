"""The estimate of one kernel run: schedule the trace, then summarise it."""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nkibench.cost.buffers import plan_buffers
from nkibench.cost.compiler import resident_loads
from nkibench.cost.costs import CostTable
from nkibench.cost.counters import counters
from nkibench.cost.schedule import schedule
from nkibench.cost.tables import GENERATIONS
from nkibench.nkisim.trace import ENGINES, Instruction, Lifetime

__all__ = ["MODEL_VERSION", "Estimate", "estimate"]

MODEL_VERSION = "trn-cost-3"
"""Bumped whenever a constant or a rule changes, so that estimates of different models are
never compared as if they were the same measurement."""

DEPENDENCY_BOUND = 0.5
"""Below this share of the makespan on the busiest engine, the kernel waits on dependencies
(latency) more than it uses any engine."""
HOT_LINES = 5


@dataclass(frozen=True)
class Estimate:
    """The cost model's view of one kernel run. Every time in it is an estimate."""

    model_version: str
    target: str
    latency_ns: float
    busy_ns: dict[str, float]
    instructions: dict[str, int]
    bound_by: str
    """The busiest engine, or "dependencies" when no engine is busy half the time."""
    counters: dict[str, float]
    hot_lines: list[dict[str, Any]]
    """The kernel lines whose instructions keep an engine busiest, for feedback."""
    schedule_seconds: float
    """Wall time the model took (not a kernel latency)."""

    @property
    def latency_ms(self) -> float:
        return self.latency_ns * 1e-6

    def engines(self) -> dict[str, dict[str, float]]:
        span = self.latency_ns or 1.0
        return {
            engine: {
                "busy_ms": self.busy_ns[engine] * 1e-6,
                "utilisation": self.busy_ns[engine] / span,
                "instructions": float(self.instructions[engine]),
            }
            for engine in ENGINES
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "model_version": self.model_version,
            "target": self.target,
            "latency_ms": self.latency_ms,
            "latency_kind": "estimated",
            "bound_by": self.bound_by,
            "engines": self.engines(),
            "counters": self.counters,
            "hot_lines": self.hot_lines,
            "schedule_seconds": self.schedule_seconds,
        }


def estimate(
    instructions: list[Instruction], target: str = "trn1", lifetimes: Sequence[Lifetime] = ()
) -> Estimate:
    """`lifetimes`: the on-chip blocks' (nkisim's KernelRun.lifetimes); without them, every tile
    is taken to have as many buffers as it needs and nothing spills."""
    try:
        generation = GENERATIONS[target]
    except KeyError:
        raise ValueError(
            f"unknown target {target!r}; the cost model knows {', '.join(GENERATIONS)}"
        ) from None
    started = time.perf_counter()
    # The schedule allocates a few objects per instruction, none in a cycle; with the trace's
    # millions of live objects around, the cyclic collector would rescan them all many times.
    collecting = gc.isenabled()
    gc.disable()
    try:
        sbuf = generation.sbuf_bytes_per_partition.value
        resident = resident_loads(instructions, sbuf)
        table = CostTable(generation, resident)
        buffers = plan_buffers(instructions, lifetimes, sbuf, table.spill_ns)
        plan = schedule(instructions, table.cost, buffers)
        summary = counters(instructions, plan, generation, resident, buffers)
    finally:
        if collecting:
            gc.enable()
    makespan = plan.makespan_ns
    busiest = max(ENGINES, key=lambda e: plan.busy_ns[e])
    stalled = makespan and plan.busy_ns[busiest] < DEPENDENCY_BOUND * makespan
    hot = sorted(plan.line_busy_ns.items(), key=lambda item: -item[1])[:HOT_LINES]
    return Estimate(
        model_version=MODEL_VERSION,
        target=target,
        latency_ns=makespan,
        busy_ns=plan.busy_ns,
        instructions=plan.instructions,
        bound_by="dependencies" if stalled else busiest,
        counters=summary,
        hot_lines=[
            {"line": line, "engine": engine, "busy_ms": ns * 1e-6}
            for (line, engine), ns in hot
            if ns > 0
        ],
        schedule_seconds=time.perf_counter() - started,
    )
