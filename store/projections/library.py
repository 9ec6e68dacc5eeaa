"""The `library` projection: every task the daemon knows, its revision, state, and the
baseline, best and promoted latency per platform (backend:target); each task's current
revision with the kernels promoted for it; and the hash last recorded per task folder.

Latencies are kept per platform because a measured latency (neuron, triton) and an
estimated one (nkisim) are different quantities and must never be compared.

This is the one fold of the task lifecycle (source changes, invalid saves, removals,
promotions, demotions): the library folder, `accelopt export`, re-verification and the
watcher's memory of what it recorded all read it, so they cannot disagree about which
revision is current or whether a promotion still stands.

A task name belongs to the folder that claimed it first, until that folder's removal: a
record of another folder under a name that is held is kept for that folder (`folders`,
`folder_records`) but changes nothing of the task. The watcher refuses such claims before
they are recorded; this rule keeps logs written before it did (or by anything else) from
handing a task, its library kernel and its export to whichever folder wrote last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from events.base import Event
from events.catalog import (
    DaemonStarted,
    DaemonStopped,
    KernelDemoted,
    KernelPromoted,
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    TaskInvalid,
    agent_of_job,
)
from events.envelope import Envelope

__all__ = [
    "FolderRecord",
    "LibraryProjection",
    "LibraryState",
    "PlatformRecord",
    "Promotion",
    "Revision",
    "TaskRecord",
    "TaskState",
]

FolderKind = Literal["source", "invalid", "removed"]
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
    """The promotion as this record shows it; an invalid save starts a new record without
    it. What the library holds, which outlives an invalid save, is `Revision.promotions`."""
    promoted_ms: float | None = None
    agent_profiles: int = 0
    """Profiles of outside agents' candidates (`accelopt mcp`) among `profiles`."""
    agent_candidates: dict[str, str] = field(default_factory=dict)
    """An outside agent's correct candidate → its MCP client."""
    best_by: str | None = None
    """The MCP client whose candidate is the best; None: the daemon's (or the user's)."""
    promoted_by: str | None = None
    """The MCP client whose candidate is promoted; None: the daemon's."""

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


@dataclass(frozen=True, slots=True)
class Promotion:
    """A kernel promoted for its task's current revision and not demoted since, with all
    its provenance header says (`daemon/coordinator/library.py:export_text`), so that nothing
    needs to read the log again to write the library folder or export it."""

    task: str
    candidate_id: str
    kernel_hash: str
    task_source_hash: str
    backend: str
    target: str
    latency_ms: float
    latency_kind: str
    baseline_latency_ms: float
    speedup: float
    position: int
    """The promotion's position in the log."""
    recorded_at: str


@dataclass(slots=True)
class Revision:
    """A task's current revision: the last one of its folder that loaded.

    An invalid save does not replace it (the folder may go back to it, and its search and
    promotions stand until a loadable revision or the removal ends it); a new hash does,
    taking its promotions with it; the same hash again keeps them."""

    task: str
    task_dir: str
    content_hash: str
    files: dict[str, str]
    """File name → blob sha256, as recorded: what `daemon/revisions.py:materialize` needs."""
    dialect: str | None = None
    """The kernel's language as recorded (None: recorded before dialects were)."""
    promotions: dict[str, Promotion] = field(default_factory=dict)
    """Platform (backend:target) → the kernel promoted there for this revision."""

    def source_changed(self) -> KernelSourceChanged:
        """The event that recorded this revision, as its readers take it."""
        return KernelSourceChanged(
            task=self.task,
            task_dir=self.task_dir,
            content_hash=self.content_hash,
            files=dict(self.files),
            dialect=self.dialect,
        )


@dataclass(frozen=True, slots=True)
class FolderRecord:
    """The last record of one task folder: what the watcher compares the folder with when it
    starts, and what the folder's next record names as the one before it."""

    task: str
    """The name it was recorded under."""
    kind: FolderKind
    content_hash: str | None
    """None for a removal."""
    position: int
    problem: str | None = None
    """Why the folder is invalid (kind "invalid")."""


@dataclass(slots=True)
class DaemonRecord:
    """The last daemon started on a host, and whether it stopped (a SIGKILL leaves it
    "running" until the next start)."""

    pid: int
    version: str
    backend: str | None
    sandbox: str
    started_at: str
    stopped_at: str | None = None
    stop_reason: str | None = None


