"""The job queue of one host: the `jobs` table in the event database (SQLite or PostgreSQL).

Queued and finished work survives a restart, and a finished job keeps its result until it is
pruned, so a search that resumes after a crash gets the result of a profile that was done,
never a second run of it. A claim is one write transaction: SQLite serializes writers
(`BEGIN IMMEDIATE`); on PostgreSQL the claiming SELECT skips rows that another claim holds
(`FOR UPDATE SKIP LOCKED`), so two workers never get the same job. Driver errors become
StoreBusy or StoreError in `_translated` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from store.engine import read_connection, translated, write_transaction
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
from store.migrate import describe
from store.schema import jobs

__all__ = ["LISTED_COLUMNS", "SqlJobQueue", "job_from_row"]

LISTED_COLUMNS = [c for c in jobs.c if c.name not in ("payload", "result")]
"""What a listing reads of a job: all but its documents (a kernel's source, its result)."""


def job_from_row(row: Any) -> Job:
    """A row of the jobs table as a Job (one read without its documents has {} and None)."""
    fields = row._mapping
    return Job(
        job_id=row.job_id,
        task=row.task,
        kind=row.kind,
        payload=fields.get("payload", {}),
        priority=row.priority,
        state=row.state,
        worker=row.worker,
        attempts=row.attempts,
        result=fields.get("result"),
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        queue=row.queue,
        failed_runs=tuple(FailedRun(**run) for run in row.failed_runs or ()),
    )


class SqlJobQueue(ClaimingQueue):
    """Jobs in the event database behind `engine` (at schema head; the engine is the caller's
    to dispose of)."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        give_up: GiveUp | None = None,
    ) -> None:
        super().__init__(give_up)
        self.engine = engine
        self._clock = clock

    def describe(self) -> str:
        return describe(self.engine.url)

    def _translated(self, action: str) -> AbstractContextManager[None]:
        """The one seam where driver errors become accelopt errors."""
        return translated(self.describe(), action)

    @contextmanager
    def _read(self, action: str) -> Iterator[Connection]:
        with self._translated(action), read_connection(self.engine) as connection:
            yield connection

    @contextmanager
    def _write(self, action: str) -> Iterator[Connection]:
        with self._translated(action), write_transaction(self.engine) as connection:
            yield connection

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
        self._insert(job_id, queue=queue, task=task, kind=kind, payload=payload, priority=priority)

    def _insert(
        self,
        job_id: str,
        *,
        queue: str,
        task: str,
        kind: str,
        payload: dict[str, Any],
        priority: float,
    ) -> bool:
        """The job as pending, unless one with its id exists; True if this call made it."""
        now = self._clock()
        values = {
            "job_id": job_id,
            "queue": queue,
            "task": task,
            "kind": kind,
            "payload": json_document(payload, f"the payload of job {job_id!r}"),
            "priority": priority,
            "state": "pending",
            "worker": None,
            "attempts": 0,
            "result": None,
            "created_at": now,
            "updated_at": now,
        }
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        statement = (
            insert(jobs)
            .values(**values)
            .on_conflict_do_nothing(index_elements=["job_id"])
            .returning(jobs.c.job_id)
        )
        with self._write(f"submit job {job_id!r}") as connection:
            made = connection.execute(statement).first() is not None
        self._wake()
        return made

    # --- the storage steps of serve --------------------------------------------------------

    def _claim(self, worker: str) -> Job | None:
        with self._write(f"claim a job for worker {worker!r}") as connection:
            row = connection.execute(
                sa.select(jobs)
                .where(jobs.c.state == "pending")
                .order_by(jobs.c.priority.desc(), jobs.c.created_at, jobs.c.job_id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if row is None:
                return None
            return self._mark_running(connection, row.job_id, worker, jobs.c.state == "pending")

    def _mark_running(
        self, connection: Connection, job_id: str, worker: str, condition: Any
    ) -> Job | None:
        now = self._clock()
        claimed = connection.execute(
            jobs.update()
            .where(jobs.c.job_id == job_id, condition)
            .values(
                state="running",
                worker=worker,
                attempts=jobs.c.attempts + 1,
                started_at=now,
                finished_at=None,
                updated_at=now,
            )
            .returning(*jobs.c)
        ).first()
        return job_from_row(claimed) if claimed is not None else None

    def _complete(self, job_id: str, worker: str, result: dict[str, Any]) -> None:
        document = json_document(result, f"the result of job {job_id!r}")
        now = self._clock()
        with self._write(f"record the result of job {job_id!r}") as connection:
            connection.execute(
                jobs.update()
                .where(jobs.c.job_id == job_id, jobs.c.state.not_in(FINISHED))
                .values(state="done", result=document, finished_at=now, updated_at=now)
            )
        self._wake()

    def _release(self, job_id: str, worker: str) -> None:
        with self._write(f"put job {job_id!r} back to pending") as connection:
            connection.execute(
                jobs.update()
                .where(jobs.c.job_id == job_id, jobs.c.state == "running", jobs.c.worker == worker)
                .values(state="pending", worker=None, updated_at=self._clock())
            )
        self._wake()

    def _fail(self, job_id: str, run: FailedRun) -> JobState | None:
        devices = self.devices()  # before the write: the fleet asks the database
        with self._write(f"count a failed run of job {job_id!r}") as connection:
            row = connection.execute(
                sa.select(jobs.c.job_id, jobs.c.worker, jobs.c.failed_runs)
                .where(
                    jobs.c.job_id == job_id, jobs.c.state == "running", jobs.c.worker == run.worker
                )
                .with_for_update()
            ).first()
            state = self._put_back(connection, row, run, devices) if row is not None else None
        self._wake()
        return state

    def _put_back(
        self, connection: Connection, row: Any, run: FailedRun, devices: int | None
    ) -> JobState:
        """The job of `row` (its id and failed runs) after the failed `run`: pending again, or
        failed for good; which."""
        failed_runs = (*(FailedRun(**r) for r in row.failed_runs or ()), run)
        now = self._clock()
        state: JobState = "failed" if self.give_up.reached(failed_runs, devices) else "pending"
        connection.execute(
            jobs.update()
            .where(jobs.c.job_id == row.job_id)
            .values(
                state=state,
                worker=None,
                failed_runs=[r.to_json() for r in failed_runs],
                finished_at=now if state == "failed" else None,
                updated_at=now,
            )
        )
        return state

    # --- administration --------------------------------------------------------------------

    def requeue_running(self, worker: str | None = None) -> int:
        which = [jobs.c.state == "running"]
        if worker is not None:
            which.append(jobs.c.worker == worker)
        devices = self.devices()
        with self._write("requeue the running jobs") as connection:
            running = connection.execute(
                sa.select(jobs.c.job_id, jobs.c.worker, jobs.c.failed_runs)
                .where(*which)
                .with_for_update()
            ).all()
            for row in running:
                if worker is None:  # see JobQueue.requeue_running: no failed run
                    connection.execute(
                        jobs.update()
                        .where(jobs.c.job_id == row.job_id)
                        .values(state="pending", worker=None, updated_at=self._clock())
                    )
                else:
                    self._put_back(connection, row, FailedRun(row.worker, WORKER_DIED), devices)
        self._wake()
        return len(running)

    def counts(self) -> dict[JobState, int]:
        with self._read("count the jobs") as connection:
            rows = connection.execute(
                sa.select(jobs.c.state, sa.func.count()).group_by(jobs.c.state)
            ).all()
        found = {state: count for state, count in rows}
        return {state: found.get(state, 0) for state in JOB_STATES}

    def prune(self, older_than: timedelta) -> int:
        cutoff = self._clock() - older_than
        with self._write("prune finished jobs") as connection:
            pruned = connection.execute(
                jobs.delete()
                .where(jobs.c.state.in_(FINISHED), jobs.c.updated_at < cutoff)
                .returning(jobs.c.job_id)
            ).all()
        return len(pruned)

    def get(self, job_id: str) -> Job | None:
        with self._read(f"read job {job_id!r}") as connection:
            row = connection.execute(sa.select(jobs).where(jobs.c.job_id == job_id)).first()
        return job_from_row(row) if row is not None else None

    def listing(self) -> list[JobListing]:
        with self._read("list the jobs") as connection:
            rows = connection.execute(
                sa.select(*LISTED_COLUMNS).order_by(jobs.c.created_at.desc(), jobs.c.job_id)
            ).all()
        return [
            JobListing(job_from_row(row), LISTED_STATUS[row.state], None, row.attempts)
            for row in rows
        ]
