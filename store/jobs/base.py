"""The job queue port: what every adapter (store.jobs.memory, store.jobs.sql and
store.jobs.fleet, procrastinate's) promises; `store.jobs.open_queue` picks the adapter.

It is cut at three capabilities, as a queue such as procrastinate offers them, so that a
search never knows where its profile runs: whoever needs work done *submits* a job and *waits
for its result*; a device's worker *serves* the queue. Submitting is idempotent by job id and a
finished job keeps its result, so a search that resumes after a crash finds the job, or its
result, again: finished work is never done twice. Beside them, administration: what the queue
holds (`counts`, `listing`, `get`), how many devices serve it (`devices`), and the upkeep it
needs on a clock (`maintenance`), which whoever runs the clock schedules without knowing why.

**Routing is an argument.** A job is submitted on a named queue (`submit(queue=...)`, as
procrastinate's `queue`): the profiles of a backend on a target go on
`queue_name(backend, target)`. Every adapter keeps the name with the job (`Job.queue`); only
the fleet routes by it: its workers take the queues they were opened with
(`open_queue(engine, queues=...)`), and `recover` queues a job again on its own queue. The
one-host adapters (memory, SQL) store it and ignore it: one host serves one backend on one
target, and each of its workers takes every job. The payload is the job's own business; no
adapter reads it.

**Where the adapters differ, by design** (tests/store/test_jobs_contract.py runs the contract on
every adapter, and what holds on one host only on the three one-host ones; the fleet's own
behaviour is in tests/store/test_fleet_queue.py):
- Jobs of equal priority run oldest first; among jobs submitted at the same instant, one host
  takes the smallest id, the fleet the first submitted.
- A handler's error other than JobCancelled ends a one-host `serve` (the job pending again:
  the caller decides whether to serve again); the fleet retries the job itself, with backoff
  (store.jobs.fleet.FleetRetry), and goes on serving.
- `requeue_running` on one host trusts its caller that the workers are gone (at start, the
  jobs of a dead process); the fleet can tell live workers from dead ones (their heartbeats)
  and puts back only the dead ones' jobs.

**A job that fails everywhere is given up.** A run *fails* when its handler raises (the
backend broke, the device went away) or its worker dies under it (found by `requeue_running`,
or by the fleet's `recover`): the infrastructure failed, so the job is run again. A kernel's
own verdict (incorrect, timeout, a crash in the kernel's sandboxed child) is a result, never a
failed run. Each failed run is kept with the job (`Job.failed_runs`); once `GiveUp` says the
job failed enough runs on enough devices, it ends `failed` (terminal, like `done`) instead of
pending, so it is not re-queued for ever, and `result` hands it to its waiter, who records
the outcome.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal, get_args

import orjson

from events.codec import storage_json
from store.errors import InvalidPayload

__all__ = [
    "FINISHED",
    "JOB_STATES",
    "LISTED_STATUS",
    "FailedRun",
    "GiveUp",
    "Handler",
    "Job",
    "JobCancelled",
    "JobListing",
    "JobQueue",
    "JobState",
    "Maintenance",
    "json_document",
    "queue_name",
]

JobState = Literal["pending", "running", "done", "failed"]
JOB_STATES: tuple[JobState, ...] = get_args(JobState)
FINISHED: tuple[JobState, ...] = ("done", "failed")
"""The terminal states: a job in one is never run again, and its waiter has its outcome."""
LISTED_STATUS: dict[JobState, str] = {
    "pending": "queued",
    "running": "running",
    "done": "done",
    "failed": "failed",
}
"""A job's status in a listing, where no dispatch has a say (one host)."""


class JobCancelled(Exception):
    """The work was not done; run it again later."""


@dataclass(frozen=True)
class FailedRun:
    """One run of a job that the infrastructure failed: on which device (its worker's name)
    and why."""

    worker: str
    error: str

    def to_json(self) -> dict[str, str]:
        return {"worker": self.worker, "error": self.error}


@dataclass(frozen=True)
class GiveUp:
    """When a job whose runs keep failing is failed for good: after `runs` failed runs on at
    least `devices` distinct devices, or on every device there is when there are fewer (one
    device can never see a second; a job there is given up after `runs` on it)."""

    runs: int = 3
    devices: int = 2

    def reached(self, failed_runs: tuple[FailedRun, ...], devices_there_are: int | None) -> bool:
        """`devices_there_are`: the devices serving the queue now (None: unknown, and
        `devices` are needed)."""
        needed = self.devices
        if devices_there_are is not None:
            needed = min(needed, max(devices_there_are, 1))
        distinct = {run.worker for run in failed_runs}
        return len(failed_runs) >= self.runs and len(distinct) >= needed


