"""Profiling in a search: what it needs (a `Profiler`: the daemon provides one that runs the
nkibench backends), the event that records a profile, and the search's profiles, each measured
once.

A profile is recorded on its job's stream under the job id (agents/search/ids.py), so a
resumed search reads a kernel's profile back instead of measuring it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agents.search import ids
from agents.search.record import SearchRecord
from agents.search.selection import Measured
from events.catalog import (
    CandidateGenerated,
    ProfilePurpose,
    ProfileRecorded,
    RejectReason,
    WorkloadProfile,
)
from nkibench.result import KernelResult
from nkibench.task.spec import TaskSpec

__all__ = ["Kernel", "Profiler", "Profiles", "profile_event"]

UNPROFILED: frozenset[RejectReason] = frozenset({"duplicate", "no_code", "truncated"})
"""Rejections made before profiling: a duplicate was measured as its first copy, and the
others hold no kernel worth running."""


class Profiler(Protocol):
    backend_name: str
    target: str
    shapes: str

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        """Check and time `source` on `task`; `job_id` names the work (a queue keys on it);
        `baseline_kernel_s`, the task's baseline kernel's run on this host, sets the kernel's
        time limit where the task sets none (nkibench.harness.kernel_limits)."""
        ...


@dataclass(frozen=True)
class Kernel:
    """A candidate with its source and its profile (None: rejected before profiling)."""

    event: CandidateGenerated
    source: str
    profile: ProfileRecorded | None

    @property
    def measured(self) -> Measured | None:
        """Its latency, if it was profiled and correct, and the latency is a positive, finite
        number (the harness refuses any other since; a log recorded before may hold one, and a
        selection dividing by it would fail the search for ever)."""
        p = self.profile
        if p is None or not p.correct or p.latency_ms is None:
            return None
        if not (math.isfinite(p.latency_ms) and p.latency_ms > 0):
            return None
        return Measured(self.event.candidate_id, p.latency_ms)


class Profiles:
    """The profiles of one search: read back from the log, else measured and recorded; each
    kept in memory once seen, as the loop asks for the same kernels every iteration."""

    def __init__(
        self,
        *,
        task: TaskSpec,
        record: SearchRecord,
        profiler: Profiler,
        check_stop: Callable[[], None],
    ) -> None:
        self.task = task
        self.record = record
        self.profiler = profiler
        self.check_stop = check_stop
        self._seen: dict[tuple[str, ProfilePurpose], ProfileRecorded] = {}

    def _known(self, candidate: str, purpose: ProfilePurpose) -> ProfileRecorded | None:
        """The profile seen in this search, else the one its job recorded, else None."""
        seen = self._seen.get((candidate, purpose))
        if seen is not None:
            return seen
        job_id = ids.profile_job_id(self.record.search_id, candidate, purpose)
        recorded = list(self.record.recorder.of_type(f"job:{job_id}", ProfileRecorded))
        return recorded[-1] if recorded else None

    def profile(self, candidate: str, purpose: ProfilePurpose) -> ProfileRecorded:
        profile = self._known(candidate, purpose)
        if profile is None:
            job_id = ids.profile_job_id(self.record.search_id, candidate, purpose)
            self.check_stop()
            source = self.record.source(candidate)
            result = self.profiler.profile(
                self.task,
                source,
                job_id=job_id,
                baseline_kernel_s=None if purpose == "baseline" else self._baseline_kernel_s(),
            )
            profile = profile_event(
                result,
                job_id=job_id,
                purpose=purpose,
                candidate_id=None if purpose == "baseline" else candidate,
                kernel_hash=self.record.index.candidates[candidate].kernel_hash,
                task_source_hash=self.task.content_hash,
            )
            # a job's key is its id
            self.record.recorder.record(f"job:{job_id}", profile, key=job_id)
        self._seen[candidate, purpose] = profile
        return profile

    def _baseline_kernel_s(self) -> float | None:
        """What the search's baseline kernel's run cost this host, once it was profiled
        correct: with the same profiler, so on the same backend, target and shapes."""
        baseline_id = ids.baseline_id(self.record.search_id)
        if baseline_id not in self.record.index.candidates:
            return None
        baseline = self._known(baseline_id, "baseline")
        if baseline is None or not baseline.correct or not baseline.kernel_seconds:
            return None
        return baseline.kernel_seconds

    def kernel(self, candidate: str) -> Kernel:
        """The candidate, profiled unless it was rejected before profiling."""
        index = self.record.index
        event = index.candidates[candidate]
        rejected = index.rejected.get(candidate)
        profile = None
        if rejected is None or rejected.reason not in UNPROFILED:
            purpose: ProfilePurpose = "baseline" if event.origin == "baseline" else "candidate"
            profile = self.profile(candidate, purpose)
        return Kernel(event, self.record.source(candidate), profile)


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
        dialect=result.dialect,
        autotuned=result.autotuned,
        workloads=[WorkloadProfile.model_validate(w) for w in result.workloads],
        kernel_seconds=_host_seconds(result.kernel_seconds),
        gpu_kernels=result.gpu_kernels,
        counters_unavailable=result.counters_unavailable,
    )


def _host_seconds(seconds: float | None) -> float | None:
    """A wall time worth keeping: finite and not negative (a clock's oddity is no time)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds
