"""A complete job queue in process memory: the same contract as the SQL queue.

For tests and tools that need a real queue without a database, as procrastinate's
`InMemoryConnector` is for procrastinate. It is not a mock: jobs are claimed, run, released and
waited for exactly as in the SQL adapter, and the contract tests hold for it. It also keeps,
in `calls`, every operation that may change jobs (submit, claim, complete, release, fail,
requeue, prune), so a test can assert what a worker did, and `reset()` forgets everything.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from store.jobs.base import (
    FINISHED,
    JOB_STATES,
    LISTED_STATUS,
    FailedRun,
    GiveUp,
    Job,
    JobListing,
    JobState,
    json_document,
)
from store.jobs.claiming import WORKER_DIED, ClaimingQueue

__all__ = ["Call", "MemoryJobQueue"]


@dataclass(frozen=True)
class Call:
    """One operation the queue was asked for, with its arguments."""

    operation: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class _Entry:
    job: Job
    created_at: datetime
    updated_at: datetime


def _copy(job: Job) -> Job:
    """What a caller gets is theirs to change, as a row read from a database would be."""
    return replace(job, payload=copy.deepcopy(job.payload), result=copy.deepcopy(job.result))


class MemoryJobQueue(ClaimingQueue):
    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        give_up: GiveUp | None = None,
    ) -> None:
        super().__init__(give_up)
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Forget every job and call, as a fresh queue."""
        with self._changed:
            self._entries: dict[str, _Entry] = {}
            self.calls: list[Call] = []
        self._wake()

    def _record(self, operation: str, **arguments: Any) -> None:
        self.calls.append(Call(operation, arguments))

    def _update(self, entry: _Entry, **changes: Any) -> None:
        self._entries[entry.job.job_id] = replace(
            entry, job=replace(entry.job, **changes), updated_at=self._clock()
        )

    # --- submit and wait -------------------------------------------------------------------

    def submit(
        self,
        job_id: str,
        *,
        queue: str,
        task: str,
        kind: str,
        payload: dict[str, Any],
        priority: float,
    ) -> None:
        document = json_document(payload, f"the payload of job {job_id!r}")
        with self._changed:
            self._record(
                "submit", job_id=job_id, queue=queue, task=task, kind=kind, priority=priority
            )
            if job_id not in self._entries:
                now = self._clock()
                job = Job(
                    job_id, task, kind, document, priority, "pending", None, 0, None, now,
                    queue=queue,
                )  # fmt: skip
                self._entries[job_id] = _Entry(job, now, now)
        self._wake()

    # --- the storage steps of serve --------------------------------------------------------

    def _claim(self, worker: str) -> Job | None:
        with self._changed:
            self._record("claim", worker=worker)
            pending = [e for e in self._entries.values() if e.job.state == "pending"]
            if not pending:
                return None
            entry = min(pending, key=lambda e: (-e.job.priority, e.created_at, e.job.job_id))
            self._update(
                entry,
                state="running",
                worker=worker,
                attempts=entry.job.attempts + 1,
                started_at=self._clock(),
                finished_at=None,
            )
            return _copy(self._entries[entry.job.job_id].job)

    def _complete(self, job_id: str, worker: str, result: dict[str, Any]) -> None:
        document = json_document(result, f"the result of job {job_id!r}")
        with self._changed:
            self._record("complete", job_id=job_id, worker=worker)
            entry = self._entries.get(job_id)
            if entry is not None and entry.job.state not in FINISHED:
                self._update(entry, state="done", result=document, finished_at=self._clock())
        self._wake()

    def _release(self, job_id: str, worker: str) -> None:
        with self._changed:
            self._record("release", job_id=job_id, worker=worker)
            entry = self._entries.get(job_id)
            if entry is not None and entry.job.state == "running" and entry.job.worker == worker:
                self._update(entry, state="pending", worker=None)
        self._wake()

    def _fail(self, job_id: str, run: FailedRun) -> JobState | None:
        with self._changed:
            self._record("fail", job_id=job_id, worker=run.worker)
            entry = self._entries.get(job_id)
            state: JobState | None = None
            running = entry is not None and entry.job.state == "running"
            if entry is not None and running and entry.job.worker == run.worker:
                self._put_back(entry, run)
                state = self._entries[job_id].job.state
        self._wake()
        return state

    def _put_back(self, entry: _Entry, run: FailedRun) -> None:
        failed_runs = (*entry.job.failed_runs, run)
        if self.give_up.reached(failed_runs, self.devices()):
            self._update(
                entry, state="failed", worker=None, failed_runs=failed_runs,
                finished_at=self._clock(),
            )  # fmt: skip
        else:
            self._update(entry, state="pending", worker=None, failed_runs=failed_runs)

    # --- administration --------------------------------------------------------------------

    def requeue_running(self, worker: str | None = None) -> int:
        with self._changed:
            self._record("requeue_running")
            running = [
                e
                for e in self._entries.values()
                if e.job.state == "running" and worker in (None, e.job.worker)
            ]
            for entry in running:
                assert entry.job.worker is not None  # a running job has its worker
                if worker is None:  # see JobQueue.requeue_running: no failed run
                    self._update(entry, state="pending", worker=None)
                else:
                    self._put_back(entry, FailedRun(entry.job.worker, WORKER_DIED))
        self._wake()
        return len(running)

    def counts(self) -> dict[JobState, int]:
        with self._changed:
            states = [e.job.state for e in self._entries.values()]
        return {state: states.count(state) for state in JOB_STATES}

    def prune(self, older_than: timedelta) -> int:
        with self._changed:
            self._record("prune", older_than=older_than)
            cutoff = self._clock() - older_than
            old = [
                job_id
                for job_id, e in self._entries.items()
                if e.job.state in FINISHED and e.updated_at < cutoff
            ]
            for job_id in old:
                del self._entries[job_id]
        return len(old)

    def get(self, job_id: str) -> Job | None:
        with self._changed:
            entry = self._entries.get(job_id)
        return _copy(entry.job) if entry is not None else None

    def listing(self) -> list[JobListing]:
        with self._changed:
            entries = sorted(self._entries.values(), key=lambda e: e.job.job_id)
        entries.sort(key=lambda e: e.created_at, reverse=True)  # stable: newest, then by id
        return [
            JobListing(
                replace(e.job, payload={}, result=None),
                LISTED_STATUS[e.job.state],
                None,
                e.job.attempts,
            )
            for e in entries
        ]
