"""The nkisim backend, parent side: nkisim interprets the kernel on the CPU in the kernel's
child, which writes the instruction trace; a child that never ran the kernel checks that trace
against the outputs and estimates it with the cost model (every latency is `estimated`)."""

from __future__ import annotations

import platform
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from nkibench.backend import (
    COMPARE_PHASE,
    REFERENCE_PHASE,
    Check,
    Phase,
    Session,
    refuse_other_dialects,
)
from nkibench.cost import MODEL_VERSION
from nkibench.errors import PhaseFailure
from nkibench.policy.provenance import package_version
from nkibench.policy.roofline import PEAKS, Peaks
from nkibench.result import KernelResult
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import Limits
from nkibench.sandbox.warm import WarmPool
from nkibench.task.spec import TaskSpec

__all__ = ["CHECK_PHASE", "KERNEL_PHASE", "NkisimBackend", "apply_estimate", "taken", "trace_check"]

KERNEL_PHASE = Phase(
    "nkibench.backends.nkisim.phases:kernel_phase", "kernel", reports_progress=True
)
CHECK_PHASE = Phase("nkibench.backends.nkisim.estimate:estimate_phase", "backend")


def apply_estimate(result: KernelResult, estimate: dict[str, Any]) -> None:
    result.latency_ms = estimate["latency_ms"]
    result.latency_kind = "estimated"
    result.model_version = estimate["model_version"]
    result.bound_by = estimate["bound_by"]
    result.counters = estimate["counters"]
    result.engines = estimate["engines"]
    result.hot_lines = estimate["hot_lines"]
    result.schedule_seconds = estimate["schedule_seconds"]


def trace_check(
    session: Session, out_dir: Path, kernel: dict[str, Any], *, estimate: bool
) -> Check:
    """The estimate phase on the trace a kernel run left in `out_dir` (`kernel`: that run's
    result): its counts, its capacity and (`estimate`) the cost model's estimate; a trace that
    does not cover the outputs, or is not one nkisim writes, fails the kernel."""
    request = {
        "out_dir": str(out_dir),
        "target": session.target,
        "outputs": kernel["seeds"][str(session.seeds[0])]["outputs"],
        "estimate": estimate,
    }
    return Check(CHECK_PHASE.entry, request, out_dir)


def taken(found: dict[str, Any]) -> dict[str, Any]:
    """The trace check's result, or its verdict on the kernel raised."""
    if not found["ok"]:
        raise PhaseFailure(found["kind"], found["message"])
    return found


class NkisimBackend:
    """nkisim interprets the kernel; the cost model estimates its latency from the trace."""

    name = "nkisim"
    dialects = frozenset({"nki", "nki-legacy"})
    phases = MappingProxyType(
        {
            "reference": REFERENCE_PHASE,
            "kernel": KERNEL_PHASE,
            "compare": COMPARE_PHASE,
            "check": CHECK_PHASE,
        }
    )
    fresh_inputs = False
    times_every_seed = False
    sentinel_outputs = True
    warm: WarmPool | None = None  # its children need no warm process: no torch to import

    def __init__(self, *, isolation: Isolation | None = None) -> None:
        self.isolation = isolation or Isolation.detect()

    def environment(self) -> dict[str, str]:
        return {}

    def mounts(self) -> Mounts:
        return Mounts()

    def limits(self, task: TaskSpec, shapes: str, threads: int) -> Limits:
        return Limits(
            timeout_s=task.timeout_for(shapes),
            memory_mb=task.memory_mb,
            disk_mb=task.disk_mb,
            threads=threads,
            adaptive=not task.declares_timeout(shapes),
        )

    def begin(self, session: Session, profile: bool) -> None:
        return None

    def kernel_request(self, session: Session, profile: bool) -> dict[str, Any]:
        return {}

    def trusted_check(
        self, session: Session, kernel: dict[str, Any], profile: bool
    ) -> Check | None:
        assert session.out_dir is not None
        check = trace_check(session, session.out_dir, kernel, estimate=profile)
        return replace(check, entry=self.phases["check"].entry)

    def verify(self, session: Session, found: dict[str, Any] | None, profile: bool) -> None:
        if found is None:
            raise PhaseFailure("measurement", "the kernel's trace was not checked")
        found = taken(found)
        result = session.result
        result.instructions = found["instructions"]
        result.engine_counts = found["engine_counts"]
        result.capacity = found["capacity"]
        session.trusted["estimate"] = found.get("estimate")

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        estimate = session.trusted.get("estimate")
        if estimate is None:
            raise PhaseFailure("measurement", "the trace was not estimated")
        apply_estimate(session.result, estimate)
        capacity = session.result.capacity
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
