"""Profiling candidates through the nkibench backends, and the event that records it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from events.catalog import ProfilePurpose, ProfileRecorded
from nkibench.backend import Backend, NkisimBackend
from nkibench.harness import profile_kernel
from nkibench.result import KernelResult
from nkibench.task import TaskSpec

__all__ = ["LocalProfiler", "Profiler", "profile_event"]


class Profiler(Protocol):
    backend_name: str
    target: str
    shapes: str

    def profile(self, task: TaskSpec, source: str) -> KernelResult: ...


@dataclass
class LocalProfiler:
    """Profiles on this host, one kernel at a time, in the backend's sandboxed children."""

    make_backend: Callable[[], Backend] = NkisimBackend
    target: str = "trn1"
    shapes: str = "small"
    seeds: tuple[int, ...] | None = None
    workdir: Path | None = None

    @property
    def backend_name(self) -> str:
        return self.make_backend().name

    def profile(self, task: TaskSpec, source: str) -> KernelResult:
        return profile_kernel(
            task,
            backend=self.make_backend(),
            kernel_source=source,
            shapes=self.shapes,
            seeds=self.seeds,
            target=self.target,
            workdir=self.workdir,
        )


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
        correct=result.correct and result.latency_ms is not None,
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
