"""Which Triton solution of a definition becomes the task's baseline kernel.

By its traces: a solution's score is its PASSED evaluations, one per workload (a workload
traced several times counts its lowest latency). Solutions that pass on more workloads come
first (a fast solution that fails half the workloads is no baseline), then the lower mean
latency over the workloads they pass, then the name (so ties are decided the same way every
time). A solution without traces is chosen only where no solution passed anywhere (its
speed is unknown; provenance says so); one whose every trace failed is never chosen. The
importer takes the first of this order whose source makes a kernel.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ranked", "rank"]

PASSED = "PASSED"


@dataclass(frozen=True)
class Ranked:
    solution: Any
    """flashinfer_bench's Solution."""
    latency_ms: dict[str, float] = field(default_factory=dict)
    """Workload uuid -> its best PASSED latency."""
    traces: list[Any] = field(default_factory=list)
    """Every trace of the solution (flashinfer_bench's Trace)."""

    @property
    def mean_ms(self) -> float | None:
        return sum(self.latency_ms.values()) / len(self.latency_ms) if self.latency_ms else None

    @property
    def standing(self) -> str:
        if self.latency_ms:
            return "passed"
        return "failed" if self.traces else "untraced"

    def summary(self) -> dict[str, Any]:
        return {
            "solution": self.solution.name,
            "standing": self.standing,
            "workloads_passed": len(self.latency_ms),
            "mean_latency_ms": self.mean_ms,
            "traces": len(self.traces),
        }


def _score(traces: Iterable[Any]) -> dict[str, float]:
    best: dict[str, float] = {}
    for trace in traces:
        evaluation = trace.evaluation
        if evaluation is None or evaluation.status.value != PASSED or not evaluation.performance:
            continue
        uuid, latency = trace.workload.uuid, float(evaluation.performance.latency_ms)
        best[uuid] = min(latency, best.get(uuid, latency))
    return best


def rank(solutions: Iterable[Any], traces: Iterable[Any]) -> list[Ranked]:
    """`solutions` (of one definition) best first by their `traces`; failed-only ones left out."""
    by_solution: dict[str, list[Any]] = {}
    for trace in traces:
        if trace.solution is not None:
            by_solution.setdefault(trace.solution, []).append(trace)
    ranked = []
    for solution in solutions:
        own = by_solution.get(solution.name, [])
        ranked.append(Ranked(solution, _score(own), own))
    passed = sorted(
        (r for r in ranked if r.standing == "passed"),
        key=lambda r: (-len(r.latency_ms), r.mean_ms, r.solution.name),
    )
    untraced = sorted(
        (r for r in ranked if r.standing == "untraced"), key=lambda r: r.solution.name
    )
    return passed + untraced
