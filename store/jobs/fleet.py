"""The job queue of many hosts: jobs in the event database, dispatched by procrastinate.

A job keeps living in the `jobs` table (its identity, payload, state and result), exactly as on
one host; procrastinate carries it to a worker. Submitting inserts the row (with the queue it is
submitted on: `queue_name(backend, target)` for a profile) and, if it is new, defers a
procrastinate job that names it, on that queue, with the job id as its queueing lock; the
payload is never read for routing. A worker serves its devices as one procrastinate worker whose
concurrency is the number of devices: a fetched job takes a free device, marks the row running
on it, runs, and records its result in the row unless one is there already, so a job run twice
still has one result, and the event its submitter records from it is keyed by the job id.

What procrastinate brings: `FOR UPDATE SKIP LOCKED` fetching in priority order, LISTEN/NOTIFY
wake-ups, retries with backoff (`FleetRetry`), and worker heartbeats. A worker beats every
`stalled_s / 3`; one that dies (kill -9, a host gone) stops. `recover` (the queue's
`maintenance`, which the coordinator's clock runs every `recover_every(stalled_s)`) hands its
jobs back to the queue once its heartbeat is older than `stalled_s`, so a dead worker's job runs
again elsewhere at most `stalled_s + recover_every(stalled_s)` after its last heartbeat: 40 s
with the default ACCELOPT_FLEET_STALLED_S=30.

A device serves one job at a time across the whole fleet: a worker holds a PostgreSQL session
advisory lock per device it serves (its name, `<host>/<device>`), for as long as it serves, and
refuses to start on a device another session holds. A database restart ends that session: the
leases are checked at the heartbeat's interval and before each job, and taken again on a new
session (store.jobs.leases); the worker's procrastinate calls wait the restart out
(store.jobs.patient).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import procrastinate
import psycopg
import psycopg_pool
import sqlalchemy as sa
import structlog
from procrastinate import sql as procrastinate_sql
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException
from procrastinate.job_context import JobContext
from procrastinate.jobs import Job as ProcrastinateJob
from procrastinate.retry import BaseRetryStrategy, RetryDecision
from sqlalchemy.engine import Engine

from store.errors import StoreError
from store.jobs.base import (
    FINISHED,
    FailedRun,
    GiveUp,
    Handler,
    Job,
    JobCancelled,
    JobListing,
    JobState,
    Maintenance,
    queue_name,
)
from store.jobs.claiming import WORKER_DIED, run_error
from store.jobs.leases import UNSURE_RETRY_S, DeviceLeases, DevicesLost, DeviceTaken, lease_space
from store.jobs.patient import PatientJobManager
from store.jobs.sql import LISTED_COLUMNS, SqlJobQueue, job_from_row
from store.schema import jobs

__all__ = [
    "DeviceTaken",
    "DevicesLost",
    "FleetJobQueue",
    "FleetRetry",
    "Lease",
    "queue_name",
    "recover_every",
]

log = structlog.get_logger("accelopt.fleet")

TASK_NAME = "accelopt.run_job"
MAX_ATTEMPTS = 5
"""Runs of a job that fail (not a drain) before procrastinate marks it failed; `recover`
queues it again `ORPHAN_GRACE_S` later."""
ORPHAN_GRACE_S = 30.0
"""A job row with no queued or running procrastinate job is queued again this long after it
last changed (a coordinator that died between the row and the defer; a job whose retries ran
out)."""

Usable = Callable[[str], bool]
"""May a job start on this device now (its lease held, no other worker's job on it)? It raises
JobCancelled once no device ever will."""
Lease = Callable[[Usable], contextlib.AbstractContextManager[tuple[str, Handler]]]
"""Waits for a free device that is usable and holds it: (its worker name, the handler that runs
on it). A device that is not usable waits, as a busy one does, and is asked again at least
every half second."""


def recover_every(stalled_s: float) -> float:
    """How often a coordinator looks for the jobs of dead workers."""
    return min(10.0, stalled_s / 3)


class FleetRetry(BaseRetryStrategy):
    """A drained job (JobCancelled: its worker is stopping) goes back at once, to any worker;
    a failed run is retried after 2, 4, 8… s (at most 5 min), `MAX_ATTEMPTS` runs in all."""

    def get_retry_decision(
        self, *, exception: BaseException, job: ProcrastinateJob
    ) -> RetryDecision | None:
        if isinstance(exception, JobCancelled):
            return RetryDecision(retry_in={"seconds": 0})
        if job.attempts + 1 >= MAX_ATTEMPTS:
            return None
        return RetryDecision(retry_in={"seconds": min(2 ** (job.attempts + 1), 300)})


def libpq_url(engine: Engine) -> str:
    """The engine's database as a libpq connection URI (search_path options kept)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def _priority(priority: float) -> int:
    """procrastinate's integer priority: ours to a thousandth, clamped to int4."""
    return max(-(2**31), min(2**31 - 1, round(priority * 1000)))


class FleetJobQueue(SqlJobQueue):
    """Jobs on PostgreSQL behind `engine`, dispatched by procrastinate (the engine is the
    caller's to dispose of; `close` closes what this queue opened)."""

    POLL_S: ClassVar[float] = 0.25
    """Results come from other processes here: a waiter looks this often."""
    spans_hosts: ClassVar[bool] = True

    def __init__(
        self,
        engine: Engine,
        *,
        queues: Sequence[str] = (),
        stalled_s: float = 30.0,
        lease_check_s: float | None = None,
        patience_s: float = 300.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        give_up: GiveUp | None = None,
    ) -> None:
        super().__init__(engine, clock=clock, give_up=give_up)
        if engine.dialect.name != "postgresql":
            raise ValueError("the fleet's job queue needs PostgreSQL")
        self.queues = list(queues)
        """What `serve` takes (empty: every queue)."""
        self.stalled_s = stalled_s
        """A worker silent this long is dead (`recover`); a worker here beats every third."""
        self.lease_check_s = lease_check_s if lease_check_s is not None else stalled_s / 3
        """How often a worker here checks its device leases: at its heartbeat's interval."""
        self.patience_s = patience_s
        """How long a worker here waits out a database that is away before it stops."""
        self._conninfo = libpq_url(engine)
        self._app: procrastinate.App | None = None

    @property
    def app(self) -> procrastinate.App:
        """procrastinate for deferring and administration, opened on first use."""
        if self._app is None:
            connector = procrastinate.SyncPsycopgConnector(
                conninfo=self._conninfo, min_size=1, max_size=2
            )
            self._app = procrastinate.App(connector=connector)
            self._app.open()
        return self._app

    @contextlib.contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        """SQLAlchemy's errors as in every adapter, and procrastinate's and its driver's too."""
        with super()._translated(action):
            try:
                yield
            except (ConnectorException, psycopg.Error, psycopg_pool.PoolTimeout) as e:
                raise StoreError(f"{self.describe()}: {action} failed: {e}") from e

    def close(self) -> None:
        if self._app is not None:
            self._app.close()
            self._app = None

    # --- submit ----------------------------------------------------------------------------

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
        if self._insert(
            job_id, queue=queue, task=task, kind=kind, payload=payload, priority=priority
        ):
            self._defer(job_id, queue, priority)
        # else: submitted before, in whatever state: never twice

    def _defer(self, job_id: str, queue: str, priority: float) -> None:
        with self._translated(f"queue job {job_id!r}"):
            deferrer = self.app.configure_task(
                name=TASK_NAME, queue=queue, priority=_priority(priority), queueing_lock=job_id
            )
            with contextlib.suppress(AlreadyEnqueued):  # queued already: once is enough
                deferrer.defer(job_id=job_id)

    # --- serve -----------------------------------------------------------------------------

    def serve(self, worker: str, handler: Handler, *, stop: threading.Event, idle_s: float) -> None:
        """One device (`worker`), as a fleet worker of one. A job fetched once `stop` is set
        goes back to the queue unstarted, as a host's device pool does (a stopping worker
        starts nothing)."""

        @contextlib.contextmanager
        def lease(usable: Usable) -> Iterator[tuple[str, Handler]]:
            while True:
                if stop.is_set():
                    raise JobCancelled(f"{worker} is stopping")
                if usable(worker):
                    break
                stop.wait(0.1)
            yield worker, handler

        self.serve_devices([worker], lease, stop=stop)

    def serve_devices(
        self,
        devices: Sequence[str],
        lease: Lease,
        *,
        stop: threading.Event,
        ready: Callable[[], None] = lambda: None,
    ) -> None:
        """Serve `devices` (worker names, fleet-unique) until `stop` is set: a procrastinate
        worker of `len(devices)` slots on `self.queues`, each job run on the device `lease`
        hands it; `ready` is called once the devices are leased. Raises DeviceTaken, serving
        nothing, if another session holds a device, and DevicesLost (once its running jobs
        ended) if other workers took every device while this one's lease session was gone."""
        leases = DeviceLeases(self.engine, devices, stalled_s=self.stalled_s)
        with self._translated("lease the devices"):
            leases.take()
        try:
            ready()
            executor = ThreadPoolExecutor(len(devices), thread_name_prefix="job")
            try:
                with self._translated("serve the devices"):
                    asyncio.run(self._serve(devices, lease, stop, executor, leases))
            finally:
                executor.shutdown(wait=True)
        finally:
            leases.release()
        if not leases.serving():
            raise DevicesLost(
                f"other workers took every device of this one ({', '.join(leases.lost())}) "
                "while its database session was gone"
            )

    async def _serve(
        self,
        devices: Sequence[str],
        lease: Lease,
        stop: threading.Event,
        executor: ThreadPoolExecutor,
        leases: DeviceLeases,
    ) -> None:
        loop = asyncio.get_running_loop()
        connector = procrastinate.PsycopgConnector(
            conninfo=self._conninfo, min_size=1, max_size=len(devices) + 2
        )
        app = procrastinate.App(connector=connector)
        app.job_manager = PatientJobManager(app.job_manager, patience_s=self.patience_s)

        @app.task(name=TASK_NAME, retry=FleetRetry(), pass_context=True)
        async def run_job(context: JobContext, job_id: str) -> None:
            leases.carried_by(context.job.worker_id)
            await loop.run_in_executor(executor, self._run_one, job_id, lease, leases)

        async with app.open_async():
            worker = asyncio.create_task(
                app.run_worker_async(
                    queues=self.queues or None,  # type: ignore[arg-type]  # None: every queue
                    name=",".join(devices)[:100],
                    concurrency=len(devices),
                    install_signal_handlers=False,
                    update_heartbeat_interval=self.stalled_s / 3,
                    stalled_worker_timeout=self.stalled_s,
                    delete_jobs="never",
                )
            )
            checking: asyncio.Future[None] | None = None
            checked = loop.time()
            while not stop.is_set() and not worker.done() and leases.serving():
                if checking is not None and checking.done():
                    checking.result()
                    checking, checked = None, loop.time()
                # Unsure leases (the server away, or just back) are looked at again soon: after
                # a restart the old holder should take them again before a newcomer does.
                due = self.lease_check_s if leases.settled() else UNSURE_RETRY_S
                if checking is None and loop.time() >= checked + min(due, self.lease_check_s):
                    checking = loop.run_in_executor(None, leases.check)
                await asyncio.sleep(0.1)
            if worker.done():  # on its own: the database stayed away past the patience
                worker.result()
                raise StoreError(
                    f"{self.describe()}: the job queue's worker stopped (the database went away?)"
                )
            # procrastinate's graceful stop: running jobs finish first, and jobs waiting for a
            # device go back to the queue (DeviceLeases.usable, once every device is lost)
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            if checking is not None:
                await checking

    def _run_one(self, job_id: str, lease: Lease, leases: DeviceLeases) -> None:
        """A fetched job on a free device whose lease is held: claimed, run, its result kept
        (or put back)."""
        for _attempt in range(2):
            with lease(leases.usable) as (worker, handler):
                with self._write(f"claim job {job_id!r} on {worker!r}") as connection:
                    held = leases.verify(connection, worker)
                    job = (
                        self._mark_running(
                            connection, job_id, worker, jobs.c.state.not_in(FINISHED)
                        )
                        if held
                        else None
                    )
                if held:
                    if job is not None:  # else finished already (a retry whose result was kept)
                        self._run_claimed(job, worker, handler)
                    return
            # The device's lease lapsed under it (its session ended): checked now, not at the
            # next heartbeat; then a device again (this one, if it was taken again).
            log.warning("a job found its device's lease lapsed", job=job_id, device=worker)
            leases.check()
        raise StoreError(
            f"{self.describe()}: job {job_id!r} found its device's lease lapsed twice in a row "
            "(the database keeps ending this worker's sessions?)"
        )

    def _run_claimed(self, job: Job, worker: str, handler: Handler) -> None:
        """Never left running: done, failed, or pending again for its retry (a result that
        cannot be recorded included). A drain is no failed run; a handler's error is one, and
        a job it leaves failed returns quietly, so procrastinate retries it no more."""
        try:
            result = handler(job)
        except JobCancelled:
            self._release(job.job_id, worker)
            raise
        except BaseException as e:
            if self._fail(job.job_id, FailedRun(worker, run_error(e))) == "failed":
                log.error("job failed for good", job=job.job_id, runs=self.give_up.runs)
                return
            raise
        try:
            self._complete(job.job_id, worker, result)
        except BaseException:
            self._release(job.job_id, worker)
            raise

    def leased_devices(self) -> int:
        """How many devices the fleet's live workers serve now (their leases)."""
        with self._read("count the leased devices") as connection:
            count = connection.execute(
                sa.text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND classid = :space AND objsubid = 2 AND database = (SELECT oid FROM "
                    "pg_database WHERE datname = current_database())"
                ),
                {"space": lease_space(connection)},
            ).scalar_one()
        return int(count)

    # --- administration --------------------------------------------------------------------

    def devices(self) -> int:
        """The devices the fleet's live workers lease now (workers come and go)."""
        return self.leased_devices()

    def maintenance(self) -> list[Maintenance]:
        """The jobs of dead workers go back to the queue."""
        return [("recover_jobs", self.recover, recover_every(self.stalled_s))]

    def requeue_running(self, worker: str | None = None) -> int:
        """A fleet's running jobs may be running on live workers: only what `recover` finds
        abandoned goes back."""
        return self.recover()

    def recover(self) -> int:
        """Queue again the jobs of workers whose heartbeat is older than `stalled_s`, and the
        rows no procrastinate job carries any more; how many."""
        with self._translated("recover the jobs of stalled workers"):
            connector = self.app.connector.get_sync_connector()
            stalled = connector.execute_query_all(
                query=procrastinate_sql.queries["select_stalled_jobs_by_heartbeat"],
                queue=None,
                task_name=TASK_NAME,
                seconds_since_heartbeat=self.stalled_s,
            )
            for row in stalled:
                if self._died_under(row["args"].get("job_id")) == "failed":
                    connector.execute_query(
                        query=procrastinate_sql.queries["finish_job"],
                        job_id=row["id"],
                        status="failed",
                        delete_job=False,
                    )
                    log.error("job of a stalled worker failed for good", job=row["args"])
                    continue
                self.app.job_manager.retry_job_by_id(row["id"], retry_at=datetime.now(UTC))
                log.warning("job of a stalled worker requeued", job=row["args"].get("job_id"))
        queued = 0
        for job_id, queue, priority in self._orphans():
            if queue is None:
                log.error("job without a queue left alone", job=job_id)
                continue
            log.warning("job queued again", job=job_id, queue=queue)
            self._defer(job_id, queue, priority)
            queued += 1
        return len(stalled) + queued

    def _died_under(self, job_id: str | None) -> JobState | None:
        """A failed run of the job a dead worker ran (by its row); the state it is left in."""
        job = self.get(job_id) if job_id is not None else None
        if job is None or job.state != "running" or job.worker is None:
            return None
        return self._fail(job.job_id, FailedRun(job.worker, WORKER_DIED))

    def _orphans(self) -> list[tuple[str, str | None, float]]:
        """The rows no procrastinate job carries, with the queue each was submitted on (a row
        from before queues were kept in it: its last procrastinate job's, if any)."""
        cutoff = self._clock() - timedelta(seconds=ORPHAN_GRACE_S)
        with self._read("find jobs no worker will run") as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT j.job_id, j.priority, coalesce(j.queue, (SELECT p.queue_name "
                    "FROM procrastinate_jobs p WHERE p.queueing_lock = j.job_id "
                    "ORDER BY p.id DESC LIMIT 1)) AS queue FROM jobs j "
                    "WHERE j.state NOT IN ('done', 'failed') AND j.updated_at < :cutoff "
                    "AND NOT EXISTS ("
                    "SELECT 1 FROM procrastinate_jobs p WHERE p.queueing_lock = j.job_id "
                    "AND p.status IN ('todo', 'doing'))"
                ),
                {"cutoff": cutoff},
            ).all()
        return [(row.job_id, row.queue, row.priority) for row in rows]

    def prune(self, older_than: timedelta) -> int:
        pruned = super().prune(older_than)
        with self._write("prune finished procrastinate jobs") as connection:
            connection.execute(
                sa.text(
                    "DELETE FROM procrastinate_jobs p WHERE p.status IN "
                    "('succeeded', 'failed', 'cancelled', 'aborted') AND NOT EXISTS "
                    "(SELECT 1 FROM jobs j WHERE j.job_id = p.queueing_lock "
                    "AND j.state NOT IN ('done', 'failed')) "
                    "AND NOT EXISTS (SELECT 1 FROM procrastinate_events e WHERE e.job_id = p.id "
                    "AND e.at >= :cutoff)"
                ),
                {"cutoff": self._clock() - older_than},
            )
        return pruned

    def listing(self) -> list[JobListing]:
        """Every job with procrastinate's view of it, newest first."""
        columns = ", ".join(f"jobs.{column.name}" for column in LISTED_COLUMNS)
        with self._read("list the jobs") as connection:
            rows = connection.execute(
                sa.text(
                    f"SELECT {columns}, p.status, p.queue_name, coalesce(p.runs, 0) AS runs "
                    "FROM jobs LEFT JOIN LATERAL (SELECT status::text AS status, queue_name, "
                    "attempts AS runs FROM procrastinate_jobs WHERE queueing_lock = jobs.job_id "
                    "ORDER BY id DESC LIMIT 1) AS p ON true "
                    "ORDER BY jobs.created_at DESC, jobs.job_id"
                )
            ).all()
        return [_listing(row) for row in rows]


def _listing(row: Any) -> JobListing:
    job = job_from_row(row)
    status: str
    if job.state in FINISHED:
        status = job.state
    elif row.status == "failed":
        status = "failed"
    elif job.state == "running" and row.status == "doing":
        status = "running"
    else:
        status = "queued"
    return JobListing(job, status, row.queue_name, int(row.runs))