@dataclass(slots=True)
class LibraryState:
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    revisions: dict[str, Revision] = field(default_factory=dict)
    """Task → its current revision; a removed task has none."""
    folders: dict[str, str | None] = field(default_factory=dict)
    """Task folder → the content hash last recorded for it, loadable or not (None: recorded
    as removed). The watcher starts from it, so a restart records only what changed."""
    daemons: dict[str, DaemonRecord] = field(default_factory=dict)
    """Host → its last daemon (status shows what its kernels run in)."""
    folder_records: dict[str, FolderRecord] = field(default_factory=dict)
    """Task folder → its last record, in full (`folders` is its hash alone)."""

    def owners(self) -> dict[str, str]:
        """Task name → the folder that holds it (every name not removed)."""
        return {name: task.task_dir for name, task in self.tasks.items() if task.state != "removed"}

    def promoted(self) -> dict[str, Promotion]:
        """Task → its library kernel: the newest promotion still standing for its current
        revision (one kernel per task, whichever platform promoted it)."""
        return {
            task: max(revision.promotions.values(), key=lambda p: p.position)
            for task, revision in sorted(self.revisions.items())
            if revision.promotions
        }


Handler = Callable[[LibraryState, Envelope[Any]], None]


class LibraryProjection:
    """Folds task-folder, profile and promotion events into the library."""

    name = "library"
    version = "6-agents"
    """Bumped for current revisions, their promotions and folder hashes; for folder records
    and names held by the folder that claimed them first; for the daemons; for outside agents
    (`accelopt mcp`: whose best and promoted kernels are an agent's). Never a bare
    number, which tests use to stand for "some other version"."""

    def __init__(self) -> None:
        self._handlers: dict[type[Event], Handler] = {
            KernelSourceChanged: self._source_changed,
            TaskInvalid: self._invalid,
            KernelRemoved: self._removed,
            ProfileRecorded: self._profiled,
            KernelPromoted: self._promoted,
            KernelDemoted: self._demoted,
            DaemonStarted: self._daemon_started,
            DaemonStopped: self._daemon_stopped,
        }

    def initial(self) -> LibraryState:
        return LibraryState()

    def apply(self, state: LibraryState, envelope: Envelope[Event]) -> LibraryState:
        handler = self._handlers.get(type(envelope.event))
        if handler is not None:
            handler(state, envelope)
        return state

    def dump(self, state: LibraryState) -> dict[str, Any]:
        return {
            "tasks": {name: asdict(task) for name, task in sorted(state.tasks.items())},
            "revisions": {name: asdict(rev) for name, rev in sorted(state.revisions.items())},
            "folders": dict(sorted(state.folders.items())),
            "daemons": {host: asdict(d) for host, d in sorted(state.daemons.items())},
            "folder_records": {
                folder: asdict(record) for folder, record in sorted(state.folder_records.items())
            },
        }

    def load(self, data: dict[str, Any]) -> LibraryState:
        tasks = {}
        for name, raw in data["tasks"].items():
            platforms = {k: PlatformRecord(**v) for k, v in raw["platforms"].items()}
            tasks[name] = TaskRecord(**{**raw, "platforms": platforms})
        revisions = {}
        for name, raw in data["revisions"].items():
            promotions = {k: Promotion(**v) for k, v in raw["promotions"].items()}
            revisions[name] = Revision(
                **{**raw, "files": dict(raw["files"]), "promotions": promotions}
            )
        daemons = {host: DaemonRecord(**raw) for host, raw in data["daemons"].items()}
        records = {k: FolderRecord(**v) for k, v in data["folder_records"].items()}
        return LibraryState(tasks, revisions, dict(data["folders"]), daemons, records)

    # --- the daemons ------------------------------------------------------------------------

    @staticmethod
    def _daemon_started(state: LibraryState, envelope: Envelope[DaemonStarted]) -> None:
        e = envelope.event
        state.daemons[e.host] = DaemonRecord(
            e.pid, e.version, e.backend, e.sandbox, envelope.recorded_at.isoformat()
        )

    @staticmethod
    def _daemon_stopped(state: LibraryState, envelope: Envelope[DaemonStopped]) -> None:
        e = envelope.event
        daemon = state.daemons.get(e.host)
        if daemon is not None and daemon.pid == e.pid:
            daemon.stopped_at = envelope.recorded_at.isoformat()
            daemon.stop_reason = e.reason

    # --- handlers ----------------------------------------------------------------------------

    @staticmethod
    def _touch(task: TaskRecord, envelope: Envelope[Any]) -> None:
        task.updated_position = envelope.position
        task.updated_at = envelope.recorded_at.isoformat()

    @staticmethod
    def _folder(
        state: LibraryState,
        envelope: Envelope[Any],
        kind: FolderKind,
        content_hash: str | None,
        problem: str | None = None,
    ) -> bool:
        """Keep the folder's record; True if the folder may hold the task's name (no other
        folder holds it)."""
        e = envelope.event
        state.folders[e.task_dir] = content_hash
        state.folder_records[e.task_dir] = FolderRecord(
            e.task, kind, content_hash, envelope.position, problem
        )
        holder = state.tasks.get(e.task)
        return holder is None or holder.state == "removed" or holder.task_dir == e.task_dir

    def _source_changed(self, state: LibraryState, envelope: Envelope[KernelSourceChanged]) -> None:
        e = envelope.event
        if not self._folder(state, envelope, "source", e.content_hash):
            return
        task = state.tasks.get(e.task)
        revision = task.revision + 1 if task is not None else 1
        task = TaskRecord(e.task, e.task_dir, "stale", e.content_hash, revision)
        state.tasks[e.task] = task
        self._touch(task, envelope)
        current = state.revisions.get(e.task)
        if current is None or current.content_hash != e.content_hash:
            state.revisions[e.task] = Revision(
                e.task, e.task_dir, e.content_hash, dict(e.files), e.dialect
            )
        else:  # the same revision seen again: its promotions stand
            current.task_dir, current.files, current.dialect = e.task_dir, dict(e.files), e.dialect

    def _invalid(self, state: LibraryState, envelope: Envelope[TaskInvalid]) -> None:
        e = envelope.event
        if not self._folder(state, envelope, "invalid", e.content_hash, e.message):
            return
        task = state.tasks.get(e.task)
        revision = task.revision + 1 if task is not None else 1
        where = f"{e.file}: " if e.file else ""
        task = TaskRecord(
            e.task, e.task_dir, "invalid", e.content_hash, revision, error=where + e.message
        )
        state.tasks[e.task] = task
        self._touch(task, envelope)

    def _removed(self, state: LibraryState, envelope: Envelope[KernelRemoved]) -> None:
        e = envelope.event
        task = state.tasks.get(e.task)
        self._folder(state, envelope, "removed", None)
        if task is None or task.task_dir != e.task_dir:
            return  # a folder that never held the name: the task is not its to end
        state.revisions.pop(e.task, None)
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
        agent = agent_of_job(e.job_id)
        latency = e.latency_ms if e.correct else None
        if agent is not None:
            platform.agent_profiles += 1
            if latency is not None and e.candidate_id is not None:
                platform.agent_candidates[e.candidate_id] = agent
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
                    platform.best_by = agent
        elif (
            e.purpose == "candidate"
            and latency is not None
            and (platform.best_ms is None or latency < platform.best_ms)
        ):
            platform.best_ms, platform.best_candidate_id = latency, e.candidate_id
            platform.latency_kind = e.latency_kind
            platform.best_by = agent
        self._touch(task, envelope)

    def _promoted(self, state: LibraryState, envelope: Envelope[KernelPromoted]) -> None:
        e = envelope.event
        self._stand(state, envelope)
        task = self._current(state, e.task, e.task_source_hash)
        if task is None:
            return
        platform = task.platforms.setdefault(
            f"{e.backend}:{e.target}", PlatformRecord(e.backend, e.target)
        )
        platform.promoted_candidate_id = e.candidate_id
        platform.promoted_ms = e.latency_ms
        platform.promoted_by = platform.agent_candidates.get(e.candidate_id)
        self._touch(task, envelope)

    @staticmethod
    def _stand(state: LibraryState, envelope: Envelope[KernelPromoted]) -> None:
        """Keep the promotion with its revision if it is for the current one: a promotion
        of an older revision, or of a removed task, is moot."""
        e = envelope.event
        revision = state.revisions.get(e.task)
        if revision is None or revision.content_hash != e.task_source_hash:
            return
        revision.promotions[f"{e.backend}:{e.target}"] = Promotion(
            task=e.task,
            candidate_id=e.candidate_id,
            kernel_hash=e.kernel_hash,
            task_source_hash=e.task_source_hash,
            backend=e.backend,
            target=e.target,
            latency_ms=e.latency_ms,
            latency_kind=e.latency_kind,
            baseline_latency_ms=e.baseline_latency_ms,
            speedup=e.speedup,
            position=envelope.position,
            recorded_at=envelope.recorded_at.isoformat(),
        )

    @staticmethod
    def _withdraw(state: LibraryState, name: str, platform: str, candidate_id: str) -> None:
        """A demotion ends the promotion of that candidate there; any other stands."""
        revision = state.revisions.get(name)
        standing = revision.promotions.get(platform) if revision is not None else None
        if revision is not None and standing is not None and standing.candidate_id == candidate_id:
            del revision.promotions[platform]

    def _demoted(self, state: LibraryState, envelope: Envelope[KernelDemoted]) -> None:
        e = envelope.event
        key = f"{e.backend}:{e.target}"
        self._withdraw(state, e.task, key, e.candidate_id)
        task = state.tasks.get(e.task)
        platform = task.platforms.get(key) if task else None
        if task is None or platform is None or platform.promoted_candidate_id != e.candidate_id:
            return
        platform.promoted_candidate_id = None
        platform.promoted_ms = None
        platform.promoted_by = None
        if platform.best_candidate_id == e.candidate_id:
            # The best latency came from a kernel that no longer verifies: fall back to the
            # baseline; later candidates raise it again.
            platform.best_ms, platform.best_candidate_id = platform.baseline_ms, None
            platform.best_by = None
        self._touch(task, envelope)
