"""What the search needs from profiling (a `Profiler`: the daemon provides one that runs the
nkibench backends), and the event that records a profile."""

from __future__ import annotations

from typing import Protocol

from events.catalog import ProfilePurpose, ProfileRecorded
from nkibench.result import KernelResult
from nkibench.task.spec import TaskSpec

__all__ = ["Profiler", "profile_event"]


class Profiler(Protocol):
    backend_name: str
    target: str
    shapes: str

    def profile(self, task: TaskSpec, source: str, *, job_id: str) -> KernelResult:
        """Check and time `source` on `task`; `job_id` names the work (a queue keys on it)."""
        ...


def profile_event(
    result: KernelResult,
    *,
    job_id: str,
    purpose: ProfilePurpose,
    candidate_id: str | None,
    kernel_hash: str,
    task_source_hash: str,
) -> ProfileRecorded:
    return ProfileRecorded(
        job_id=job_id,
        task=result.task,
        purpose=purpose,
        candidate_id=candidate_id,
        kernel_hash=kernel_hash,
        task_source_hash=task_source_hash,
        backend=result.backend,
        target=result.target,
        compiled=result.compiled,
        correct=result.correct,
        error_kind=result.error_kind,
        error_message=result.message or None,
        latency_ms=result.latency_ms,
        latency_kind=result.latency_kind,
        latency_stats=result.latency_stats,
        counters=result.counters,
        fingerprint=result.fingerprint,
        model_version=result.model_version,
        pct_of_peak=result.pct_of_peak,
        roofline_ms=result.roofline["time_ms"] if result.roofline else None,
        bound_by=result.bound_by,
        hot_lines=result.hot_lines,
        estimate_ms=(result.estimate or {}).get("latency_ms"),
    )
