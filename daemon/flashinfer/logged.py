"""A task's kernel exported with what the log recorded of it: its latest correct timing on the
task's current revision (each workload's own latency where the profile holds them), as
`accelopt export --format flashinfer` and the daemon's Trace Apply folder
(daemon.flashinfer.trace_folder) both write it. Imports flashinfer_bench (and torch): load it
where that is needed only."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from daemon.flashinfer.export import Measurement, export_flashinfer
from events.catalog import ProfileRecorded
from events.codec import decode
from nkibench.dialects import get_dialect
from nkibench.task.spec import TaskSpec, defined_function
from store.base import EventStore
from store.errors import BlobNotFound
from store.projections.library import LibraryProjection
from store.projections.runner import replay

__all__ = ["chosen_kernel", "export_logged", "per_workload", "timed_profiles"]

LIBS = ("torch", "triton", "cuda", "driver", "python")
"""The fingerprint's entries a Trace's environment lists as its libraries."""


def timed_profiles(store: EventStore | None, task: str) -> list[tuple[str, ProfileRecorded]]:
    """The task's correct, timed profiles in log order, each with when it was recorded."""
    found: list[tuple[str, ProfileRecorded]] = []
    if store is None:
        return found
    for stored in store.read_all(types=[ProfileRecorded.type_name()]):
        event = decode(stored).event
        if (
            isinstance(event, ProfileRecorded)
            and event.task == task
            and event.correct
            and event.latency_ms is not None
            and event.latency_kind is not None
        ):
            found.append((stored.recorded_at.isoformat(), event))
    return found


def _measurement(recorded_at: str, profile: ProfileRecorded) -> Measurement:
    assert profile.latency_ms is not None
    assert profile.latency_kind is not None
    fingerprint = profile.fingerprint
    return Measurement(
        latency_ms=profile.latency_ms,
        latency_kind=profile.latency_kind,
        hardware=fingerprint.get("gpu") or profile.target,
        backend=profile.backend,
        target=profile.target,
        recorded_at=recorded_at,
        job_id=profile.job_id,
        libs={k: fingerprint[k] for k in LIBS if k in fingerprint},
        reference_ms=profile.latency_stats.get("eager_p50"),
        per_workload=per_workload(profile),
    )


def per_workload(profile: ProfileRecorded) -> dict[str, tuple[float, str]]:
    """Each correct workload's own latency, where the profile holds them (`workloads`, from
    ProfileRecorded's schema version 5 on: a task's workloads.jsonl profiled on all of them)."""
    return {
        outcome.uuid: (outcome.latency_ms, outcome.latency_kind)
        for outcome in profile.workloads
        if outcome.correct and outcome.latency_ms is not None and outcome.latency_kind
    }


def chosen_kernel(
    store: EventStore | None, task: TaskSpec, kernel_file: Path | None
) -> tuple[str, str]:
    """The kernel to export and where it came from: --kernel, else the promoted kernel, else
    the fastest correct kernel profiled for the task, else the task's own kernel.py."""
    if kernel_file is not None:
        return kernel_file.read_text(encoding="utf-8"), str(kernel_file)
    if store is None:
        return task.kernel_source, f"{task.path / 'kernel.py'}"
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    promoted = library.promoted().get(task.name)
    if promoted is not None:
        return store.get_text(promoted.kernel_hash), f"promoted candidate {promoted.candidate_id}"
    timed = sorted(
        (p for _, p in timed_profiles(store, task.name) if p.task_source_hash == task.content_hash),
        key=lambda p: p.latency_ms or 0.0,
    )
    for profile in timed:
        try:
            source = store.get_text(profile.kernel_hash)
        except BlobNotFound:  # a profile whose source the log does not hold
            continue
        return source, f"profiled kernel {profile.kernel_hash[:12]}"
    return task.kernel_source, f"{task.path / 'kernel.py'}"


def export_logged(
    store: EventStore | None, task: TaskSpec, source: str, origin: str, out: Path
) -> dict[str, Any]:
    """Export `source` as the task's Solution into the dataset folder `out`, with a Trace per
    workload its latest timing on this revision of the task measured; the summary."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    timed = [
        (at, p)
        for at, p in timed_profiles(store, task.name)
        if p.kernel_hash == digest and p.task_source_hash == task.content_hash
    ]
    rules = ", ".join(f"{name}: {t.describe()}" for name, t in task.outputs.items())
    summary = export_flashinfer(
        task_dir=task.path,
        constants=task.constants,
        rule=f"accelopt's check ({rules or f'relative L2 <= {task.rel_tol:g}'})",
        kernel=source,
        # a candidate names its entry as the task's, or as its language's (run)
        function=defined_function(
            source, (task.kernel_function, *get_dialect(task.dialect).entry_points)
        )
        or task.kernel_function,
        measured=_measurement(*timed[-1]) if timed else None,
        solution_name=f"accelopt_{task.name}_{digest[:12]}",
        description=f"accelopt's kernel for {task.name} ({origin})",
        out=out,
    )
    summary["kernel"] = origin
    return summary