@dataclass(frozen=True)
class Job:
    """One unit of device work and, once done, its result (a JSON document)."""

    job_id: str
    task: str
    kind: str
    payload: dict[str, Any]
    priority: float
    state: JobState
    worker: str | None
    attempts: int
    """How many times a worker has claimed it (a retry after a crash or a drain counts)."""
    result: dict[str, Any] | None
    created_at: datetime | None = None
    """When it was submitted."""
    started_at: datetime | None = None
    """When its last run started (None: never claimed)."""
    finished_at: datetime | None = None
    """When its result was recorded (None: not done)."""
    queue: str | None = None
    """The queue it was submitted on (None: a job from before queues were recorded)."""
    failed_runs: tuple[FailedRun, ...] = ()
    """Its runs that the infrastructure failed, oldest first (the last says why a `failed`
    job was given up)."""


@dataclass(frozen=True)
class JobListing:
    """One job as `accelopt jobs` lists it: the job without its documents (`payload` is {}
    and `result` None in a listing: `get` has them), and how its dispatch sees it."""

    job: Job
    status: str
    """queued, running, done, or failed (given up: `GiveUp`; on the fleet also a job whose
    procrastinate retries ran out, which `recover` queues again)."""
    queue: str | None
    """The queue it was dispatched on (the fleet: procrastinate's; one host: None)."""
    runs: int
    """Runs started for it, retries included (one host: the job's attempts)."""


Maintenance = tuple[str, Callable[[], object], float]
"""Upkeep a queue needs on a clock: (its name, what to call, every how many seconds)."""


def queue_name(backend: str, target: str) -> str:
    """The queue of profile jobs for `backend` on `target` (a fleet's worker takes only its
    own)."""
    return f"profile.{backend}.{target}"


Handler = Callable[[Job], dict[str, Any]]
"""Does a job's work and returns its result; raises JobCancelled when the work was not done."""


def json_document(value: dict[str, Any], what: str) -> dict[str, Any]:
    """A copy of `value` as every adapter would store it, so that the in-memory queue refuses
    what a database would (NaN, NUL) and hands back lists where a database hands back lists."""
    try:
        copied = orjson.loads(storage_json(value))
    except (TypeError, ValueError) as e:
        raise InvalidPayload(f"{what} cannot be stored: {e}") from e
    assert isinstance(copied, dict)
    return copied


class JobQueue(ABC):
    """Jobs that wait for a device, and their results."""

    spans_hosts: ClassVar[bool] = False
    """Whether its workers may be on other hosts (the fleet): a worker's name must then be
    unique fleet-wide (`<host>/<device>`)."""

    # --- submit and wait for the result ----------------------------------------------------

    @abstractmethod
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
        """Queue a job as pending on `queue`, unless a job with this id exists in any state (a
        no-op: its queue, payload and priority stay as first submitted)."""

    @abstractmethod
    def result(self, job_id: str, timeout: float) -> Job | None:
        """The job once finished: done (with its result) or failed (given up, its
        `failed_runs` say why); None if it is neither within `timeout` s."""

    # --- serve a device --------------------------------------------------------------------

    @abstractmethod
    def serve(self, worker: str, handler: Handler, *, stop: threading.Event, idle_s: float) -> None:
        """Run the most urgent pending job (priority, then age, then id) on `worker`, one at a
        time, through `handler`, until `stop` is set; record what it returns as the result.

        JobCancelled from the handler puts the job back to pending; any other exception is a
        failed run on `worker`: the job goes back to pending, or to failed once `GiveUp` is
        reached, and the exception propagates (the caller decides whether to serve again).
        When nothing is pending it sleeps until a submit or a release wakes it, `idle_s`
        passes, or `stop` is set.
        """

    # --- administration --------------------------------------------------------------------

    @abstractmethod
    def requeue_running(self, worker: str | None = None) -> int:
        """Put every running job back to pending (or only `worker`'s: a dead worker's, before
        another takes its place) and return how many (at start: a dead process's jobs). A
        dead worker's job counts a failed run on it (it died under the job), so the job may
        end failed; a dead process's does not: a daemon killed, restarted past its memory
        ceiling or cut off by a power loss says nothing of the jobs it was running, and a
        daemon killed three times would otherwise give up on every job it had running."""

    @abstractmethod
    def counts(self) -> dict[JobState, int]:
        """How many jobs are in each state, every state named (zero included)."""

    @abstractmethod
    def prune(self, older_than: timedelta) -> int:
        """Forget jobs finished (done or failed) more than `older_than` ago; how many."""

    @abstractmethod
    def get(self, job_id: str) -> Job | None:
        """The job with this id in whatever state it is, or None if there is none."""

    @abstractmethod
    def listing(self) -> list[JobListing]:
        """Every job, newest first (then by id), without its payload and result."""

    def devices(self) -> int | None:
        """How many devices serve the queue now, fleet-wide; None where only the caller's own
        do (one host: the caller knows them)."""
        return None

    def maintenance(self) -> list[Maintenance]:
        """What must run on a clock for the queue to keep its promises (none, on one host)."""
        return []

    def close(self) -> None:  # noqa: B027 - a hook: most queues open nothing of their own
        """Close what the queue opened itself (its caller's engine stays open)."""
