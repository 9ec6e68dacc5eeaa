"""The nkisim backend, parent side: nkisim interprets the kernel on the CPU, and the cost
model estimates its latency from the instruction trace (every latency is `estimated`)."""

from __future__ import annotations

import platform
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from nkibench.backend import (
    COMPARE_PHASE,
    REFERENCE_PHASE,
    Phase,
    Session,
    refuse_other_dialects,
)
from nkibench.cost import MODEL_VERSION
from nkibench.policy.provenance import package_version
from nkibench.policy.roofline import PEAKS, Peaks
from nkibench.result import KernelResult
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.task.spec import TaskSpec

__all__ = ["KERNEL_PHASE", "NkisimBackend", "apply_estimate"]

KERNEL_PHASE = Phase("nkibench.backends.nkisim.phases:kernel_phase", "kernel")


def apply_estimate(result: KernelResult, estimate: dict[str, Any]) -> None:
    result.latency_ms = estimate["latency_ms"]
    result.latency_kind = "estimated"
    result.model_version = estimate["model_version"]
    result.bound_by = estimate["bound_by"]
    result.counters = estimate["counters"]
    result.engines = estimate["engines"]
    result.hot_lines = estimate["hot_lines"]
    result.schedule_seconds = estimate["schedule_seconds"]


class NkisimBackend:
    """nkisim interprets the kernel; the cost model estimates its latency from the trace."""

    name = "nkisim"
    dialects = frozenset({"nki", "nki-legacy"})
    phases = MappingProxyType(
        {"reference": REFERENCE_PHASE, "kernel": KERNEL_PHASE, "compare": COMPARE_PHASE}
    )
    fresh_inputs = False

    def __init__(
        self, *, trace_path: Path | None = None, isolation: Isolation | None = None
    ) -> None:
        self.trace_path = trace_path
        self.isolation = isolation or Isolation.detect()

    def environment(self) -> dict[str, str]:
        return {}

    def mounts(self) -> Mounts:
        return Mounts()

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        return Limits(timeout_s=task.timeout_for(shapes), memory_mb=task.memory_mb, threads=threads)

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        return {
            "estimate": profile,
            "trace_path": str(self.trace_path) if self.trace_path else None,
        }

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        apply_estimate(session.result, kernel["estimate"])
        capacity = kernel.get("capacity") or {}
        if "sbuf_peak_bytes" in capacity:  # what the estimate's caveats are judged by
            session.result.counters["sbuf_peak_bytes_per_partition"] = capacity["sbuf_peak_bytes"]
            session.result.counters["sbuf_bytes_per_partition"] = capacity["sbuf_limit_bytes"]

    def peaks(self, target: str) -> Peaks | None:
        return PEAKS[target]

    def refusal(self, dialect: str) -> str | None:
        return refuse_other_dialects(self, dialect)

    def resolve_target(self, requested: str) -> str:
        return requested

    def fingerprint(self, target: str) -> dict[str, str]:
        return {
            "backend": self.name,
            "target": target,
            "latency_kind": "estimated",
            "cost_model": MODEL_VERSION,
            "accelopt": package_version("accelopt"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "ml_dtypes": package_version("ml_dtypes"),
            "machine": platform.machine(),
        }
