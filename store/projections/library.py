"""The `library` projection: every task the daemon knows, its revision, state, and the
baseline, best and promoted latency per platform (backend:target).

Latencies are kept per platform because a measured latency (neuron, triton) and an
estimated one (nkisim) are different quantities and must never be compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from events.base import Event
from events.catalog import (
    KernelDemoted,
    KernelPromoted,
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    TaskInvalid,
)
from events.envelope import Envelope

__all__ = ["LibraryProjection", "LibraryState", "PlatformRecord", "TaskRecord", "TaskState"]

TaskState = Literal["stale", "invalid", "failing", "optimizing", "removed"]
"""stale: a new revision awaits its baseline; failing: the user's own kernel does not pass;
optimizing: baselined, search under way; invalid: the folder does not load."""


@dataclass(slots=True)
class PlatformRecord:
    """What one platform (backend:target) knows about the task's current revision."""

    backend: str
    target: str
    latency_kind: str | None = None
    baseline_ms: float | None = None
    best_ms: float | None = None
    best_candidate_id: str | None = None
    """None while the user's own kernel is the best."""
    profiles: int = 0
    failed_profiles: int = 0
    promoted_candidate_id: str | None = None
    promoted_ms: float | None = None

    @property
    def speedup(self) -> float | None:
        if self.baseline_ms is None or not self.best_ms:
            return None
        return self.baseline_ms / self.best_ms


@dataclass(slots=True)
class TaskRecord:
    task: str
    task_dir: str
    state: TaskState
    source_hash: str | None
    revision: int = 0
    error: str | None = None
    platforms: dict[str, PlatformRecord] = field(default_factory=dict)
    updated_position: int = 0
    updated_at: str | None = None


@dataclass(slots=True)
class LibraryState:
    tasks: dict[str, TaskRecord] = field(default_factory=dict)


Handler = Callable[[LibraryState, Envelope[Any]], None]


class LibraryProjection:
    """Folds task-folder, profile and promotion events into the library."""

    name = "library"
    version = "1"

    def __init__(self) -> None:
        self._handlers: dict[type[Event], Handler] = {
            KernelSourceChanged: self._source_changed,
            TaskInvalid: self._invalid,
            KernelRemoved: self._removed,
            ProfileRecorded: self._profiled,
            KernelPromoted: self._promoted,
            KernelDemoted: self._demoted,
        }

    def initial(self) -> LibraryState:
        return LibraryState()

    def apply(self, state: LibraryState, envelope: Envelope[Event]) -> LibraryState:
        handler = self._handlers.get(type(envelope.event))
        if handler is not None:
            handler(state, envelope)
        return state

    def dump(self, state: LibraryState) -> dict[str, Any]:
        return {"tasks": {name: asdict(task) for name, task in sorted(state.tasks.items())}}

    def load(self, data: dict[str, Any]) -> LibraryState:
        tasks = {}
        for name, raw in data["tasks"].items():
            platforms = {k: PlatformRecord(**v) for k, v in raw["platforms"].items()}
            tasks[name] = TaskRecord(**{**raw, "platforms": platforms})
        return LibraryState(tasks)

    # --- handlers ----------------------------------------------------------------------------

    @staticmethod
    def _touch(task: TaskRecord, envelope: Envelope[Any]) -> None:
        task.updated_position = envelope.position
        task.updated_at = envelope.recorded_at.isoformat()

    def _source_changed(self, state: LibraryState, envelope: Envelope[KernelSourceChanged]) -> None:
        e = envelope.event
        task = state.tasks.get(e.task)
        revision = task.revision + 1 if task is not None else 1
        task = TaskRecord(e.task, e.task_dir, "stale", e.content_hash, revision)
        state.tasks[e.task] = task
        self._touch(task, envelope)

    def _invalid(self, state: LibraryState, envelope: Envelope[TaskInvalid]) -> None:
        e = envelope.event
        task = state.tasks.get(e.task)
        revision = task.revision + 1 if task is not None else 1
        where = f"{e.file}: " if e.file else ""
        task = TaskRecord(
            e.task, e.task_dir, "invalid", e.content_hash, revision, error=where + e.message
        )
        state.tasks[e.task] = task
        self._touch(task, envelope)

    def _removed(self, state: LibraryState, envelope: Envelope[KernelRemoved]) -> None:
        task = state.tasks.get(envelope.event.task)
        if task is not None:
            task.state = "removed"
            self._touch(task, envelope)

    def _current(self, state: LibraryState, name: str, source_hash: str) -> TaskRecord | None:
        """The task if the work is for its current revision; work for an older one is moot."""
        task = state.tasks.get(name)
        if task is None or task.source_hash != source_hash or task.state == "removed":
            return None
        return task

    def _profiled(self, state: LibraryState, envelope: Envelope[ProfileRecorded]) -> None:
        e = envelope.event
        task = self._current(state, e.task, e.task_source_hash)
        if task is None:
            return
        key = f"{e.backend}:{e.target}"
        platform = task.platforms.setdefault(key, PlatformRecord(e.backend, e.target))
        platform.profiles += 1
        latency = e.latency_ms if e.correct else None
        if latency is None:
            platform.failed_profiles += 1
        if e.purpose == "baseline":
            if latency is None:
                task.state = "failing"
                task.error = f"{e.error_kind or 'failed'}: {e.error_message or 'no message'}"
            else:
                platform.baseline_ms = latency
                platform.latency_kind = e.latency_kind
                task.state, task.error = "optimizing", None
                if platform.best_ms is None or latency < platform.best_ms:
                    platform.best_ms, platform.best_candidate_id = latency, None
        elif (
            e.purpose == "candidate"
            and latency is not None
            and (platform.best_ms is None or latency < platform.best_ms)
        ):
            platform.best_ms, platform.best_candidate_id = latency, e.candidate_id
            platform.latency_kind = e.latency_kind
        self._touch(task, envelope)

    def _promoted(self, state: LibraryState, envelope: Envelope[KernelPromoted]) -> None:
        e = envelope.event
        task = self._current(state, e.task, e.task_source_hash)
        if task is None:
            return
        platform = task.platforms.setdefault(
            f"{e.backend}:{e.target}", PlatformRecord(e.backend, e.target)
        )
        platform.promoted_candidate_id = e.candidate_id
        platform.promoted_ms = e.latency_ms
        self._touch(task, envelope)

    def _demoted(self, state: LibraryState, envelope: Envelope[KernelDemoted]) -> None:
        e = envelope.event
        task = state.tasks.get(e.task)
        platform = task.platforms.get(f"{e.backend}:{e.target}") if task else None
        if task is None or platform is None or platform.promoted_candidate_id != e.candidate_id:
            return
        platform.promoted_candidate_id = None
        platform.promoted_ms = None
        if platform.best_candidate_id == e.candidate_id:
            # The best latency came from a kernel that no longer verifies: fall back to the
            # baseline; later candidates raise it again.
            platform.best_ms, platform.best_candidate_id = platform.baseline_ms, None
        self._touch(task, envelope)
