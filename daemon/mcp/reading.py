"""The reading tools (list_tasks, get_task, lessons, history) and the task a tool names: what
accelopt knows, from the projections folded in this process (daemon.views.web.follow, which
writes nothing) and the log's blobs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agents.config import SearchConfig
from agents.memory import lesson_as_shown, shown_to_planner
from daemon.mcp.errors import Refusal
from daemon.mcp.models import (
    HistoryEntry,
    Latency,
    Lesson,
    PlatformSummary,
    TaskDetail,
    TaskSummary,
)
from daemon.revisions import materialize
from daemon.views.web.follow import Follower
from events.catalog import ProfileRecorded
from events.codec import decode
from nkibench.cost.caveats import caveats
from nkibench.task.names import name_problem
from nkibench.task.operators import operators as task_operators
from nkibench.task.spec import TaskSpec
from store.projections.library import PlatformRecord
from store.sql import SqlEventStore

__all__ = ["TaskReader", "latency", "profile_caveats"]


class TaskReader:
    def __init__(
        self,
        store: SqlEventStore,
        *,
        platform: str,
        target: str,
        revisions: Path,
        config: SearchConfig,
    ) -> None:
        """`platform` (backend:target) and `target`: the server's, whose latencies and lessons
        are shown; `revisions`: where tasks are rebuilt from the log."""
        self.store = store
        self.platform = platform
        self.target = target
        self.revisions = revisions
        self.config = config
        self.follower = Follower(store)
        self._tasks_lock = threading.Lock()

    def list_tasks(self) -> list[TaskSummary]:
        self.follower.catch_up()
        with self.follower.lock:
            library, report = self.follower.library, self.follower.report
            return [
                TaskSummary(
                    task=name,
                    dialect=(r.dialect if (r := library.revisions.get(name)) else None),
                    state=record.state,
                    error=record.error,
                    platforms=[
                        _platform(
                            key, p, report.tasks[name].best_pct if name in report.tasks else None
                        )
                        for key, p in sorted(record.platforms.items())
                    ],
                )
                for name, record in sorted(library.tasks.items())
            ]

    def get_task(self, name: str) -> TaskDetail:
        spec = self.task(name)
        with self.follower.lock:
            record = self.follower.library.tasks[name]
            revision = self.follower.library.revisions[name]
            platform = record.platforms.get(self.platform)
            best = platform.best_candidate_id if platform else None
            candidate = self.follower.report.candidates.get(best) if best else None
            pct = (
                self.follower.report.tasks[name].best_pct
                if name in self.follower.report.tasks
                else None
            )
            platforms = [_platform(k, p, pct) for k, p in sorted(record.platforms.items())]
        texts = {
            file: self.store.get_text(blob)
            for file, blob in sorted(revision.files.items())
            if file.endswith((".py", ".toml"))
        }
        return TaskDetail(
            task=name,
            dialect=spec.dialect,
            revision=spec.content_hash,
            files=texts,
            shapes={k: {n: float(v) for n, v in s.items()} for k, s in spec.shape_sets.items()},
            workloads=[f"w{i}" for i in range(len(spec.workloads))],
            seeds=list(spec.seeds),
            tolerance=spec.rel_tol,
            platforms=platforms,
            best_candidate_id=best,
            best_source=(
                self.store.get_text(candidate.source_blob)
                if candidate is not None and candidate.source_blob
                else None
            ),
            best_profile=self._latest_profile(name, best, spec.content_hash),
        )

    def lessons(self, name: str) -> list[Lesson]:
        spec = self.task(name)
        with self.follower.lock:
            items = shown_to_planner(
                self.follower.report.memory,
                task=name,
                operators=task_operators(spec.reference_source),
                target=self.target,
                dialect=spec.dialect,
                limit=self.config.memory_shown,
            )
        return [
            Lesson(
                item_id=item.item_id,
                task=item.task,
                title=item.title,
                text=lesson_as_shown(
                    item, self.store.get_text(item.summary_blob), dialect=spec.dialect
                ),
                speedup=item.speedup,
                provenance=item.provenance,
            )
            for item in items
        ]

    def candidate_of(self, name: str, candidate: str) -> None:
        """Refusal `unknown_candidate` unless `candidate` is one of the task's (a parent)."""
        with self.follower.lock:
            known = self.follower.report.candidates.get(candidate)
        if known is None or known.task != name:
            shown = candidate[:80]
            raise Refusal("unknown_candidate", f"{shown!r} is no candidate of {name} (history)")

    def history(self, name: str, limit: int) -> list[HistoryEntry]:
        self.task(name)
        with self.follower.lock:
            candidates = [c for c in self.follower.report.candidates.values() if c.task == name]
        candidates.sort(key=lambda c: c.position, reverse=True)
        return [
            HistoryEntry(
                candidate_id=c.candidate_id,
                origin=c.origin,
                agent=c.agent,
                session=c.search_id,
                parent_id=c.parent_id,
                fate=c.fate,
                reason=c.reason,
                latency=latency(c.latency_ms, c.latency_kind),
                position=c.position,
            )
            for c in candidates[:limit]
        ]

    def task(self, name: str) -> TaskSpec:
        """The task's current revision, rebuilt from the log; Refusal `task` for a name that
        is no task's (a path, say) or a task without a loadable revision."""
        problem = name_problem(name)
        if problem is not None:
            raise Refusal("task", problem)
        self.follower.catch_up()
        with self.follower.lock:
            revision = self.follower.library.revisions.get(name)
        if revision is None:
            known = ", ".join(sorted(self.follower.library.revisions)) or "none yet"
            raise Refusal(
                "task", f"no task named {name!r} has a loadable revision (tasks: {known})"
            )
        with self._tasks_lock:  # two calls must not write the same folder at once
            return materialize(self.store, revision.source_changed(), self.revisions)

    def _latest_profile(
        self, task: str, candidate: str | None, revision: str
    ) -> dict[str, Any] | None:
        latest: ProfileRecorded | None = None
        for stored in self.store.read_all(types=[ProfileRecorded.type_name()]):
            event = decode(stored).event
            assert isinstance(event, ProfileRecorded)
            if event.task != task or event.task_source_hash != revision or not event.correct:
                continue
            if (event.candidate_id == candidate and event.purpose != "reverify") or (
                candidate is None and event.purpose == "baseline"
            ):
                latest = event
        if latest is None:
            return None
        return {
            "candidate_id": latest.candidate_id,
            "platform": f"{latest.backend}:{latest.target}",
            "latency": latency(latest.latency_ms, latest.latency_kind),
            "latency_stats": latest.latency_stats,
            "model_version": latest.model_version,
            "pct_of_peak": latest.pct_of_peak,
            "roofline_ms": latest.roofline_ms,
            "bound_by": latest.bound_by,
            "counters": latest.counters,
            "hot_lines": latest.hot_lines,
            "caveats": profile_caveats(latest),
        }


def profile_caveats(profile: ProfileRecorded) -> list[str]:
    """The Trainium cost model's known blind spots for an nkisim estimate (none otherwise)."""
    if profile.latency_kind == "estimated" and profile.backend == "nkisim":
        return caveats(profile.counters)
    return []


def latency(ms: float | None, kind: str | None) -> Latency | None:
    if ms is None or kind not in ("measured", "estimated"):
        return None
    return Latency(ms=ms, kind=kind)


def _platform(key: str, p: PlatformRecord, pct: float | None) -> PlatformSummary:
    return PlatformSummary(
        platform=key,
        baseline=latency(p.baseline_ms, p.latency_kind),
        best=latency(p.best_ms, p.latency_kind),
        best_by=p.best_by,
        promoted=latency(p.promoted_ms, p.latency_kind),
        promoted_by=p.promoted_by,
        pct_of_peak=pct,
    )
