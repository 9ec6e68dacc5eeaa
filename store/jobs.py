"""The job queue of one host: a table in the event database, so that queued and finished work
survives a restart. A worker claims the most urgent pending job; whoever submitted a job waits
for its result. Submitting is idempotent by job id, and a finished job keeps its result, so a
search that resumes after a crash gets the result of a profile that was finished, never a
second run of it. The multi-host queue (procrastinate on PostgreSQL) implements the same
interface later.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from store.engine import read_connection, write_transaction
from store.schema import jobs

__all__ = ["Job", "JobQueue", "SqlJobQueue"]

JobState = Literal["pending", "running", "done"]


@dataclass(frozen=True)
class Job:
    job_id: str
    task: str
    kind: str
    payload: dict[str, Any]
    priority: float
    state: JobState
    worker: str | None
    attempts: int
    result: dict[str, Any] | None


class JobQueue(Protocol):
    def submit(
        self, job_id: str, *, task: str, kind: str, payload: dict[str, Any], priority: float
    ) -> None: ...

    def claim(self, worker: str) -> Job | None: ...

    def complete(self, job_id: str, result: dict[str, Any]) -> None: ...

    def release(self, job_id: str) -> None: ...

    def get(self, job_id: str) -> Job | None: ...

    def wait(self, job_id: str, timeout: float) -> Job | None: ...


def _now() -> datetime:
    return datetime.now(UTC)


def _job(row: Any) -> Job:
    return Job(
        job_id=row.job_id,
        task=row.task,
        kind=row.kind,
        payload=row.payload,
        priority=row.priority,
        state=row.state,
        worker=row.worker,
        attempts=row.attempts,
        result=row.result,
    )


class SqlJobQueue:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._changed = threading.Condition()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def submit(
        self, job_id: str, *, task: str, kind: str, payload: dict[str, Any], priority: float
    ) -> None:
        """Queue a job unless one with this id exists (pending, running or done)."""
        now = _now()
        values = {
            "job_id": job_id,
            "task": task,
            "kind": kind,
            "payload": payload,
            "priority": priority,
            "state": "pending",
            "worker": None,
            "attempts": 0,
            "result": None,
            "created_at": now,
            "updated_at": now,
        }
        insert = (
            postgresql.insert(jobs)
            if self.engine.dialect.name == "postgresql"
            else sqlite.insert(jobs)
        )
        with write_transaction(self.engine) as connection:
            connection.execute(insert.values(**values).on_conflict_do_nothing())
        self._notify()

    def claim(self, worker: str) -> Job | None:
        """The most urgent pending job, now running on `worker`; None if there is none."""
        with write_transaction(self.engine) as connection:
            row = connection.execute(
                sa.select(jobs)
                .where(jobs.c.state == "pending")
                .order_by(jobs.c.priority.desc(), jobs.c.created_at, jobs.c.job_id)
                .limit(1)
            ).first()
            if row is None:
                return None
            connection.execute(
                jobs.update()
                .where(jobs.c.job_id == row.job_id)
                .values(
                    state="running",
                    worker=worker,
                    attempts=row.attempts + 1,
                    updated_at=_now(),
                )
            )
        job = _job(row)
        return Job(
            **{**job.__dict__, "state": "running", "worker": worker, "attempts": row.attempts + 1}
        )

    def complete(self, job_id: str, result: dict[str, Any]) -> None:
        with write_transaction(self.engine) as connection:
            connection.execute(
                jobs.update()
                .where(jobs.c.job_id == job_id)
                .values(state="done", result=result, updated_at=_now())
            )
        self._notify()

    def release(self, job_id: str) -> None:
        """Back to pending (a worker that stops before finishing it)."""
        with write_transaction(self.engine) as connection:
            connection.execute(
                jobs.update()
                .where(jobs.c.job_id == job_id, jobs.c.state == "running")
                .values(state="pending", worker=None, updated_at=_now())
            )
        self._notify()

    def requeue_running(self) -> int:
        """At start: the jobs a dead process was running go back to pending."""
        with write_transaction(self.engine) as connection:
            count = connection.execute(
                jobs.update()
                .where(jobs.c.state == "running")
                .values(state="pending", worker=None, updated_at=_now())
            ).rowcount
        self._notify()
        return count

    def get(self, job_id: str) -> Job | None:
        with read_connection(self.engine) as connection:
            row = connection.execute(sa.select(jobs).where(jobs.c.job_id == job_id)).first()
        return _job(row) if row is not None else None

    def wait(self, job_id: str, timeout: float) -> Job | None:
        """The job once done, or None after `timeout` seconds."""
        deadline = _now() + timedelta(seconds=timeout)
        while True:
            job = self.get(job_id)
            if job is not None and job.state == "done":
                return job
            left = (deadline - _now()).total_seconds()
            if left <= 0:
                return None
            with self._changed:
                self._changed.wait(min(left, 1.0))

    def idle(self, timeout: float) -> None:
        """Sleep until a job is submitted or released here, or `timeout` seconds pass."""
        with self._changed:
            self._changed.wait(timeout)

    def counts(self) -> dict[str, int]:
        with read_connection(self.engine) as connection:
            rows = connection.execute(
                sa.select(jobs.c.state, sa.func.count()).group_by(jobs.c.state)
            ).all()
        return {state: count for state, count in rows}

    def prune(self, older_than: timedelta) -> int:
        """Forget finished jobs (their results are in the log) older than `older_than`."""
        with write_transaction(self.engine) as connection:
            return connection.execute(
                jobs.delete().where(jobs.c.state == "done", jobs.c.updated_at < _now() - older_than)
            ).rowcount
